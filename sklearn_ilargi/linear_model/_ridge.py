"""Least squares with an L2 penalty over a NormalizedMatrix: FactorizedRidge."""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from ..base import FactorizedMixin, falls_back_to_cpu
from ..utils._sklearn_compat import Interval, StrOptions, _fit_context
from ._base import (
    SHARED_CONSTRAINTS,
    LeastSquaresRegressorMixin,
    check_fit_input,
    set_linear_attributes,
)
from ._least_squares import fit_least_squares


class FactorizedRidge(
    LeastSquaresRegressorMixin, FactorizedMixin, RegressorMixin, BaseEstimator
):
    """Ridge regression, trained on the sources of a NormalizedMatrix.

    The counterpart of :class:`sklearn.linear_model.Ridge`: it minimizes
    ``||sqrt(sample_weight) * (y - X @ coef - intercept)||^2 + alpha * ||coef||^2``. The
    default solver is exact where ``X`` is narrow: a Cholesky solve of the ``c x c`` system
    ``G + alpha I`` where ``G`` is the factorized, centered gram. Where ``X`` is too wide for
    a dense gram (one-hot dimensions of many ids), conjugate gradients over the products
    ``X @ v`` and ``X.T @ r`` solve it instead, as scikit-learn's ``Ridge`` does on sparse
    input. Plain numpy or scipy.sparse input takes the ordinary path.

    Parameters
    ----------
    alpha : float or array-like of shape (n_targets,), default=1.0
        L2 penalty, non-negative; one per target when ``y`` has several columns. ``0`` gives
        the minimum-norm least-squares solution.
    fit_intercept : bool, default=True
        Whether to fit an (unpenalized) intercept, through centering, which stays factorized.
    max_iter : int, default=None
        Most iterations of ``solver="gd"`` (1000 when None), and of each target's
        ``"lsqr"`` and ``"sparse_cg"`` solve (scipy's defaults when None, as scikit-learn's).
    tol : float, default=1e-4
        ``solver="lsqr"``: its ``atol`` and ``btol``; ``"sparse_cg"``: the relative
        tolerance of conjugate gradients (both as scikit-learn's). ``solver="gd"``: stop once
        the gradient's norm falls below ``tol`` times its initial norm.
    solver : {"auto", "cholesky", "lsqr", "sparse_cg", "gd"}, default="auto"
        ``"cholesky"``: exact, from the dense gram.
        ``"lsqr"``: :func:`scipy.sparse.linalg.lsqr` with ``damp = sqrt(alpha)`` over the
        products ``X @ v`` and ``X.T @ r`` of the centered (and weighted) ``X``.
        ``"sparse_cg"``: conjugate gradients over the same products, on the normal equations
        (or, where ``X`` has more columns than rows, on the kernel system), as
        scikit-learn's. Neither forms the gram; each target is one solve.
        ``"auto"``: ``"cholesky"`` where ``X`` has at most ``closed_form_max_columns``
        columns (a setting) and the gram fits in memory, else ``"sparse_cg"``
        (scikit-learn's choice for sparse input).
        ``"gd"``: batch gradient descent through ``X @ w`` and ``X.T @ r``.
    learning_rate : "auto" or float, default="auto"
        Step size of ``solver="gd"``; ``"auto"`` is ``1 / L`` with ``L`` the curvature,
        the largest eigenvalue of the weighted gram (see
        :func:`~sklearn_ilargi.linear_model._base.top_eigenvalue`). A step so large that the
        gradient grows stops the descent with a ``ConvergenceWarning`` (see
        :func:`~sklearn_ilargi.linear_model._base.gradient_descent`).
    verbose : int, default=0
        The iterative solvers: report every iteration with an estimate of the time left (through
        tqdm where it is installed). 0 defers to the ``verbose`` setting.
    strategy : {"auto", "factorized", "materialized"}, default="auto"
        Whether to train on the sources or on the joined matrix; "auto" lets the
        dispatcher choose.
    backend : {"auto", "cpu", "gpu"}, default="auto"
        Where the products run.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
        Coefficients of the features, one row per target for a 2-D ``y``.
    intercept_ : float or ndarray of shape (n_targets,)
        The intercept; 0 with ``fit_intercept=False``.
    n_iter_ : ndarray of shape (n_targets,)
        Iterations of each target's solve with the iterative solvers; 1 for the closed
        form (one direct solve).
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined when ``X`` has feature names (``NormalizedMatrix.feature_names`` or a
        DataFrame's columns).
    decision_ : sklearn_ilargi.cost.Decision
        The dispatcher's verdict for the fit, with its reasons (``decision_.explain()``).
    strategy_ : {"factorized", "materialized"}
        The path the fit took.
    backend_ : {"cpu", "gpu"}
        Where the fit ran.

    See Also
    --------
    FactorizedLinearRegression : Without the penalty.
    sklearn.linear_model.Ridge : The scikit-learn counterpart.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import FactorizedRidge, NormalizedMatrix
    >>> fact = np.array([[1.0], [2.0], [3.0], [4.0]])
    >>> dim = np.array([[0.0], [1.0]])
    >>> X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(4), [0, 1, 1, 0]])
    >>> y = np.array([1.0, 2.0, 4.0, 4.0])
    >>> model = FactorizedRidge(alpha=0.5, strategy="factorized").fit(X, y)
    >>> model.coef_.round(4)
    array([1.    , 0.3333])
    >>> model.predict(X).round(2)
    array([1.08, 2.42, 3.42, 4.08])
    """

    _parameter_constraints: dict = {
        **SHARED_CONSTRAINTS,
        "alpha": [Interval(numbers.Real, 0, None, closed="left"), "array-like"],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "solver": [StrOptions({"auto", "cholesky", "lsqr", "sparse_cg", "gd"})],
    }

    def __init__(self, alpha=1.0, *, fit_intercept=True, max_iter=None, tol=1e-4,
                 solver="auto", learning_rate="auto", verbose=0, strategy="auto",
                 backend="auto"):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.learning_rate = learning_rate
        self.verbose = verbose
        self.strategy = strategy
        self.backend = backend

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the ridge model.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Training data; a NormalizedMatrix is trained on without joining it (unless the
            dispatcher chooses to).
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Target values.
        sample_weight : float or array-like of shape (n_samples,), default=None
            Weight of each sample (one float for all); None weighs every sample 1.

        Returns
        -------
        self : FactorizedRidge
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight)

    @falls_back_to_cpu
    def _fit(self, X, y, sample_weight, *, backend):
        X, y, sample_weight = check_fit_input(self, X, y, sample_weight, lazy_y=True)
        y2 = y.reshape(len(y), -1)
        alpha = _check_alpha(self.alpha, y2.shape[1])
        solvers = ("cholesky", "sparse_cg") if self.solver == "auto" else (self.solver,)
        coef, x_mean, y_mean, self.n_iter_, _ = fit_least_squares(
            self, X, y2, sample_weight, alpha, solvers=solvers, max_iter=self.max_iter,
            backend=backend,
        )
        set_linear_attributes(self, coef, x_mean, y_mean, self.fit_intercept, y.ndim)
        return self


def _check_alpha(alpha, n_targets):
    """``alpha`` as one non-negative value per target (the parameter constraints check a
    single value; this checks an array's length and entries)."""
    if isinstance(alpha, numbers.Real) and not isinstance(alpha, bool):
        values = np.full(n_targets, float(alpha))
    else:
        values = np.asarray(alpha, dtype=np.float64).reshape(-1)
        if values.size == 1:
            values = np.full(n_targets, values[0])
        elif values.size != n_targets:
            raise ValueError(
                f"Number of targets and number of penalties do not correspond: "
                f"{n_targets} != {values.size}"
            )
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError(f"alpha must be non-negative and finite, got {alpha!r}.")
    return values
