"""Pieces the linear models share: products with centering, weights, solvers, prediction.

Every solver here sees the training matrix only through :class:`Products`: ``X @ W``,
``X.T @ R``, the (weighted) gram and the column sums. ``X`` is a NormalizedMatrix on the
factorized path and an ndarray or scipy.sparse matrix on the materialized one; either may live
on the GPU. Centering (``fit_intercept``) is the rank-one correction ``X - 1 mu^T``, applied to
each product algebraically, so it never builds a centered copy of ``X``.
"""

import warnings

import numpy as np
import scipy.linalg
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ..utils._sklearn_compat import _check_sample_weight

from ..backend import backend_of
from ..base import to_host
from ..cost import OperationProfile
from ..utils import column_sums, gram, is_normalized, matmul, rmatmul, validate_input

ACCEPT_SPARSE = ("csr", "csc", "coo")


class Products:
    """``X`` minus an optional row offset ``mu`` (``X - 1 mu^T``), seen only through products.

    Parameters
    ----------
    X : NormalizedMatrix, ndarray or sparse matrix
        On the CPU or the GPU; results always come back as numpy arrays.
    offset : ndarray of shape (n_features,) or None
    """

    def __init__(self, X, offset=None):
        self.X = X
        self.offset = offset
        self.shape = X.shape
        self._backend = X.backend if is_normalized(X) else backend_of(X)

    def _device(self, a):
        return a if self._backend.name == "cpu" else self._backend.from_numpy(a)

    def matmul(self, W):
        """``(X - 1 mu^T) @ W``."""
        out = np.asarray(to_host(matmul(self.X, self._device(W))), dtype=np.float64)
        if self.offset is not None:
            out = out - self.offset @ W
        return out

    def rmatmul(self, R):
        """``(X - 1 mu^T).T @ R``."""
        out = np.asarray(to_host(rmatmul(self.X, self._device(R))), dtype=np.float64)
        if self.offset is not None:
            out = out - np.multiply.outer(self.offset, R.sum(axis=0))
        return out

    def _weights(self, sample_weight):
        """None for unit weights (the unweighted products skip a pass), else on the device."""
        if sample_weight is None or (sample_weight == 1).all():
            return None
        return self._device(sample_weight)

    def column_sums(self, sample_weight):
        """``X.T @ sample_weight`` of the uncentered ``X``."""
        return np.asarray(to_host(column_sums(self.X, self._weights(sample_weight))),
                          dtype=np.float64)

    def gram(self, sample_weight):
        """``X.T @ diag(sample_weight) @ X`` of the uncentered ``X``."""
        return np.asarray(to_host(gram(self.X, self._weights(sample_weight))),
                          dtype=np.float64)


# ---------------------------------------------------------------------- validation
def check_fit_input(estimator, X, y, sample_weight, *, classifier=False):
    """Validate ``X``, ``y`` and ``sample_weight`` for ``fit``; weights default to ones."""
    if classifier:
        X, y = validate_input(estimator, X, y, accept_sparse=ACCEPT_SPARSE)
    else:
        X, y = validate_input(estimator, X, y, accept_sparse=ACCEPT_SPARSE, y_numeric=True,
                              multi_output=True)
        y = np.asarray(y, dtype=np.float64)
    sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                         ensure_non_negative=True)
    return X, y, sample_weight


def linear_predict(estimator, X):
    """``X @ coef_.T + intercept_``, factorized when ``X`` is a NormalizedMatrix."""
    check_is_fitted(estimator)
    X = validate_input(estimator, X, reset=False, accept_sparse=ACCEPT_SPARSE)
    return np.asarray(to_host(matmul(X, estimator.coef_.T))) + estimator.intercept_


# ---------------------------------------------------------------------- least squares
def weighted_means(products, y, sample_weight, fit_intercept):
    """Weighted column means of ``X`` and ``y`` (zeros without an intercept)."""
    if not fit_intercept:
        return np.zeros(products.shape[1]), np.zeros(y.shape[1:])
    total = sample_weight.sum()
    return products.column_sums(sample_weight) / total, sample_weight @ y / total


def solve_normal_equations(gram_centered, rhs, alpha, gram_raw_diagonal, rcond=0.0):
    """``(G + alpha I)^{-1} B``, or the minimum-norm solution of ``G x = B`` where
    ``alpha == 0``.

    Parameters
    ----------
    gram_centered : ndarray of shape (c, c)
        ``G = Xc.T W Xc``, symmetric positive semi-definite.
    rhs : ndarray of shape (c, t)
    alpha : ndarray of shape (t,)
        Penalty per target; ``0`` means ordinary least squares.
    gram_raw_diagonal : ndarray of shape (c,)
        Diagonal of the gram before centering: the scale of the rounding error in ``G``.
    rcond : float, default=0.0
        Without penalty, singular values of ``sqrt(W) Xc`` below ``rcond`` times the largest
        count as zero (``cond`` of ``scipy.linalg.lstsq``).

    Returns
    -------
    coef : ndarray of shape (c, t)
    rank : int
        Rank used for the targets without penalty (``c`` when all have one).
    """
    out = np.empty_like(rhs)
    rank = gram_centered.shape[0]
    identity = np.eye(gram_centered.shape[0])
    for value in np.unique(alpha[alpha > 0]):
        targets = alpha == value
        try:
            out[:, targets] = scipy.linalg.solve(
                gram_centered + value * identity, rhs[:, targets], assume_a="pos")
        except np.linalg.LinAlgError:
            out[:, targets], _ = minimum_norm_solve(
                gram_centered + value * identity, rhs[:, targets], gram_raw_diagonal + value)
    unpenalized = alpha == 0
    if unpenalized.any():
        out[:, unpenalized], rank = minimum_norm_solve(
            gram_centered, rhs[:, unpenalized], gram_raw_diagonal, rcond)
    return out, rank


def minimum_norm_solve(gram, rhs, gram_raw_diagonal, rcond=0.0):
    """The minimum-norm ``x`` with ``G x = B``: what ``lstsq`` gives on the data itself.

    ``G``'s eigenvalues are the squared singular values of the data, so ``lstsq``'s rule
    "singular values below ``rcond`` times the largest are zero" becomes eigenvalues below
    ``rcond**2`` times the largest; below ``c * eps`` times the largest they are rounding
    error whatever ``rcond``. A column whose centered energy is within rounding error of its
    raw energy is constant, and left out (coefficient 0).

    Returns
    -------
    x : ndarray of shape (c, t)
    rank : int
    """
    n_columns = gram.shape[0]
    eps = np.finfo(np.float64).eps
    diagonal = np.diag(gram)
    constant = diagonal <= 100 * max(n_columns, 1) * eps * np.maximum(gram_raw_diagonal, 0)
    threshold = max(rcond ** 2, max(n_columns, 1) * eps)
    if constant.any():
        gram = gram.copy()
        gram[constant, :] = 0
        gram[:, constant] = 0
    elif n_columns:
        solution = _well_conditioned_solve(gram, rhs, threshold)
        if solution is not None:
            return solution, n_columns
    eigenvalues, vectors = scipy.linalg.eigh(gram)
    largest = max(eigenvalues[-1] if n_columns else 0.0, 0.0)
    keep = eigenvalues > threshold * largest
    keep &= eigenvalues > 0
    kept = vectors[:, keep]
    solution = kept @ ((kept.T @ rhs) / eigenvalues[keep][:, None])
    return solution, int(np.count_nonzero(keep))


CONDITION_MARGIN = 1e3
"""How far inside the rank cutoff the estimated condition must be for the Cholesky path (the
LAPACK estimate of the 1-norm condition is within a small factor of the true one)."""


def _well_conditioned_solve(gram, rhs, threshold):
    """``G^{-1} B`` by Cholesky where ``G`` is clearly of full rank, else None.

    Full rank means every eigenvalue above ``threshold`` times the largest; the 1-norm
    condition bounds the eigenvalue ratio within a factor ``c``. Then the solution is unique
    and the eigendecomposition (20-40x slower at 98 columns in our profiling) is not needed.
    """
    try:
        factor = scipy.linalg.cho_factor(gram)
    except np.linalg.LinAlgError:
        return None
    pocon = scipy.linalg.lapack.get_lapack_funcs("pocon", (gram,))
    rcond, info = pocon(factor[0], np.abs(gram).sum(axis=0).max(),
                        uplo="L" if factor[1] else "U")
    if info != 0 or rcond < max(CONDITION_MARGIN * gram.shape[0] * threshold, 1e-8):
        return None
    return scipy.linalg.cho_solve(factor, rhs)


def least_squares_closed_form(products, y, sample_weight, alpha, fit_intercept, rcond=0.0):
    """Exact (ridge) least squares from the weighted gram, centered algebraically.

    ``rcond`` is the relative singular-value cutoff of the unpenalized targets (see
    :func:`minimum_norm_solve`).

    Returns
    -------
    coef : ndarray of shape (c, t)
    x_mean : ndarray of shape (c,)
    y_mean : ndarray of shape (t,)
    rank : int
    """
    x_mean, y_mean = weighted_means(products, y, sample_weight, fit_intercept)
    total = sample_weight.sum()
    gram_raw = products.gram(sample_weight)
    gram_centered = gram_raw - total * np.multiply.outer(x_mean, x_mean)
    gram_centered = (gram_centered + gram_centered.T) / 2
    rhs = products.rmatmul(sample_weight[:, None] * y)
    rhs -= total * np.multiply.outer(x_mean, y_mean)
    coef, rank = solve_normal_equations(gram_centered, rhs, alpha, np.diag(gram_raw).copy(),
                                        rcond)
    return coef, x_mean, y_mean, rank


def least_squares_gd(products, y, sample_weight, alpha, fit_intercept, *, learning_rate,
                     max_iter, tol, coef_init=None):
    """Batch gradient descent on ``(||sqrt(w) (Xc B - yc)||^2 + alpha ||B||^2) / (2 sum w)``.

    Returns
    -------
    coef, x_mean, y_mean, n_iter
    """
    x_mean, y_mean = weighted_means(products, y, sample_weight, fit_intercept)
    centered = Products(products.X, x_mean if fit_intercept else None)
    total = sample_weight.sum()
    residual_target = y - y_mean

    def gradient(coef):
        residual = centered.matmul(coef) - residual_target
        return (centered.rmatmul(sample_weight[:, None] * residual) + alpha * coef) / total

    if learning_rate == "auto":
        curvature = top_eigenvalue(centered, sample_weight) / total + alpha.max() / total
        learning_rate = 1.0 / max(curvature, np.finfo(np.float64).tiny)
    coef = np.zeros((products.shape[1], y.shape[1])) if coef_init is None else coef_init
    coef, n_iter = gradient_descent(gradient, coef, learning_rate, max_iter, tol)
    return coef, x_mean, y_mean, n_iter


def top_eigenvalue(products, sample_weight, *, extra_column=False, n_steps=30, seed=0):
    """Largest eigenvalue of ``A.T diag(w) A`` by power iteration (``A`` = X, plus ones).

    Over-estimated by 10% so that a step of ``1 / value`` is safe for gradient descent.
    """
    n_columns = products.shape[1] + int(extra_column)
    vector = np.random.default_rng(seed).standard_normal(n_columns)
    value = 0.0
    for _ in range(n_steps):
        norm = np.linalg.norm(vector)
        if norm == 0:
            break
        vector = vector / norm
        image = products.matmul(vector[: products.shape[1]])
        if extra_column:
            image = image + vector[-1]
        image = sample_weight * image
        new = products.rmatmul(image[:, None])[:, 0]
        if extra_column:
            new = np.append(new, image.sum())
        value = float(vector @ new)
        vector = new
    return 1.1 * value


def gradient_descent(gradient, coef, learning_rate, max_iter, tol):
    """``coef -= learning_rate * gradient(coef)`` until ``|g| <= tol * |g_0|``.

    Returns
    -------
    coef, n_iter
    """
    grad = gradient(coef)
    initial = np.linalg.norm(grad)
    n_iter = 0
    while n_iter < max_iter and np.linalg.norm(grad) > tol * initial:
        coef = coef - learning_rate * grad
        grad = gradient(coef)
        n_iter += 1
    if initial > 0 and np.linalg.norm(grad) > tol * initial:
        warnings.warn(
            f"Gradient descent did not converge within max_iter={max_iter} iterations; "
            "increase max_iter or learning_rate.",
            ConvergenceWarning,
        )
    return coef, n_iter


def check_learning_rate(learning_rate):
    if isinstance(learning_rate, str):
        if learning_rate != "auto":
            raise ValueError(f"learning_rate must be 'auto' or a positive float, got "
                             f"{learning_rate!r}.")
        return learning_rate
    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be 'auto' or a positive float, got "
                         f"{learning_rate!r}.")
    return float(learning_rate)


class LeastSquaresRegressorMixin:
    """``predict`` and the tags that the least-squares regressors share."""

    def predict(self, X):
        """Predict with the fitted linear model.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_targets)
        """
        return linear_predict(self, X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        return tags


def fit_least_squares(estimator, X, y2, sample_weight, alpha, *, gd, max_iter, rcond=0.0):
    """The body of a least-squares ``fit`` after validation: dispatch, solve, set ``coef_``.

    Closed form from the gram, or gradient descent when ``gd``.

    Returns
    -------
    coef, x_mean, y_mean : ndarray
        As :func:`least_squares_closed_form` returns them.
    n_iter : int
    rank : int or None
        The rank of the (centered) gram for the closed form, None for gradient descent.
    """
    name = type(estimator).__name__
    if gd:
        learning_rate = check_learning_rate(estimator.learning_rate)
        profile = OperationProfile(matmul=max_iter + 30, rmatmul=max_iter + 31,
                                   width=y2.shape[1], iterations=max_iter, name=name)
        products = Products(estimator._dispatch(X, profile))
        coef, x_mean, y_mean, n_iter = least_squares_gd(
            products, y2, sample_weight, alpha, estimator.fit_intercept,
            learning_rate=learning_rate, max_iter=max_iter, tol=estimator.tol,
        )
        rank = None
    else:
        profile = OperationProfile(gram=1, rmatmul=2, width=y2.shape[1], name=name)
        products = Products(estimator._dispatch(X, profile))
        coef, x_mean, y_mean, rank = least_squares_closed_form(
            products, y2, sample_weight, alpha, estimator.fit_intercept, rcond=rcond
        )
        n_iter = 1
    return coef, x_mean, y_mean, n_iter, rank


def set_linear_attributes(estimator, coef, x_mean, y_mean, fit_intercept, y_ndim):
    """``coef_`` and ``intercept_`` in scikit-learn's shapes for 1-D or 2-D targets."""
    coef = coef.T  # (t, c)
    intercept = y_mean - coef @ x_mean if fit_intercept else np.zeros(coef.shape[0])
    if y_ndim == 1:
        estimator.coef_ = coef[0]
        estimator.intercept_ = float(intercept[0]) if fit_intercept else 0.0
    else:
        estimator.coef_ = coef
        estimator.intercept_ = intercept
