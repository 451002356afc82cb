"""The few products that training needs, for a NormalizedMatrix or a plain matrix alike.

Estimators call these instead of ``@`` so that one solver serves the factorized path (a
NormalizedMatrix), the materialized path (a dense or sparse matrix) and either device: plain
matrices go through the primitives of the backend their arrays belong to.
"""

from ..backend import backend_of
from ..normalized._row_map import RowMap
from ._validation import is_normalized


def matmul(X, W):
    """``X @ W`` as a dense array."""
    return X @ W if is_normalized(X) else backend_of(X).dot(X, W)


def rmatmul(X, R):
    """``X.T @ R`` as a dense array."""
    return X.T @ R if is_normalized(X) else backend_of(X).dot(X.T, R)


def group_sums(X, labels, n_groups, sample_weight=None):
    """``X.T @ R`` for ``R`` the (weighted) one-hot of ``labels``, as a dense array."""
    if is_normalized(X):
        return X.group_sums(labels, n_groups, sample_weight)
    be = backend_of(X)
    one_hot = be.group_counts(RowMap.identity(X.shape[0]), labels, n_groups, sample_weight,
                              X.dtype)
    return be.dot(X.T, one_hot)


def gram(X, sample_weight=None):
    """``X.T @ diag(sample_weight) @ X`` as a dense array."""
    if is_normalized(X):
        return X.gram(sample_weight)
    return backend_of(X).weighted_gram(X, sample_weight)


def column_sums(X, sample_weight=None):
    """``X.T @ sample_weight`` (plain column sums without weights)."""
    if is_normalized(X):
        return X.sum(axis=0) if sample_weight is None else X.T @ sample_weight
    return backend_of(X).column_sums(X, sample_weight)


def row_norms_squared(X):
    """Squared Euclidean norm of each row."""
    if is_normalized(X):
        return X.row_norms(squared=True)
    return backend_of(X).row_sums_of_squares(X)
