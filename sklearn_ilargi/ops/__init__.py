"""Factorized rewrites of the linear algebra over a normalized matrix's blocks.

Written once against the backend primitives; each function takes the blocks, the rank-one
``shift`` (``T = sum_b G_b S_b P_b^T + 1 shift^T``) and the backend, and never builds ``T``
except in :func:`materialize`.
"""

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

__all__ = [
    "column_extremes",
    "column_sums",
    "cross_product",
    "gram",
    "group_sums",
    "materialize",
    "matmul",
    "rmatmul",
    "row_sums",
    "row_sums_of_squares",
]
