"""The few products that training needs, for a NormalizedMatrix or a plain matrix alike.

Estimators call these instead of ``@`` so that one solver serves the factorized path (a
NormalizedMatrix), the materialized path (an ndarray or a scipy.sparse matrix) and either device.
"""

import numpy as np
import scipy.sparse as sp

from ._validation import is_normalized


def _dense(a):
    return a.toarray() if sp.issparse(a) else a


def matmul(X, W):
    """``X @ W`` as a dense array."""
    return X @ W if is_normalized(X) else _dense(X @ W)


def rmatmul(X, R):
    """``X.T @ R`` as a dense array."""
    return X.T @ R if is_normalized(X) else _dense(X.T @ R)


def gram(X, sample_weight=None):
    """``X.T @ diag(sample_weight) @ X`` as a dense array."""
    if is_normalized(X):
        return X.gram(sample_weight)
    weighted = X if sample_weight is None else _scale_rows(X, sample_weight)
    return _dense(X.T @ weighted)


def column_sums(X, sample_weight=None):
    """``X.T @ sample_weight`` (plain column sums without weights)."""
    if is_normalized(X):
        return X.sum(axis=0) if sample_weight is None else X.T @ sample_weight
    if sample_weight is None:
        return np.asarray(X.sum(axis=0)).ravel()
    return np.asarray(X.T @ sample_weight).ravel()


def row_norms_squared(X):
    """Squared Euclidean norm of each row."""
    if is_normalized(X):
        return X.row_norms(squared=True)
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


def _scale_rows(X, weights):
    if sp.issparse(X):
        return sp.csr_matrix(X.multiply(np.asarray(weights)[:, None]))
    return X * weights[:, None]
