"""Factorized rewrites of the linear algebra over a normalized matrix's blocks.

Written once against the backend primitives; each function takes the blocks, the rank-one
``shift`` (``T = sum_b G_b S_b P_b^T + 1 shift^T``) and the backend, and never builds ``T``
except in :func:`materialize`.
"""

from ._centering import centered, centered_gram, column_sums_of_squares
from ._products import (
    column_extremes,
    column_sums,
    cross_product,
    gram,
    group_sums,
    materialize,
    matmul,
    rmatmul,
    row_sums,
    row_sums_of_squares,
)
from ._sliced import (
    argmin_of_matrix_product,
    argmin_of_product,
    matrix_product_slices,
    product_slices,
)

__all__ = [
    "argmin_of_matrix_product",
    "argmin_of_product",
    "centered",
    "centered_gram",
    "column_extremes",
    "column_sums",
    "column_sums_of_squares",
    "cross_product",
    "gram",
    "group_sums",
    "materialize",
    "matmul",
    "matrix_product_slices",
    "product_slices",
    "rmatmul",
    "row_sums",
    "row_sums_of_squares",
]
