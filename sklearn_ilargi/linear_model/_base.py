"""Pieces the linear models share: centering, weights, solvers, prediction.

Every solver here sees the training matrix only through a
:class:`~sklearn_ilargi.utils.TrainingMatrix`: ``X @ W``, ``X.T @ R``, the (weighted) gram and
the column sums. ``X`` is a NormalizedMatrix on the factorized path and an ndarray or
scipy.sparse matrix on the materialized one; either may live on the GPU. Centering
(``fit_intercept``) is the training matrix's offset ``X - 1 mu^T``, a rank-one correction of
each product, so no centered copy of ``X`` is built.
"""

import numbers
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse.linalg
from sklearn.base import RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import assert_all_finite, check_is_fitted

from ..utils._sklearn_compat import Interval, StrOptions, _check_sample_weight

from .._config import get_config
from ..base import reads_fitted_model
from ..utils import TrainingMatrix, one_blas_thread, validate_input
from ..utils._validation import check_lazy_target, lazy_numeric_target
from ..utils._moments import centered_moments

ACCEPT_SPARSE = ("csr", "csc", "coo")

#: The parameter constraints that the linear models share (scikit-learn's format).
SHARED_CONSTRAINTS = {
    "fit_intercept": ["boolean"],
    "tol": [Interval(numbers.Real, 0, None, closed="left")],
    "learning_rate": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="neither")],
    "verbose": ["verbose"],
    "strategy": [StrOptions({"auto", "factorized", "materialized"})],
    "backend": [StrOptions({"auto", "cpu", "gpu"})],
}


# ---------------------------------------------------------------------- validation
def check_fit_input(estimator, X, y, sample_weight, *, classifier=False, lazy_y=False):
    """Validate ``X``, ``y`` and ``sample_weight`` for ``fit``; weights default to ones (a
    read-only view). With ``lazy_y``, a regressor's Dask ``y`` for a PartitionedMatrix stays
    a Dask array, checked where its blocks live (``utils._validation.check_lazy_target``)."""
    if classifier:
        X, y = validate_input(estimator, X, y, accept_sparse=ACCEPT_SPARSE)
    elif lazy_y and lazy_numeric_target(X, y):
        X = validate_input(estimator, X)
        y = check_lazy_target(y, X.shape[0])
    else:
        X, y = validate_input(estimator, X, y, accept_sparse=ACCEPT_SPARSE, y_numeric=True,
                              multi_output=True)
        y = np.asarray(y, dtype=np.float64)
        # An object y holding None passes scikit-learn's check as an object, and is NaN now.
        assert_all_finite(y, input_name="y")
    if sample_weight is None:
        # Ones, as a read-only view of a single one: a fit over many rows (partitioned
        # ones, say) holds no array of weights that all equal 1.
        return X, y, np.broadcast_to(np.float64(1.0), (X.shape[0],))
    # Checked against a host placeholder of X's length: the weights are a numpy array
    # whatever X is (a NormalizedMatrix, or an array under array_api_dispatch), and the
    # products move them where X lives.
    sample_weight = _check_sample_weight(sample_weight, np.empty((X.shape[0], 0)),
                                         dtype=np.float64, ensure_non_negative=True)
    return X, y, sample_weight


def linear_predict(estimator, X):
    """``X @ coef_.T + intercept_``, factorized when ``X`` is a NormalizedMatrix."""
    check_is_fitted(estimator)
    X = validate_input(estimator, X, reset=False, accept_sparse=ACCEPT_SPARSE)
    # A selection of rows (a held-out fold, X[test]) multiplies only the rows it reads.
    matrix = TrainingMatrix(X).compacted()
    # lazy: the predictions of a PartitionedMatrix stay a Dask array of its rows.
    return matrix.matmul(estimator.coef_.T, lazy=True) + estimator.intercept_


# ---------------------------------------------------------------------- least squares
def weighted_means(matrix, y, sample_weight, fit_intercept):
    """Weighted column means of ``X`` and ``y`` (zeros without an intercept)."""
    if not fit_intercept:
        return np.zeros(matrix.shape[1]), np.zeros(y.shape[1:])
    total = sample_weight.sum()
    return matrix.column_sums(_unless_unit(sample_weight)) / total, sample_weight @ y / total


def _unless_unit(sample_weight):
    """None for unit weights, with which the unweighted gram and sums skip a pass."""
    return None if (sample_weight == 1).all() else sample_weight


def solve_normal_equations(gram_centered, rhs, alpha, constant=None, rcond=0.0,
                           penalty=None):
    """``(G + alpha P)^{-1} B``, or the minimum-norm solution of ``G x = B`` where
    ``alpha == 0``; ``P`` is diagonal, the identity by default.

    Parameters
    ----------
    gram_centered : ndarray of shape (c, c)
        ``G = Xc.T W Xc``, symmetric positive semi-definite.
    rhs : ndarray of shape (c, t)
    alpha : ndarray of shape (t,)
        Penalty per target; ``0`` means ordinary least squares.
    constant : ndarray of bool of shape (c,), callable or None, default=None
        The columns that hold one value in every row: their coefficients are 0 (see
        :func:`minimum_norm_solve`). None for none. A callable returns that mask (or None),
        and is called only where a solve needs it (the Cholesky solve of a penalized system
        does not): finding those columns reads all of ``X``.
    rcond : float, default=0.0
        Without penalty, singular values of ``sqrt(W) Xc`` below ``rcond`` times the largest
        count as zero (``cond`` of ``scipy.linalg.lstsq``).
    penalty : ndarray of shape (c,), default=None
        The diagonal of ``P``: the penalty's weight on each coefficient (all 1 when None).

    Returns
    -------
    coef : ndarray of shape (c, t)
    rank : int
        Rank used for the targets without penalty (``c`` when all have one).
    """
    # A small system gains nothing from BLAS's threads, which lose much where the other
    # cores are busy.
    with one_blas_thread(gram_centered.size < get_config()["one_thread_cells"]):
        return _solve_normal_equations(gram_centered, rhs, alpha, constant, rcond, penalty)


def _solve_normal_equations(gram_centered, rhs, alpha, constant, rcond, penalty):
    out = np.empty_like(rhs)
    rank = gram_centered.shape[0]
    mask = constant if callable(constant) else lambda: constant
    penalty = np.ones(rank) if penalty is None else penalty
    for value in np.unique(alpha[alpha > 0]):
        targets = alpha == value
        penalized = gram_centered + np.diag(value * penalty)
        try:
            out[:, targets] = scipy.linalg.solve(penalized, rhs[:, targets], assume_a="pos")
        except np.linalg.LinAlgError:
            out[:, targets], _ = minimum_norm_solve(penalized, rhs[:, targets], mask())
    unpenalized = alpha == 0
    if unpenalized.any():
        out[:, unpenalized], rank = minimum_norm_solve(
            gram_centered, rhs[:, unpenalized], mask(), rcond)
    return out, rank


def minimum_norm_solve(gram, rhs, constant=None, rcond=0.0):
    """The minimum-norm ``x`` with ``G x = B``: what ``lstsq`` gives on the data itself.

    ``G``'s eigenvalues are the squared singular values of the data, so ``lstsq``'s rule
    "singular values below ``rcond`` times the largest are zero" becomes eigenvalues below
    ``rcond**2`` times the largest; below ``c * eps`` times the largest they are rounding
    error whatever ``rcond``. The ``constant`` columns (a boolean mask, or None) are left
    out (coefficient 0): centered, a column of one value holds nothing but the rounding of
    its mean.

    Returns
    -------
    x : ndarray of shape (c, t)
    rank : int
    """
    n_columns = gram.shape[0]
    eps = np.finfo(np.float64).eps
    threshold = max(rcond ** 2, max(n_columns, 1) * eps)
    if constant is not None and constant.any():
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
    and the eigendecomposition, many times the work of a Cholesky factor, is not needed.
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


def least_squares_closed_form(matrix, y, sample_weight, alpha, fit_intercept, rcond=0.0):
    """Exact (ridge) least squares from the weighted gram of the centered data.

    With ``fit_intercept``, ``X`` is centered before the gram squares it
    (:meth:`~sklearn_ilargi.utils.TrainingMatrix.centered`: a NormalizedMatrix's dense sources
    and a dense array themselves, a sparse matrix by rank-one terms, as scikit-learn centers
    each), and so is ``y``: a column of 1e7 +- 1 keeps its digits, where the algebraic
    ``X.T X - n mu mu^T`` would keep none. A column of one value gets coefficient 0.
    ``rcond`` is the relative singular-value cutoff of the unpenalized targets (see
    :func:`minimum_norm_solve`).

    Where the normal equations overflow (values beyond about ``1e154``, whose squares pass
    float64's range), they are formed again with every column of ``X`` and of ``y`` divided by
    a power of two within a factor 2 of its largest magnitude: an exact rescaling, whose
    solution (with the penalty rescaled to match) gives the same coefficients once scaled
    back, as ``scipy.linalg.lstsq`` finds them without squaring.

    Returns
    -------
    coef : ndarray of shape (c, t)
    x_mean : ndarray of shape (c,)
    y_mean : ndarray of shape (t,)
    rank : int
    """
    # A selection of rows (the training fold of a search) reads only its rows' sources.
    matrix = matrix.compacted()
    weights = _unless_unit(sample_weight)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught below
        moments = centered_moments(matrix, y, weights, center=fit_intercept)
    solution = _normal_equations(moments, alpha, rcond)
    if solution is not None:
        return solution
    x_scale = _power_of_two(matrix.column_magnitudes())
    y_scale = _power_of_two(np.asarray(abs(y).max(axis=0)))  # y may be a Dask array
    scaled = matrix.scale_columns(1.0 / x_scale)
    # Scaling keeps which columns are constant: found once, and only if a solve asks.
    with np.errstate(over="ignore", invalid="ignore"):
        rescaled = centered_moments(scaled, y / y_scale, weights,
                                    center=fit_intercept)._replace(constant=moments.constant)
    solution = _normal_equations(rescaled, alpha, rcond, penalty=(1.0 / x_scale) ** 2)
    if solution is None:
        raise ValueError("The least-squares problem overflows float64 even with the columns "
                         "of X and y scaled to magnitudes near 1.")
    coef, x_mean, y_mean, rank = solution
    return (coef * (y_scale[None, :] / x_scale[:, None]), x_mean * x_scale, y_mean * y_scale,
            rank)


def _normal_equations(moments, alpha, rcond, penalty=None):
    """What :func:`least_squares_closed_form` returns from the data's ``moments``
    (:func:`~sklearn_ilargi.utils._moments.centered_moments`), or None where they are not
    finite (they overflowed)."""
    x_mean, y_mean, gram, rhs, constant = moments
    if not all(np.isfinite(a).all() for a in (x_mean, y_mean, gram, rhs)):
        return None
    coef, rank = solve_normal_equations(gram, rhs, alpha, constant, rcond, penalty)
    return coef, x_mean, y_mean, rank


def centered_normal_equations(matrix, y, sample_weight, x_mean, y_mean, fit_intercept):
    """The normal equations of weighted least squares on data centered by its means.

    ``X`` is centered before the gram squares it (:meth:`TrainingMatrix.centered`), so a
    column whose mean is large against its spread keeps its digits; without an intercept
    nothing is centered.

    Returns
    -------
    centered : TrainingMatrix
        ``X - 1 x_mean^T`` (``matrix`` itself without an intercept).
    gram : ndarray of shape (c, c)
        ``Xc.T W Xc``, symmetric.
    rhs : ndarray of shape (c, t)
        ``Xc.T W (y - y_mean)``.
    """
    centered = matrix.centered(x_mean) if fit_intercept else matrix
    gram = centered.gram(_unless_unit(sample_weight))
    gram = (gram + gram.T) / 2
    # The same for every candidate of a search over one fold: kept by the cache setting.
    rhs = centered.reused_rmatmul(sample_weight[:, None] * (y - y_mean))
    return centered, gram, rhs


def _power_of_two(magnitude):
    """Per entry a power of two in ``(magnitude / 2, magnitude]`` (1 where it is 0): dividing
    by it changes no digit."""
    _, exponent = np.frexp(magnitude)
    return np.where(magnitude > 0, np.ldexp(1.0, exponent - 1), 1.0)


def least_squares_gd(matrix, y, sample_weight, alpha, fit_intercept, *, learning_rate,
                     max_iter, tol, coef_init=None, progress=None):
    """Batch gradient descent on ``(||sqrt(w) (Xc B - yc)||^2 + alpha ||B||^2) / (2 sum w)``.

    ``progress`` (an :class:`~sklearn_ilargi.utils._progress.IterationProgress`) is told of
    every iteration; see :func:`gradient_descent` for the stopping rules.

    Returns
    -------
    coef, x_mean, y_mean, n_iter
    """
    x_mean, y_mean = weighted_means(matrix, y, sample_weight, fit_intercept)
    centered = TrainingMatrix(matrix.X, x_mean if fit_intercept else None)
    total = sample_weight.sum()
    residual_target = y - y_mean

    def gradient(coef):
        residual = centered.matmul(coef) - residual_target
        return (centered.rmatmul(sample_weight[:, None] * residual) + alpha * coef) / total

    if learning_rate == "auto":
        curvature = top_eigenvalue(centered, sample_weight) / total + alpha.max() / total
        learning_rate = 1.0 / max(curvature, np.finfo(np.float64).tiny)
    coef = np.zeros((matrix.shape[1], y.shape[1])) if coef_init is None else coef_init
    coef, n_iter = gradient_descent(gradient, coef, learning_rate, max_iter, tol, progress)
    return coef, x_mean, y_mean, n_iter


def top_eigenvalue(matrix, sample_weight, *, extra_column=False, seed=0):
    """Largest eigenvalue of ``A.T diag(w) A``, for ``A`` the TrainingMatrix ``matrix``
    (with a column of ones appended where ``extra_column``): the curvature behind the step
    size of gradient descent.

    Where the gram is cheap (no offset, at most ``closed_form_max_columns`` columns), from
    the weighted gram and ``scipy.linalg.eigh``; otherwise by Lanczos
    (``scipy.sparse.linalg.eigsh``) over the products ``A @ v`` and ``A.T @ r``, which never
    form the gram: wide one-hot dimensions, and a centered matrix, whose gram would lose the
    digits of a column with a large mean. Both are exact to rounding error (ARPACK runs to
    machine precision); the Lanczos value never exceeds the true one, and gradient descent is
    stable for steps up to twice the inverse of the true one.

    Parameters
    ----------
    matrix : TrainingMatrix
    sample_weight : ndarray of shape (n_samples,)
    extra_column : bool, default=False
        Whether ``A`` has a column of ones (the intercept) after those of ``matrix``.
    seed : int, default=0
        Seeds the start vector of Lanczos, so that a fit is repeatable.

    Returns
    -------
    float
    """
    n_columns = matrix.shape[1] + int(extra_column)
    if n_columns == 0:
        return 0.0
    if matrix.offset is None and n_columns <= get_config()["closed_form_max_columns"]:
        return _largest_eigenvalue(_bordered_gram(matrix, sample_weight, extra_column))
    operator = _weighted_normal_operator(matrix, sample_weight, extra_column)
    if n_columns < 2:  # ARPACK needs more columns than eigenvalues; 1 x 1 is one product
        return _largest_eigenvalue(operator.matmat(np.eye(n_columns)))
    # Lanczos starts in the operator's range, from a random vector: where that image is
    # zero, the operator is (almost surely) zero, which ARPACK refuses to start from.
    random = np.random.default_rng(seed).standard_normal(n_columns)
    start = operator.matvec(random)
    if not start.any():
        return 0.0
    try:
        (value,) = scipy.sparse.linalg.eigsh(operator, k=1, which="LA", v0=start,
                                             return_eigenvectors=False)
    except scipy.sparse.linalg.ArpackError as error:
        if not str(error).startswith("ARPACK error -9:"):  # "Starting vector is zero"
            raise
        # The image is rounding error (every column constant, once centered, say): ARPACK
        # takes it for zero. ||M r|| / ||r|| does not exceed the largest eigenvalue.
        return float(np.linalg.norm(start) / np.linalg.norm(random))
    return float(value)


def _largest_eigenvalue(symmetric):
    """The largest eigenvalue of a symmetric matrix, alone (LAPACK computes no other)."""
    last = symmetric.shape[0] - 1
    return float(scipy.linalg.eigh(symmetric, eigvals_only=True,
                                   subset_by_index=[last, last])[0])


def _bordered_gram(matrix, sample_weight, extra_column):
    """``A.T diag(w) A`` for ``A = X`` or ``[X, 1]``: the gram bordered by the column sums."""
    weights = _unless_unit(sample_weight)
    gram = matrix.gram(weights)
    if not extra_column:
        return gram
    sums = matrix.column_sums(weights)[:, None]
    return np.block([[gram, sums], [sums.T, np.array([[sample_weight.sum()]])]])


def _weighted_normal_operator(matrix, sample_weight, extra_column):
    """``v -> A.T diag(w) A v`` as a LinearOperator, through the products of ``matrix``."""
    n_features = matrix.shape[1]

    def apply(vector):
        vector = np.ravel(vector)
        image = matrix.matmul(vector[:n_features])
        if extra_column:
            image = image + vector[-1]
        image = sample_weight * image
        out = matrix.rmatmul(image)
        return np.append(out, image.sum()) if extra_column else out

    n_columns = n_features + int(extra_column)
    return scipy.sparse.linalg.LinearOperator((n_columns, n_columns), matvec=apply,
                                              dtype=np.float64)


def gradient_descent(gradient, coef, learning_rate, max_iter, tol, progress=None):
    """``coef -= learning_rate * gradient(coef)`` until ``|g| <= tol * |g_0|``.

    On the convex, ``L``-smooth objectives of the linear models, a step of at most ``2 / L``
    never lets the gradient's norm grow. A norm above the initial one, or a gradient that is
    not finite, therefore means the step is too large and the descent diverges: it stops
    there, warns with :class:`~sklearn.exceptions.ConvergenceWarning`, and returns the
    iterate with the smallest gradient seen, so that the coefficients are always finite.

    Parameters
    ----------
    gradient : callable
        ``gradient(coef)``, an array of ``coef``'s shape.
    coef : ndarray
        The start.
    learning_rate : float
    max_iter : int
    tol : float
    progress : IterationProgress, optional
        Told of every iteration, with the gradient's norm.

    Returns
    -------
    coef, n_iter
    """
    grad = gradient(coef)
    initial = norm = float(np.linalg.norm(grad))
    best, best_norm = coef, norm
    diverged = not np.isfinite(initial)
    n_iter = 0
    while not diverged and n_iter < max_iter and norm > tol * initial:
        coef = coef - learning_rate * grad
        grad = gradient(coef)
        norm = float(np.linalg.norm(grad))
        n_iter += 1
        if progress is not None:
            progress(gradient_norm=norm)
        diverged = not norm <= initial  # also where the norm is NaN
        if norm < best_norm:
            best, best_norm = coef, norm
    if diverged:
        warnings.warn(
            f"Gradient descent diverged at iteration {n_iter}: the gradient's norm grew from "
            f"{initial:.3g} to {norm:.3g}, so the step (learning_rate={learning_rate:.3g}) is "
            "too large. Stopped there and kept the coefficients with the smallest gradient "
            "seen; lower learning_rate, or use learning_rate='auto'.",
            ConvergenceWarning,
        )
        return best, n_iter
    if initial > 0 and norm > tol * initial:
        warnings.warn(
            f"Gradient descent did not converge within max_iter={max_iter} iterations; "
            "increase max_iter or learning_rate.",
            ConvergenceWarning,
        )
    return coef, n_iter


class LeastSquaresRegressorMixin:
    """``predict``, ``score`` and the tags that the least-squares regressors share."""

    @reads_fitted_model
    def predict(self, X):
        """Predict with the fitted linear model.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            The samples; a NormalizedMatrix is multiplied over its sources.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_targets)
            ``X @ coef_.T + intercept_``.
        """
        return linear_predict(self, X)

    # scikit-learn's score calls predict, which must then give host results.
    score = reads_fitted_model(RegressorMixin.score)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        return tags


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
