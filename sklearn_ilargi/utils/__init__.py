"""Helpers shared by the estimators: input validation and the training matrix on any input."""

from ._threads import one_blas_thread
from ._training_matrix import TrainingMatrix
from ._validation import check_y, is_normalized, validate_input

__all__ = [
    "TrainingMatrix",
    "check_y",
    "is_normalized",
    "one_blas_thread",
    "validate_input",
]
