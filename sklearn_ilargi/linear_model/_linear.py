"""Ordinary least squares over a NormalizedMatrix: FactorizedLinearRegression."""

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from ..base import FactorizedMixin, falls_back_to_cpu
from ._base import (
    LeastSquaresRegressorMixin,
    check_fit_input,
    fit_least_squares,
    set_linear_attributes,
)


class FactorizedLinearRegression(
    LeastSquaresRegressorMixin, FactorizedMixin, RegressorMixin, BaseEstimator
):
    """Ordinary least squares, trained on the sources of a NormalizedMatrix.

    The counterpart of :class:`sklearn.linear_model.LinearRegression`: it minimizes
    ``||sqrt(sample_weight) * (y - X @ coef - intercept)||^2``. The closed form solves the
    small ``c x c`` normal equations built from the factorized gram, centered algebraically
    for the intercept; where ``X`` is rank deficient it returns the minimum-norm solution, like
    ``scipy.linalg.lstsq``. Plain numpy or scipy.sparse input takes the ordinary path.

    Parameters
    ----------
    fit_intercept : bool, default=True
        Whether to fit an intercept (through centering, which stays factorized).
    tol : float, default=1e-6
        Closed form: singular values of the centered ``X`` below ``tol`` times the largest
        count as zero, as scikit-learn's ``LinearRegression`` does (it passes ``tol`` to
        ``scipy.linalg.lstsq`` as ``cond``). ``solver="gd"``: stop once the gradient's norm
        falls below ``tol`` times its initial norm.
    solver : {"auto", "lstsq", "gd"}, default="auto"
        ``"lstsq"`` (and ``"auto"``): exact minimum-norm least squares from the gram.
        ``"gd"``: batch gradient descent through ``X @ w`` and ``X.T @ r``.
    learning_rate : "auto" or float, default="auto"
        Step size of ``solver="gd"``; ``"auto"`` is ``1 / L`` with ``L`` the curvature,
        estimated by power iteration.
    max_iter : int, default=1000
        Most iterations of ``solver="gd"``.
    strategy : {"auto", "factorized", "materialized"}, default="auto"
        Whether to train on the sources or on the joined matrix; "auto" lets the
        dispatcher choose.
    backend : {"auto", "cpu", "gpu"}, default="auto"
        Where the products run.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
    intercept_ : float or ndarray of shape (n_targets,)
    rank_ : int
        Rank of the (centered) training matrix; only with the closed form.
    n_iter_ : int
        Iterations of ``solver="gd"``; 1 for the closed form (one direct solve).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when ``X`` has feature names (``NormalizedMatrix.feature_names`` or a
        DataFrame's columns).
    decision_ : sklearn_ilargi.cost.Decision
    strategy_ : {"factorized", "materialized"}
    backend_ : {"cpu", "gpu"}

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

    def __init__(self, *, fit_intercept=True, tol=1e-6, solver="auto", learning_rate="auto",
                 max_iter=1000, strategy="auto", backend="auto"):
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.solver = solver
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.strategy = strategy
        self.backend = backend

    @falls_back_to_cpu
    def fit(self, X, y, sample_weight=None):
        """Fit the linear model.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : FactorizedLinearRegression
        """
        if self.solver not in ("auto", "lstsq", "gd"):
            raise ValueError(f"solver must be 'auto', 'lstsq' or 'gd', got {self.solver!r}.")
        X, y, sample_weight = check_fit_input(self, X, y, sample_weight)
        y2 = y.reshape(len(y), -1)
        coef, x_mean, y_mean, self.n_iter_, self.rank_ = fit_least_squares(
            self, X, y2, sample_weight, np.zeros(y2.shape[1]), gd=self.solver == "gd",
            max_iter=self.max_iter, rcond=self.tol,
        )
        set_linear_attributes(self, coef, x_mean, y_mean, self.fit_intercept, y.ndim)
        return self
