"""L2-penalized logistic regression over a NormalizedMatrix: FactorizedLogisticRegression."""

import numbers
import warnings

import numpy as np
import scipy.optimize
from scipy.special import expit, log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets

from .._config import get_config
from ..base import FactorizedMixin, falls_back_to_cpu, reads_fitted_model
from ..cost import OperationProfile, expected_iterations
from ..utils import TrainingMatrix, one_blas_thread
from ..utils._progress import IterationProgress
from ..utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    _openmp_effective_n_threads,
)
from ._base import (
    SHARED_CONSTRAINTS,
    check_fit_input,
    gradient_descent,
    linear_predict,
)
from ._linear_loss import LogisticLoss

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
        Stopping tolerance. ``"lbfgs"``: stop once the largest gradient entry is below
        ``tol`` (scipy's ``gtol``). ``"gd"``: stop once the gradient's norm falls below
        ``tol`` times its initial norm.
    max_iter : int, default=100
        Most iterations of the solver.
    solver : {"lbfgs", "gd"}, default="lbfgs"
        ``"lbfgs"``: scipy's L-BFGS-B. ``"gd"``: batch gradient descent.
    learning_rate : "auto" or float, default="auto"
        Step size of ``solver="gd"``; ``"auto"`` is the inverse of an upper bound of the
        curvature, from the largest eigenvalue of the weighted gram of ``[X, 1]`` (see
        :func:`~sklearn_ilargi.linear_model._base.top_eigenvalue`). A step so large that the
        gradient grows stops the descent with a ``ConvergenceWarning`` (see
        :func:`~sklearn_ilargi.linear_model._base.gradient_descent`).
    verbose : int, default=0
        Report every iteration of the solver with an estimate of the time left (through
        tqdm where it is installed). 0 defers to the ``verbose`` setting.
    warm_start : bool, default=False
        Start from the previous fit's coefficients when their shape fits.
    strategy : {"auto", "factorized", "materialized"}, default="auto"
        Whether to train on the sources or on the joined matrix; "auto" lets the
        dispatcher choose.
    backend : {"auto", "cpu", "gpu"}, default="auto"
        Where the products run.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Coefficients of the features: one row for two classes, one per class beyond.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        The intercepts; zeros with ``fit_intercept=False``.
    n_iter_ : ndarray of shape (1,)
        Iterations of the solver.
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

    _parameter_constraints: dict = {
        **SHARED_CONSTRAINTS,
        "C": [Interval(numbers.Real, 0, None, closed="right")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "max_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "solver": [StrOptions({"lbfgs", "gd"})],
        "warm_start": ["boolean"],
    }

    def __init__(self, *, C=1.0, fit_intercept=True, class_weight=None, tol=1e-4,
                 max_iter=100, solver="lbfgs", learning_rate="auto", verbose=0,
                 warm_start=False, strategy="auto", backend="auto"):
        self.C = C
        self.fit_intercept = fit_intercept
        self.class_weight = class_weight
        self.tol = tol
        self.max_iter = max_iter
        self.solver = solver
        self.learning_rate = learning_rate
        self.verbose = verbose
        self.warm_start = warm_start
        self.strategy = strategy
        self.backend = backend

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Training data; a NormalizedMatrix is trained on without joining it (unless the
            dispatcher chooses to).
        y : array-like of shape (n_samples,)
            Class labels, at least two distinct ones.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each sample; None weighs every sample 1.

        Returns
        -------
        self : FactorizedLogisticRegression
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight)

    @falls_back_to_cpu
    def _fit(self, X, y, sample_weight, *, backend):
        X, y, sample_weight = check_fit_input(self, X, y, sample_weight, classifier=True)
        y_index, sample_weight = self._encode_classes(y, sample_weight)
        n_outputs = 1 if len(self.classes_) == 2 else len(self.classes_)
        iterations = expected_iterations(self.max_iter, self.tol)
        profile = OperationProfile(matmul=iterations, rmatmul=iterations, width=n_outputs,
                                   iterations=iterations, max_iter=self.max_iter,
                                   classes=len(self.classes_), name=type(self).__name__)
        matrix = TrainingMatrix(self._dispatch(X, profile, backend=backend))
        start = self._initial_coef((X.shape[1] + int(self.fit_intercept)) * n_outputs)
        coefs, n_iter = logistic_path(
            matrix, y_index, len(self.classes_), sample_weight, [self.C],
            fit_intercept=self.fit_intercept, max_iter=self.max_iter, tol=self.tol,
            solver=self.solver, learning_rate=self.learning_rate, start=start,
            verbose=self.verbose, description=type(self).__name__,
        )
        self.coef_, self.intercept_ = split_intercept(coefs[0], self.fit_intercept)
        self.n_iter_ = n_iter
        return self

    def _encode_classes(self, y, sample_weight):
        """Set ``classes_``; return each sample's class index, and ``sample_weight`` times the
        weight of its class (``class_weight``, from all of ``y``)."""
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
        return y_index, sample_weight

    def _initial_coef(self, n_parameters):
        start = np.zeros(n_parameters)
        if self.warm_start and hasattr(self, "coef_"):
            previous = self.coef_.T
            if self.fit_intercept:
                previous = np.vstack([previous, self.intercept_[None, :]])
            if previous.size == start.size:
                start = previous.ravel().copy()
        return start

    @reads_fitted_model
    def decision_function(self, X):
        """Confidence scores: the signed distance of each sample to the hyperplane.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            The samples; a NormalizedMatrix is multiplied over its sources.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            ``X @ coef_.T + intercept_``: one column for two classes (positive for
            ``classes_[1]``), one per class beyond.
        """
        scores = linear_predict(self, X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    @reads_fitted_model
    def predict(self, X):
        """Most likely class of each sample.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            The samples; a NormalizedMatrix is multiplied over its sources.

        Returns
        -------
        ndarray of shape (n_samples,)
            A label of ``classes_`` per sample.
        """
        scores = self.decision_function(X)
        index = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[index]

    @reads_fitted_model
    def predict_proba(self, X):
        """Probability of each class.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            The samples; a NormalizedMatrix is multiplied over its sources.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Each sample's probabilities, in the order of ``classes_``; rows sum to 1.
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            positive = expit(scores)
            # np.stack, not column_stack: Dask implements it, for the scores of a
            # PartitionedMatrix
            return np.stack([1 - positive, positive], axis=1)
        return softmax(scores, axis=1)

    @reads_fitted_model
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed without underflow.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            The samples; a NormalizedMatrix is multiplied over its sources.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Each sample's log-probabilities, in the order of ``classes_``.
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return np.stack([-np.logaddexp(0, scores), -np.logaddexp(0, -scores)], axis=1)
        return log_softmax(scores, axis=1)

    # scikit-learn's score calls predict, which must then give host results.
    score = reads_fitted_model(ClassifierMixin.score)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def logistic_path(matrix, y_index, n_classes, sample_weight, Cs, *, fit_intercept,
                  max_iter, tol, solver="lbfgs", learning_rate="auto", start=None, verbose=0,
                  description=""):
    """Fit the model for each C of ``Cs`` in turn, each fit started from the previous one's
    solution (the path of scikit-learn's ``_logistic_regression_path``).

    Parameters
    ----------
    matrix : TrainingMatrix
        ``X`` of shape (n_samples, n_features).
    y_index : ndarray of int of shape (n_samples,)
        Class indices in ``[0, n_classes)``.
    n_classes : int
    sample_weight : ndarray of shape (n_samples,)
    Cs : sequence of float
        Inverses of the penalty's strength, in the order of the path; ``numpy.inf`` for no
        penalty.
    fit_intercept : bool
    max_iter, tol, solver, learning_rate
        As :class:`FactorizedLogisticRegression` takes them, for each C.
    start : ndarray, default=None
        The first fit's start (the flat layout of
        :class:`~sklearn_ilargi.linear_model._linear_loss.LogisticLoss`); zeros when None.
    verbose : int, default=0
    description : str, default=""
        What the progress report calls the fit.

    Returns
    -------
    coefs : ndarray of shape (n_cs, n_features + fit_intercept, n_outputs)
        Each C's coefficients, the intercept in the last row; ``n_outputs`` is 1 for two
        classes and ``n_classes`` beyond.
    n_iter : ndarray of int32 of shape (n_cs,)
        Each C's iterations.
    """
    # The products run on one BLAS thread: they are matrix-vector products, bound by the
    # memory they read, and BLAS threads that wait for work after each one keep the cores
    # from the pointwise loss's OpenMP threads, which do the arithmetic. Below
    # ``parallel_loss_samples`` the loss runs on one thread too: each evaluation would pay
    # more for waking the others than they bring (``benchmarks/estimators.py`` times the fits).
    small = matrix.shape[0] < get_config()["parallel_loss_samples"]
    n_threads = 1 if small else _openmp_effective_n_threads()
    loss = LogisticLoss(matrix, y_index, n_classes, sample_weight, fit_intercept, 0.0,
                        n_threads=n_threads)
    flat = np.zeros(loss.n_parameters) if start is None else np.ravel(start)
    coefs, n_iter = [], []
    progress = IterationProgress(verbose, max_iter * len(Cs), description)
    with one_blas_thread(), progress:
        for C in Cs:
            loss.l2_reg_strength = 0.0 if np.isinf(C) else 1.0 / (C * loss.weight_sum)
            if solver == "gd":
                rate = 1.0 / loss.curvature() if learning_rate == "auto" else learning_rate
                flat, iterations = gradient_descent(loss.gradient, flat, rate, max_iter, tol,
                                                    progress)
            else:
                flat, iterations = _lbfgs(loss, flat, max_iter, tol, progress)
            coefs.append(flat.reshape(-1, loss.n_outputs))
            n_iter.append(iterations)
    return np.stack(coefs), np.array(n_iter, dtype=np.int32)


def split_intercept(coef, fit_intercept):
    """``coef_`` of shape (n_outputs, n_features) and ``intercept_`` of shape (n_outputs,)
    from one C's coefficients of :func:`logistic_path` (zeros without an intercept)."""
    if not fit_intercept:
        return np.ascontiguousarray(coef.T), np.zeros(coef.shape[1])
    return np.ascontiguousarray(coef[:-1].T), np.array(coef[-1], dtype=np.float64)


def _lbfgs(loss, start, max_iter, tol, progress):
    """L-BFGS-B with scikit-learn's settings; (solution, iterations).

    ``progress`` (an :class:`~sklearn_ilargi.utils._progress.IterationProgress`) is told of
    every iteration, with the objective.
    """
    result = scipy.optimize.minimize(
        loss.loss_gradient, start, method="L-BFGS-B", jac=True,
        options={"maxiter": max_iter, "maxls": 50, "gtol": tol,
                 "ftol": 64 * np.finfo(float).eps},
        callback=lambda intermediate_result: progress(loss=intermediate_result.fun),
    )
    n_iter = min(result.nit, max_iter)
    if result.status != 0:
        warnings.warn(
            f"lbfgs failed to converge after {n_iter} iteration(s) (status={result.status}): "
            f"{result.message}. Increase max_iter or scale the data.",
            ConvergenceWarning,
        )
    return result.x, n_iter
