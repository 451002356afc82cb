"""Ordinary least squares over a NormalizedMatrix: FactorizedLinearRegression."""

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


class FactorizedLinearRegression(
    LeastSquaresRegressorMixin, FactorizedMixin, RegressorMixin, BaseEstimator
):
    """Ordinary least squares, trained on the sources of a NormalizedMatrix.

    The counterpart of :class:`sklearn.linear_model.LinearRegression`: it minimizes
    ``||sqrt(sample_weight) * (y - X @ coef - intercept)||^2``. The closed form solves the
    ``c x c`` normal equations built from the factorized gram; where ``X`` is rank deficient
    it returns the minimum-norm solution, like ``scipy.linalg.lstsq``. Where ``X`` is too wide
    for a dense gram (one-hot dimensions of many ids), LSQR over the products ``X @ v`` and
    ``X.T @ r`` solves it instead, as scikit-learn's ``LinearRegression`` does on sparse
    input. Plain numpy or scipy.sparse input takes the ordinary path.

    Parameters
    ----------
    fit_intercept : bool, default=True
        Whether to fit an intercept (through centering, which stays factorized).
    tol : float, default=1e-6
        Closed form: singular values of the centered ``X`` below ``tol`` times the largest
        count as zero, as scikit-learn's ``LinearRegression`` does (it passes ``tol`` to
        ``scipy.linalg.lstsq`` as ``cond``). ``solver="lsqr"``: its ``atol`` and ``btol``, as
        scikit-learn's on sparse input. ``solver="gd"``: stop once the gradient's norm falls
        below ``tol`` times its initial norm.
    solver : {"auto", "lstsq", "lsqr", "gd"}, default="auto"
        ``"lstsq"``: exact minimum-norm least squares from the dense gram.
        ``"lsqr"``: :func:`scipy.sparse.linalg.lsqr` over the products ``X @ v`` and
        ``X.T @ r`` of the centered (and weighted) ``X``, one solve per target, which never
        forms the gram; started at 0, it converges to the minimum-norm solution.
        ``"auto"``: ``"lstsq"`` where ``X`` has at most ``closed_form_max_columns`` columns (a
        setting) and the gram fits in memory, else ``"lsqr"``.
        ``"gd"``: batch gradient descent through ``X @ w`` and ``X.T @ r``.
    learning_rate : "auto" or float, default="auto"
        Step size of ``solver="gd"``; ``"auto"`` is ``1 / L`` with ``L`` the curvature,
        the largest eigenvalue of the weighted gram (see
        :func:`~sklearn_ilargi.linear_model._base.top_eigenvalue`). A step so large that the
        gradient grows stops the descent with a ``ConvergenceWarning`` (see
        :func:`~sklearn_ilargi.linear_model._base.gradient_descent`).
    max_iter : int, default=None
        Most iterations of ``solver="gd"`` (1000 when None) and of each target's
        ``solver="lsqr"`` (scipy's ``2 * n_features`` when None, as scikit-learn's).
    verbose : int, default=0
        ``solver="gd"`` and ``"lsqr"``: report every iteration with an estimate of the time left (through
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
    rank_ : int or None
        Rank of the (centered) training matrix with the closed form; None with the
        iterative solvers.
    n_iter_ : int
        Iterations of the iterative solver (the most over the targets for
        ``solver="lsqr"``); 1 for the closed form (one direct solve).
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
    FactorizedRidge : Least squares with an L2 penalty.
    sklearn.linear_model.LinearRegression : The scikit-learn counterpart.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import FactorizedLinearRegression, NormalizedMatrix
    >>> fact = np.array([[1.0], [2.0], [3.0], [4.0]])
    >>> dim = np.array([[0.0], [1.0]])
    >>> X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(4), [0, 1, 1, 0]])
    >>> y = 2 * X.materialize()[:, 0] - X.materialize()[:, 1] + 1
    >>> model = FactorizedLinearRegression(strategy="factorized").fit(X, y)
    >>> model.coef_.round(6), round(model.intercept_, 6)
    (array([ 2., -1.]), 1.0)
    >>> model.strategy_
    'factorized'
    """

    _parameter_constraints: dict = {
        **SHARED_CONSTRAINTS,
        "solver": [StrOptions({"auto", "lstsq", "lsqr", "gd"})],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left"), None],
    }

    def __init__(self, *, fit_intercept=True, tol=1e-6, solver="auto", learning_rate="auto",
                 max_iter=None, verbose=0, strategy="auto", backend="auto"):
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.solver = solver
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.verbose = verbose
        self.strategy = strategy
        self.backend = backend

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the linear model.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Training data; a NormalizedMatrix is trained on without joining it (unless the
            dispatcher chooses to).
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Target values.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each sample; None weighs every sample 1.

        Returns
        -------
        self : FactorizedLinearRegression
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight)

    @falls_back_to_cpu
    def _fit(self, X, y, sample_weight, *, backend):
        X, y, sample_weight = check_fit_input(self, X, y, sample_weight, lazy_y=True)
        y2 = y.reshape(len(y), -1)
        solvers = ("lstsq", "lsqr") if self.solver == "auto" else (self.solver,)
        coef, x_mean, y_mean, n_iter, self.rank_ = fit_least_squares(
            self, X, y2, sample_weight, np.zeros(y2.shape[1]), solvers=solvers,
            max_iter=self.max_iter, rcond=self.tol, backend=backend,
        )
        self.n_iter_ = int(n_iter.max())
        set_linear_attributes(self, coef, x_mean, y_mean, self.fit_intercept, y.ndim)
        return self
