"""Helpers shared by the estimators: input validation and linear algebra on any input."""

from ._linalg import column_sums, gram, group_sums, matmul, rmatmul, row_norms_squared
from ._threads import one_blas_thread
from ._validation import check_y, is_normalized, validate_input

__all__ = [
    "check_y",
    "column_sums",
    "gram",
    "group_sums",
    "is_normalized",
    "matmul",
    "one_blas_thread",
    "rmatmul",
    "row_norms_squared",
    "validate_input",
]
