"""Logistic regression with its C chosen by cross-validation: FactorizedLogisticRegressionCV."""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import get_scorer, get_scorer_names
from sklearn.model_selection import check_cv

from ..base import falls_back_to_cpu, reads_fitted_model
from ..cost import OperationProfile, expected_iterations
from ..utils import TrainingMatrix
from ..utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    scorer_knowing_labels,
)
from ._base import SHARED_CONSTRAINTS, check_fit_input
from ._logistic import FactorizedLogisticRegression, logistic_path, split_intercept


class FactorizedLogisticRegressionCV(FactorizedLogisticRegression):
    """Logistic regression (L2 penalty) with the penalty's inverse ``C`` chosen by
    cross-validation, trained on the sources.

    The counterpart of :class:`sklearn.linear_model.LogisticRegressionCV` with the lbfgs
    solver and an L2 penalty (or none: ``numpy.inf`` in ``Cs``). For each fold, the model is
    fitted on the fold's training rows for every C of ``Cs`` in turn, each fit started from
    the previous one's solution, and scored on the held-out rows with ``scoring``. The C of
    the best total score over the folds is then fitted on all rows, started from the mean of
    the folds' coefficients at that C (``refit=True``); or the folds' best coefficients are
    averaged (``refit=False``). The folds' training rows of a NormalizedMatrix are a
    selection of its rows over the same sources (nothing is joined or copied), so every fit
    runs over the sources as :class:`FactorizedLogisticRegression` does. The dispatcher
    chooses the path once, for all the fits.

    Parameters
    ----------
    Cs : int or array-like of float, default=10
        The Cs to try, in this order; an int ``n`` tries ``n`` values spaced evenly on a log
        scale from ``1e-4`` to ``1e4``. Each must be positive; ``numpy.inf`` is no penalty.
    fit_intercept : bool, default=True
        Whether to fit an (unpenalized) intercept.
    cv : int, cross-validation generator or iterable, default=None
        The folds, as :func:`sklearn.model_selection.check_cv` takes them: None for 5,
        an int for that many stratified folds, a splitter, or ``(train, test)`` pairs.
    scoring : str, callable or None, default=None
        How a fold's held-out rows score a model (a scorer name or a callable
        ``scorer(estimator, X, y)``); None for accuracy. Scorers whose metric takes
        ``labels`` are told every class, as a fold may lack one. Also what :meth:`score`
        computes.
    tol : float, default=1e-4
        Stopping tolerance of every fit: the largest gradient entry (scipy's ``gtol``).
    max_iter : int, default=100
        Most iterations of every fit.
    class_weight : dict, "balanced" or None, default=None
        Weights per class, multiplied into ``sample_weight``; "balanced" is computed from
        all of ``y`` once, for every fold.
    verbose : int, default=0
        Report every iteration of every fit (through tqdm where it is installed). 0 defers
        to the ``verbose`` setting.
    refit : bool, default=True
        Whether to fit the best C on all rows; otherwise ``coef_``, ``intercept_`` and
        ``C_`` are the means of the folds' best.
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
    Cs_ : ndarray of shape (n_cs,)
        The Cs tried.
    C_ : ndarray of shape (1,) or (n_classes,)
        The chosen C (the mean of the folds' best with ``refit=False``), repeated per class
        beyond two classes.
    scores_ : dict of ndarray of shape (n_folds, n_cs)
        Each fold's score of each C, under each class label (the positive class alone for
        two classes); the same scores under every label.
    coefs_paths_ : dict of ndarray of shape (n_folds, n_cs, n_features + fit_intercept)
        Each fold's coefficients at each C, the intercept last, under each class label
        (the positive class alone for two classes).
    n_iter_ : ndarray of shape (1, n_folds, n_cs)
        Iterations of each fold's fit at each C.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined when ``X`` has feature names (``NormalizedMatrix.feature_names`` or a
        DataFrame's columns).
    decision_ : sklearn_ilargi.cost.Decision
        The dispatcher's verdict for the fit, with its reasons (``decision_.explain()``).
    strategy_ : {"factorized", "materialized"}
        The path the fits took.
    backend_ : {"cpu", "gpu"}
        Where the fits ran.

    See Also
    --------
    sklearn.linear_model.LogisticRegressionCV : The scikit-learn counterpart.
    FactorizedLogisticRegression : One C, without cross-validation.

    Notes
    -----
    The fitted attributes have the shapes of scikit-learn's with
    ``use_legacy_attributes=True`` (its default up to version 1.9). scikit-learn fits the
    folds in parallel (``n_jobs``); here they run one after the other, each over the
    shared sources.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import FactorizedLogisticRegressionCV, NormalizedMatrix
    >>> rng = np.random.default_rng(0)
    >>> fact = rng.standard_normal((60, 2))
    >>> dim = rng.standard_normal((5, 2))
    >>> X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(60), np.arange(60) % 5])
    >>> y = (fact[:, 0] + dim[np.arange(60) % 5, 0] > 0).astype(int)
    >>> model = FactorizedLogisticRegressionCV(Cs=[0.01, 1.0, 100.0], cv=3).fit(X, y)
    >>> model.Cs_
    array([1.e-02, 1.e+00, 1.e+02])
    >>> model.scores_[1].shape
    (3, 3)
    >>> model.predict(X).shape
    (60,)
    """

    _parameter_constraints: dict = {
        **{name: SHARED_CONSTRAINTS[name]
           for name in ("fit_intercept", "tol", "verbose", "strategy", "backend")},
        "Cs": [Interval(numbers.Integral, 1, None, closed="left"), "array-like"],
        "cv": ["cv_object"],
        "scoring": [StrOptions(set(get_scorer_names())), callable, None],
        "max_iter": [Interval(numbers.Integral, 0, None, closed="left")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "refit": ["boolean"],
    }

    def __init__(self, *, Cs=10, fit_intercept=True, cv=None, scoring=None, tol=1e-4,
                 max_iter=100, class_weight=None, verbose=0, refit=True, strategy="auto",
                 backend="auto"):
        self.Cs = Cs
        self.fit_intercept = fit_intercept
        self.cv = cv
        self.scoring = scoring
        self.tol = tol
        self.max_iter = max_iter
        self.class_weight = class_weight
        self.verbose = verbose
        self.refit = refit
        self.strategy = strategy
        self.backend = backend

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model for every C on every fold, then at the best C.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            Training data; a NormalizedMatrix is trained on without joining it (unless the
            dispatcher chooses to).
        y : array-like of shape (n_samples,)
            Class labels, at least two distinct ones.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each sample, in the fits and in the folds' scores; None weighs every
            sample 1.

        Returns
        -------
        self : FactorizedLogisticRegressionCV
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight)

    @falls_back_to_cpu
    def _fit(self, X, y, sample_weight, *, backend):
        weighted_scores = sample_weight is not None
        X, y, sample_weight = check_fit_input(self, X, y, sample_weight, classifier=True)
        if sp.issparse(X) and X.format == "coo":  # the folds select rows, which COO cannot
            X = X.tocsr()
        Cs = _check_Cs(self.Cs)
        y_index, weights = self._encode_classes(y, sample_weight)
        classes = self.classes_
        folds = list(check_cv(self.cv, y, classifier=True).split(X, y))
        n_outputs = 1 if len(classes) == 2 else len(classes)
        n_fits = len(folds) * len(Cs) + int(self.refit)
        iterations = expected_iterations(self.max_iter, self.tol) * n_fits
        # On a dense join, each fold's training rows are selected in a copy.
        profile = OperationProfile(matmul=iterations, rmatmul=iterations, width=n_outputs,
                                   iterations=iterations, max_iter=self.max_iter * n_fits,
                                   classes=len(classes), join_copies=1,
                                   name=type(self).__name__)
        matrix = TrainingMatrix(self._dispatch(X, profile, backend=backend))
        score_weight = sample_weight if weighted_scores else None
        paths, scores, n_iter = self._cross_validate(matrix, X, y, y_index, weights,
                                                     score_weight, Cs, folds)
        if self.refit:
            best = int(np.argmax(scores.sum(axis=0)))
            C = Cs[best]
            coef = self._path(matrix, y_index, weights, [C], start=paths[:, best].mean(axis=0),
                              description=f"{type(self).__name__} refit")[0][0]
        else:
            best = np.argmax(scores, axis=1)
            C = Cs[best].mean()
            coef = paths[np.arange(len(folds)), best].mean(axis=0)
        self.coef_, self.intercept_ = split_intercept(coef, self.fit_intercept)
        self.Cs_ = Cs
        self.C_ = np.full(n_outputs, C)
        # scikit-learn's layout: per class label (the positive one alone for two classes),
        # folds x Cs x the coefficients with the intercept last.
        labels = classes[1:] if n_outputs == 1 else classes
        self.coefs_paths_ = dict(zip(labels, np.moveaxis(paths, 3, 0)))
        self.scores_ = dict(zip(labels, np.tile(scores, (n_outputs, 1, 1))))
        self.n_iter_ = n_iter[None]
        return self

    def _cross_validate(self, matrix, X, y, y_index, weights, score_weight, Cs, folds):
        """Each fold's path along ``Cs`` on its training rows of ``matrix`` and the scores of
        the path on its held-out rows of ``X``.

        The held-out rows are taken from the validated input on the host (a NormalizedMatrix
        stays factorized), so that the scorer compares host predictions with ``y``; their
        ``score_weight`` (the given ``sample_weight``, or None) weighs the scores.

        Returns
        -------
        paths : ndarray of shape (n_folds, n_cs, n_features + fit_intercept, n_outputs)
        scores : ndarray of shape (n_folds, n_cs)
        n_iter : ndarray of int32 of shape (n_folds, n_cs)
        """
        scorer = scorer_knowing_labels(_scorer(self.scoring), self.classes_)
        paths, scores, n_iter = [], [], []
        for i, (train, test) in enumerate(folds):
            path, fold_iterations = self._path(
                matrix.select_rows(train), y_index[train], weights[train], Cs,
                description=f"{type(self).__name__} fold {i + 1}/{len(folds)}")
            held_out = TrainingMatrix(X).select_rows(test).X
            params = {} if score_weight is None else {"sample_weight": score_weight[test]}
            scores.append([scorer(self._model_at(coef), held_out, y[test], **params)
                           for coef in path])
            paths.append(path)
            n_iter.append(fold_iterations)
        return np.stack(paths), np.asarray(scores, dtype=np.float64), np.stack(n_iter)

    def _path(self, matrix, y_index, sample_weight, Cs, *, start=None, description):
        """The coefficients and iterations of :func:`logistic_path` along ``Cs``."""
        return logistic_path(matrix, y_index, len(self.classes_), sample_weight, Cs,
                             fit_intercept=self.fit_intercept, max_iter=self.max_iter,
                             tol=self.tol, start=start, verbose=self.verbose,
                             description=description)

    def _model_at(self, coef):
        """A fitted :class:`FactorizedLogisticRegression` with one C's coefficients of
        :func:`logistic_path`, for the scorer of a fold (which scores validated rows: no
        feature names to compare)."""
        model = FactorizedLogisticRegression(fit_intercept=self.fit_intercept)
        model.coef_, model.intercept_ = split_intercept(coef, self.fit_intercept)
        model.classes_ = self.classes_
        model.n_features_in_ = self.n_features_in_
        return model

    @reads_fitted_model
    def score(self, X, y, sample_weight=None):
        """Score with ``scoring`` (accuracy when None) on the given samples.

        Parameters
        ----------
        X : NormalizedMatrix, array-like or sparse matrix of shape (n_samples, n_features)
            The samples; a NormalizedMatrix is multiplied over its sources.
        y : array-like of shape (n_samples,)
            Their true labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each sample in the score.

        Returns
        -------
        float
            The scorer's value of this model on ``(X, y)``.
        """
        score_params = {} if sample_weight is None else {"sample_weight": sample_weight}
        return _scorer(self.scoring)(self, X, y, **score_params)


def _scorer(scoring):
    """The scorer of ``scoring``: accuracy for None."""
    return get_scorer("accuracy" if scoring is None else scoring)


def _check_Cs(Cs):
    """``Cs`` as an array of floats: ``Cs`` log-spaced values from 1e-4 to 1e4 for an int."""
    if isinstance(Cs, numbers.Integral):
        return np.logspace(-4, 4, Cs)
    message = f"Cs must be an int or a non-empty 1-D array-like of positive numbers; got {Cs!r}."
    try:
        values = np.asarray(Cs, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(message) from error
    if values.ndim != 1 or values.size == 0 or not (values > 0).all():
        raise ValueError(message)
    return values
