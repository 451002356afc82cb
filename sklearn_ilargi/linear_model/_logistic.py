"""L2-penalized logistic regression over a NormalizedMatrix: FactorizedLogisticRegression."""

import warnings

import numpy as np
import scipy.optimize
from scipy.special import expit, log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets

from ..base import FactorizedMixin, falls_back_to_cpu
from ..cost import OperationProfile
from ..utils import one_blas_thread
from ._base import (
    Products,
    check_fit_input,
    check_learning_rate,
    gradient_descent,
    linear_predict,
)
from ._linear_loss import LogisticLoss

ONE_THREAD_CELLS = 1 << 22
"""Solve on one BLAS thread when ``X`` has fewer cells (32 MiB of float64). The solver
alternates matrix-vector products with its own small steps; with two BLAS threads, each
product paid for waking the other thread: L-BFGS over a 3,598 x 135 join took 185-290 ms on
two threads and 15-21 ms on one, and two threads were no faster up to 40 million cells."""


class FactorizedLogisticRegression(FactorizedMixin, ClassifierMixin, BaseEstimator):
    """Logistic regression (binomial or multinomial, L2 penalty), trained on the sources.

    The counterpart of :class:`sklearn.linear_model.LogisticRegression` with the lbfgs
    solver: it minimizes the same objective, ``C * sum_i w_i loss_i + ||coef||^2 / 2``
    (scaled by ``1 / sum_i w_i``), with the half binomial loss for two classes and the
    multinomial loss beyond. Loss and gradient need only ``X @ W`` and ``X.T @ R``, which run
    over the sources of a NormalizedMatrix. Plain numpy or scipy.sparse input takes the
    ordinary path.

    Parameters
    ----------
    C : float, default=1.0
        Inverse of the L2 penalty's strength; ``numpy.inf`` for no penalty.
    fit_intercept : bool, default=True
        Whether to fit an (unpenalized) intercept.
    class_weight : dict, "balanced" or None, default=None
        Weights per class, multiplied into ``sample_weight``.
    tol : float, default=1e-4
        lbfgs: stop once the largest gradient entry is below ``tol`` (scipy's ``gtol``).
        gd: stop once the gradient's norm falls below ``tol`` times its initial norm.
    max_iter : int, default=100
        Most iterations of the solver.
    solver : {"lbfgs", "gd"}, default="lbfgs"
        ``"lbfgs"``: scipy's L-BFGS-B. ``"gd"``: batch gradient descent.
    learning_rate : "auto" or float, default="auto"
        Step size of ``solver="gd"``; ``"auto"`` is the inverse of an upper bound of the
        curvature, from power iteration.
    warm_start : bool, default=False
        Start from the previous fit's coefficients when their shape fits.
    strategy : {"auto", "factorized", "materialized"}, default="auto"
    backend : {"auto", "cpu", "gpu"}, default="auto"

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_iter_ : ndarray of shape (1,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
    decision_ : sklearn_ilargi.cost.Decision
    strategy_ : {"factorized", "materialized"}
    backend_ : {"cpu", "gpu"}

    See Also
    --------
    sklearn.linear_model.LogisticRegression : The scikit-learn counterpart.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import FactorizedLogisticRegression, NormalizedMatrix
    >>> fact = np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]])
    >>> dim = np.array([[1.0], [-1.0]])
    >>> X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(6), [0, 1, 0, 1, 0, 1]])
    >>> y = np.array([0, 0, 0, 1, 1, 1])
    >>> model = FactorizedLogisticRegression(strategy="factorized").fit(X, y)
    >>> model.predict(X)
    array([0, 0, 0, 1, 1, 1])
    >>> model.predict_proba(X).shape
    (6, 2)
    """

    def __init__(self, *, C=1.0, fit_intercept=True, class_weight=None, tol=1e-4,
                 max_iter=100, solver="lbfgs", learning_rate="auto", warm_start=False,
                 strategy="auto", backend="auto"):
        self.C = C
        self.fit_intercept = fit_intercept
        self.class_weight = class_weight
        self.tol = tol
        self.max_iter = max_iter
        self.solver = solver
        self.learning_rate = learning_rate
        self.warm_start = warm_start
        self.strategy = strategy
        self.backend = backend

    @falls_back_to_cpu
    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : FactorizedLogisticRegression
        """
        self._check_params()
        X, y, sample_weight = check_fit_input(self, X, y, sample_weight, classifier=True)
        check_classification_targets(y)
        classes, y_index = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(
                "This solver needs samples of at least 2 classes in the data, but the data "
                f"contains only one class: {classes[0]!r}"
            )
        if self.class_weight is not None:
            weights = compute_class_weight(self.class_weight, classes=classes, y=y,
                                           sample_weight=sample_weight)
            sample_weight = sample_weight * weights[y_index]
        self.classes_ = classes
        n_outputs = 1 if len(classes) == 2 else len(classes)
        profile = OperationProfile(matmul=self.max_iter, rmatmul=self.max_iter,
                                   width=n_outputs, iterations=self.max_iter,
                                   classes=len(classes), name=type(self).__name__)
        products = Products(self._dispatch(X, profile))
        l2 = 0.0 if np.isinf(self.C) else 1.0 / (self.C * sample_weight.sum())
        loss = LogisticLoss(products, y_index, len(classes), sample_weight,
                            self.fit_intercept, l2)
        start = self._initial_coef(loss)
        with one_blas_thread(X.shape[0] * X.shape[1] < ONE_THREAD_CELLS):
            if self.solver == "gd":
                learning_rate = check_learning_rate(self.learning_rate)
                if learning_rate == "auto":
                    learning_rate = 1.0 / loss.curvature()
                flat, n_iter = gradient_descent(loss.gradient, start, learning_rate,
                                                self.max_iter, self.tol)
            else:
                flat, n_iter = _lbfgs(loss, start, self.max_iter, self.tol)
        coef, intercept = loss.unpack(flat)
        self.coef_ = np.ascontiguousarray(coef.T)
        self.intercept_ = np.array(intercept, dtype=np.float64)
        self.n_iter_ = np.array([n_iter], dtype=np.int32)
        return self

    def _check_params(self):
        if self.solver not in ("lbfgs", "gd"):
            raise ValueError(f"solver must be 'lbfgs' or 'gd', got {self.solver!r}.")
        if not self.C > 0:
            raise ValueError(f"C must be positive, got {self.C!r}.")
        if not self.max_iter >= 0:
            raise ValueError(f"max_iter must be non-negative, got {self.max_iter!r}.")

    def _initial_coef(self, loss):
        start = np.zeros(loss.n_parameters)
        if self.warm_start and hasattr(self, "coef_"):
            previous = self.coef_.T
            if self.fit_intercept:
                previous = np.vstack([previous, self.intercept_[None, :]])
            if previous.size == start.size:
                start = previous.ravel().copy()
        return start

    def decision_function(self, X):
        """Signed distance to the hyperplane: shape (n_samples,) for two classes, else
        (n_samples, n_classes).

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray
        """
        scores = linear_predict(self, X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Most likely class of each sample.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        index = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[index]

    def predict_proba(self, X):
        """Probability of each class.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            positive = expit(scores)
            return np.column_stack([1 - positive, positive])
        return softmax(scores, axis=1)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed without underflow.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return np.column_stack([-np.logaddexp(0, scores), -np.logaddexp(0, -scores)])
        return log_softmax(scores, axis=1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _lbfgs(loss, start, max_iter, tol):
    """L-BFGS-B with scikit-learn's settings; (solution, iterations)."""
    result = scipy.optimize.minimize(
        loss.loss_gradient, start, method="L-BFGS-B", jac=True,
        options={"maxiter": max_iter, "maxls": 50, "gtol": tol,
                 "ftol": 64 * np.finfo(float).eps},
    )
    n_iter = min(result.nit, max_iter)
    if result.status != 0:
        warnings.warn(
            f"lbfgs failed to converge after {n_iter} iteration(s) (status={result.status}): "
            f"{result.message}. Increase max_iter or scale the data.",
            ConvergenceWarning,
        )
    return result.x, n_iter
