"""Ridge regression with built-in cross-validation over a NormalizedMatrix: FactorizedRidgeCV.

Every penalty of the grid shares the expensive work, as in scikit-learn's ``RidgeCV``:

- ``cv=None``, efficient leave-one-out (scikit-learn's ``_RidgeGCV``): one eigendecomposition
  of the factorized, centered and weighted gram ``G = V L V.T`` (or, where ``X`` has at least
  as many columns as rows, of the kernel ``X X.T``), and the factorized ``Xc @ V``, from which
  every penalty's leave-one-out errors and the hat matrix's diagonal follow by diagonal
  scalings.
- ``cv=k``: the sums of each fold's held-out rows (their gram, ``X.T W y``, column sums, sum
  of weights), taken once over the rows of the data centered by its overall mean, all from
  one gram of those rows beside the targets and a column of ones; the training
  fold's are the totals minus them, centered by the fold's own mean with a rank-one term that
  is small where the fold's mean is near the overall one, and computed from the fold's own
  rows where it is not (the ``cv_gram_max_cancellation`` setting). One eigendecomposition per
  fold, then every penalty is a diagonal scaling. The default score, :math:`R^2`, follows
  from the held-out rows' sums too, where they keep its digits (the same setting); other
  scores, and those penalties, take the held-out predictions of all penalties in one
  factorized product. The folds' rows are copied out of the sources once
  (``TrainingMatrix.compact_rows``), so that their products read only those rows. Where
  ``X`` is too wide for a dense gram (as
  :class:`~sklearn_ilargi.FactorizedRidge` decides), conjugate gradients over the products
  solve each fold, from the largest penalty down, each solve warm-started from the last.
"""

import functools
import numbers
import warnings
from dataclasses import dataclass, replace

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.metrics import check_scoring, get_scorer_names
from sklearn.model_selection import check_cv
from sklearn.utils import check_scalar

from .._config import get_config
from ..base import FactorizedMixin, falls_back_to_cpu
from ..cost import OperationProfile
from ..cost._solvers import closed_form_bytes
from ..cost._candidates import MEMORY_HEADROOM
from ..cost._hardware import available_memory
from ..utils import TrainingMatrix, one_blas_thread
from ..utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    _IdentityRegressor,
    scorer_accepts_sample_weight,
)
from ._base import (
    LeastSquaresRegressorMixin,
    SHARED_CONSTRAINTS,
    _unless_unit,
    centered_normal_equations,
    check_fit_input,
    solve_normal_equations,
    weighted_means,
)
from ._iterative import least_squares_iterative
from ._least_squares import _profile

#: The iterative solver of wide folds: scikit-learn's ``RidgeCV`` fits sparse folds with it.
ITERATIVE_SOLVER = "sparse_cg"


class FactorizedRidgeCV(
    LeastSquaresRegressorMixin, FactorizedMixin, RegressorMixin, BaseEstimator
):
    """Ridge regression with built-in cross-validation, trained on the sources of a
    NormalizedMatrix.

    The counterpart of :class:`sklearn.linear_model.RidgeCV`: it picks the penalty of
    ``alphas`` with the best cross-validated score, and fits
    :class:`~sklearn_ilargi.FactorizedRidge`'s model with it on every row. The penalties share
    the work: one eigendecomposition of the factorized gram for leave-one-out (``cv=None``),
    one per fold for ``cv=k``, after which each penalty is a diagonal scaling. Plain numpy or
    scipy.sparse input takes the same path on the one matrix.

    Parameters
    ----------
    alphas : array-like of shape (n_alphas,) or float, default=(0.1, 1.0, 10.0)
        The penalties to try; positive for ``cv=None``, non-negative otherwise.
    fit_intercept : bool, default=True
        Whether to fit an (unpenalized) intercept, through centering, which stays factorized.
    scoring : str or callable, default=None
        A scorer (see :func:`sklearn.metrics.check_scoring`). None: for ``cv=None`` the mean
        squared leave-one-out error (weighted by ``sample_weight``, as scikit-learn's), for
        ``cv=k`` the :math:`R^2` of each held-out fold.
    cv : int, cross-validation generator or iterable, default=None
        None: efficient leave-one-out. Otherwise the folds, as
        :func:`~sklearn.model_selection.check_cv` reads them (an int is that many
        :class:`~sklearn.model_selection.KFold` folds); each penalty's score is the mean over
        the folds of the scorer on the held-out rows (as ``GridSearchCV`` scores them inside
        ``RidgeCV``).
    gcv_mode : {"auto", "svd", "eigen"}, default=None
        ``cv=None``: the eigendecomposition of the ``c x c`` gram where ``X`` has more rows
        than columns, else of the ``n x n`` kernel ``X X.T``. ``"svd"`` is taken as
        ``"eigen"``: the factorized path never holds ``X`` to decompose it, and the singular
        vectors of ``X`` are the gram's eigenvectors.
    store_cv_results : bool, default=False
        ``cv=None`` only: keep every row's leave-one-out squared error (``scoring=None``)
        or prediction, for every penalty, in ``cv_results_``.
    alpha_per_target : bool, default=False
        ``cv=None`` only: choose a penalty for each target (column of ``y``) on its own.
    tol : float, default=1e-4
        Relative tolerance of the conjugate gradients of wide folds (``cv=k`` where ``X`` is
        too wide for a dense gram), as :class:`~sklearn_ilargi.FactorizedRidge`'s.
    max_iter : int, default=None
        Most iterations of each of those solves; None is scipy's default.
    strategy : {"auto", "factorized", "materialized"}, default="auto"
        Whether to train on the sources or on the joined matrix; "auto" lets the
        dispatcher choose.
    backend : {"auto", "cpu", "gpu"}, default="auto"
        Where the products run.

    Attributes
    ----------
    alpha_ : float or ndarray of shape (n_targets,)
        The chosen penalty; one per target with ``alpha_per_target`` and a 2-D ``y``.
    best_score_ : float or ndarray of shape (n_targets,)
        Its cross-validated score.
    cv_results_ : ndarray of shape (n_samples, n_alphas) or (n_samples, n_targets, n_alphas)
        With ``store_cv_results``: each row's leave-one-out squared error or prediction.
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
        Coefficients of the model refitted with ``alpha_``.
    intercept_ : float or ndarray of shape (n_targets,)
        Its intercept; 0 with ``fit_intercept=False``.
    n_iter_ : ndarray of shape (n_targets,)
        Iterations of that model's solve per target: 1 for the eigendecompositions (a
        direct solve), those of conjugate gradients for wide folds.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined when ``X`` has feature names.
    decision_ : sklearn_ilargi.cost.Decision
        The dispatcher's verdict for the fit; ``decision_.solver`` is ``"eigen"`` (the
        eigendecompositions) or ``"sparse_cg"`` (wide folds).
    strategy_ : {"factorized", "materialized"}
        The path the fit took.
    backend_ : {"cpu", "gpu"}
        Where the fit ran.

    See Also
    --------
    FactorizedRidge : One penalty.
    sklearn.linear_model.RidgeCV : The scikit-learn counterpart.

    Notes
    -----
    With ``sample_weight``, leave-one-out weighs each row's error by its weight (scikit-learn
    scales each row by the weight's square root); ``cv=k`` trains each fold with the weights
    and hands the held-out rows' weights to the scorer where it takes them, as
    ``GridSearchCV`` inside ``RidgeCV`` does (scikit-learn 1.7 and later).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import FactorizedRidgeCV, NormalizedMatrix
    >>> rng = np.random.default_rng(0)
    >>> fact, dim = rng.standard_normal((40, 2)), rng.standard_normal((5, 2))
    >>> X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(40), np.arange(40) % 5])
    >>> y = X @ np.array([1.0, -2.0, 0.5, 3.0]) + 0.1 * rng.standard_normal(40)
    >>> model = FactorizedRidgeCV(alphas=[0.01, 1.0, 100.0], strategy="factorized").fit(X, y)
    >>> float(model.alpha_)
    0.01
    >>> model.coef_.round(1)
    array([ 1. , -2. ,  0.5,  3. ])
    """

    _parameter_constraints: dict = {
        "alphas": ["array-like", Interval(numbers.Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "scoring": [StrOptions(set(get_scorer_names())), callable, None],
        "cv": ["cv_object"],
        "gcv_mode": [StrOptions({"auto", "svd", "eigen"}), None],
        "store_cv_results": ["boolean"],
        "alpha_per_target": ["boolean"],
        "tol": SHARED_CONSTRAINTS["tol"],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "strategy": SHARED_CONSTRAINTS["strategy"],
        "backend": SHARED_CONSTRAINTS["backend"],
    }

    def __init__(self, alphas=(0.1, 1.0, 10.0), *, fit_intercept=True, scoring=None, cv=None,
                 gcv_mode=None, store_cv_results=False, alpha_per_target=False, tol=1e-4,
                 max_iter=None, strategy="auto", backend="auto"):
        self.alphas = alphas
        self.fit_intercept = fit_intercept
        self.scoring = scoring
        self.cv = cv
        self.gcv_mode = gcv_mode
        self.store_cv_results = store_cv_results
        self.alpha_per_target = alpha_per_target
        self.tol = tol
        self.max_iter = max_iter
        self.strategy = strategy
        self.backend = backend

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Choose the penalty by cross-validation and fit the ridge model with it.

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
        self : FactorizedRidgeCV
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight)

    @falls_back_to_cpu
    def _fit(self, X, y, sample_weight, *, backend):
        weighted = sample_weight is not None
        if self.cv is not None and self.store_cv_results:
            raise ValueError("cv!=None and store_cv_results=True are incompatible")
        if self.cv is not None and self.alpha_per_target:
            raise ValueError("cv!=None and alpha_per_target=True are incompatible")
        alphas = _check_alphas(self.alphas, leave_one_out=self.cv is None)
        X, y, sample_weight = check_fit_input(self, X, y, sample_weight)
        if getattr(X, "format", None) == "coo":  # the folds select rows, which COO cannot
            X = X.tocsr()
        y2 = y.reshape(len(y), -1)
        # BLAS's threads cost more than they bring on small data (one_thread_cells).
        with one_blas_thread(X.shape[0] * X.shape[1] < get_config()["one_thread_cells"]):
            self._fit_body(X, y, y2, sample_weight, alphas, weighted, backend)
        return self

    def _fit_body(self, X, y, y2, sample_weight, alphas, weighted, backend):
        """Cross-validate the penalties and set the fitted attributes."""
        name = type(self).__name__
        if self.cv is None:
            mode = _leave_one_out_mode(X.shape, name)
            profile = _leave_one_out_profile(mode, X.shape, name, self.fit_intercept)
            matrix = TrainingMatrix(self._dispatch(X, profile, backend=backend))
            coef, x_mean, y_mean = self._leave_one_out(matrix, mode, y, y2, sample_weight,
                                                       alphas, weighted)
            self.n_iter_ = np.ones(y2.shape[1], dtype=np.int32)
        else:
            folds = list(check_cv(self.cv, y, classifier=False).split(X, y))
            profile = self._folds_profile(X.shape, y2.shape[1], len(folds), len(alphas))
            matrix = TrainingMatrix(self._dispatch(X, profile, backend=backend))
            coef, x_mean, y_mean = self._cross_validate(matrix, y, y2, sample_weight, alphas,
                                                        folds, weighted)
        self._set_coefficients(coef, x_mean, y_mean, y.ndim)

    # ------------------------------------------------------------------ leave-one-out
    def _leave_one_out(self, matrix, mode, y, y2, sample_weight, alphas, weighted):
        """Leave-one-out scores of every penalty, the best ones, and their coefficients."""
        x_mean, y_mean = _refined_means(matrix, y2, sample_weight, self.fit_intercept)
        loo = (_KernelLeaveOneOut if mode == "gram" else _GramLeaveOneOut)(
            matrix, y2, sample_weight, x_mean, y_mean, self.fit_intercept)
        n, t = y2.shape
        results = np.empty((n, t, len(alphas))) if self.store_cv_results else None
        if self.scoring is None:
            scores = _squared_error_scores(loo, alphas, self.alpha_per_target, y.ndim, results)
        else:
            scores = _scorer_scores(loo, alphas, y, y_mean, check_scoring(self, self.scoring),
                                    self.alpha_per_target,
                                    sample_weight if weighted else None, results)
        self.alpha_, self.best_score_ = _best(alphas, scores, self.alpha_per_target and t > 1)
        if self.store_cv_results:
            self.cv_results_ = results[:, 0, :] if y.ndim == 1 else results
        penalty = np.broadcast_to(np.asarray(self.alpha_, dtype=np.float64), (t,))
        return loo.coef(penalty), x_mean, y_mean

    # ------------------------------------------------------------------ k folds
    def _folds_profile(self, shape, n_targets, n_folds, n_alphas):
        """The closed form (one eigendecomposition per fold) and, for wide data, conjugate
        gradients per fold and penalty, warm-started.

        On a dense join, a fold's rows are selected in a copy (at most the join's size) and,
        with an intercept, centered in another: conjugate gradients hold both while they
        solve a fold. The closed form holds the join centered throughout, and a training
        fold's two copies while it takes the fold's normal equations from its own rows
        (see :meth:`_ClosedFormFolds._direct_system`); without an intercept, only a
        fold's selected rows.
        """
        name = type(self).__name__
        centered = int(bool(self.fit_intercept))
        closed = OperationProfile(gram=2, matmul=n_folds, rmatmul=2 * n_folds + 2,
                                  width=max(n_alphas * n_targets, 1),
                                  join_copies=2 * centered + 1, name=name, solver="eigen")
        one = _profile(ITERATIVE_SOLVER, shape, n_targets, self.max_iter, self.tol, name)
        fits = n_folds * n_alphas + 1
        iterative = replace(one, matmul=fits * one.matmul + n_folds,
                            rmatmul=fits * one.rmatmul, join_copies=centered + 1)
        return replace(closed, alternatives=(iterative,))

    def _cross_validate(self, matrix, y, y2, sample_weight, alphas, folds, weighted):
        """Scores of every penalty over the folds, the best one, and the refitted model.

        The held-out rows are scored with their weights where the scorer takes them, as
        ``GridSearchCV`` inside ``RidgeCV`` scores them."""
        scorer = check_scoring(self, self.scoring)
        weigh_scores = weighted and _scores_take_weights(scorer, self)
        if self.decision_.solver == ITERATIVE_SOLVER:
            folds_of = _IterativeFolds(matrix, y2, sample_weight, self.fit_intercept, self.tol,
                                       self.max_iter)
        else:
            folds_of = _ClosedFormFolds(matrix, y2, sample_weight, self.fit_intercept, folds)
        # R^2, the default score, from each penalty's sums of squared errors (see
        # squared_errors): no penalty's predictions are held, nor scored one by one.
        r2 = self.scoring in (None, "r2") and matrix.dtype == np.float64
        scores = np.empty((len(folds), len(alphas)))
        for k, (train, test) in enumerate(folds):
            model = folds_of.fold(k, train, alphas)
            if r2 and len(test) > 1:
                weights = sample_weight[test] if weigh_scores else None
                targets = y2[test]
                errors = folds_of.squared_errors(k, test, model, targets, weights)
                scores[k] = _r2_scores(errors, targets, weights)
                continue
            y_test, test_rows = y[test], folds_of.test_rows(test)
            for chunk in _alpha_chunks(len(alphas), len(test) * y2.shape[1], False):
                predictions = model.predict(test_rows, chunk)
                for a, alpha_index in enumerate(chunk):
                    scores[k, alpha_index] = _score_predictions(
                        scorer, predictions[:, :, a], y_test, False,
                        {"sample_weight": sample_weight[test]} if weigh_scores else {})
        mean_scores = scores.mean(axis=0)
        best = _first_best(mean_scores)
        self.alpha_ = alphas[best]
        self.best_score_ = mean_scores[best]
        coef, x_mean, y_mean, self.n_iter_ = folds_of.refit(np.full(y2.shape[1], alphas[best]))
        return coef, x_mean, y_mean

    # ------------------------------------------------------------------ attributes
    def _set_coefficients(self, coef, x_mean, y_mean, y_ndim):
        """``coef_`` and ``intercept_`` in ``RidgeCV``'s shapes: ``coef_`` is 1-D for one
        target (a 2-D ``y`` of one column too), ``intercept_`` follows ``y``'s dimensions,
        and is the float 0 without an intercept."""
        coef = coef.T  # (t, c)
        self.coef_ = coef[0] if coef.shape[0] == 1 else coef
        if not self.fit_intercept:
            self.intercept_ = 0.0
        else:
            intercept = y_mean - coef @ x_mean
            self.intercept_ = intercept[0] if y_ndim == 1 else intercept


# ---------------------------------------------------------------------- parameters
def _check_alphas(alphas, *, leave_one_out):
    """The penalties as a 1-D float array, checked as scikit-learn's ``RidgeCV`` checks
    them (positive for leave-one-out, non-negative for k folds), and not empty."""
    values = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"alphas must be a non-empty 1-D sequence of penalties, got {alphas!r}.")
    bound = "neither" if leave_one_out else "left"
    names = ["alphas"] if values.size == 1 else [f"alphas[{i}]" for i in range(values.size)]
    for value, name in zip(values, names):
        check_scalar(float(value), name, numbers.Real, min_val=0.0, include_boundaries=bound)
    return values


def _refined_means(matrix, y2, sample_weight, fit_intercept):
    """The weighted means, corrected by the mean of the data centered by them (a second
    pass, as a two-pass variance takes it).

    Leave-one-out's intercept term assumes that the centered columns sum to 0 (with the
    weights); a column of ``1e6 +- 1`` whose mean is off by a few units of its last place
    would shift every leave-one-out error by about as much. The second pass sums values of
    the size of the columns' spread, whose rounding is that much smaller.
    """
    x_mean, y_mean = weighted_means(matrix, y2, sample_weight, fit_intercept)
    if not fit_intercept:
        return x_mean, y_mean
    total = sample_weight.sum()
    residual = matrix.centered(x_mean).column_sums(_unless_unit(sample_weight)) / total
    return x_mean + residual, y_mean + sample_weight @ (y2 - y_mean) / total


def _leave_one_out_mode(shape, name):
    """``"gram"`` (the ``n x n`` kernel) where ``X`` has at least as many columns as rows,
    else ``"cov"`` (the ``c x c`` gram), as scikit-learn chooses; refused where that matrix
    is too large to decompose densely."""
    n_rows, n_columns = shape
    mode, size = ("gram", n_rows) if n_rows <= n_columns else ("cov", n_columns)
    limit = get_config()["closed_form_max_columns"]
    needed, available = closed_form_bytes(size), available_memory()
    if size > limit or needed > MEMORY_HEADROOM * available:
        why = (f"more than closed_form_max_columns={limit}" if size > limit else
               f"{needed / 2**30:.3g} GiB with its copies, and the host has "
               f"{available / 2**30:.3g} GiB available")
        raise ValueError(
            f"{name} with cv=None (efficient leave-one-out) decomposes a dense {size} x {size} "
            f"matrix, the smaller of X's {n_rows} rows and {n_columns} columns: {why}. Pass "
            "cv=5 (k-fold cross-validation), which runs conjugate gradients over the products "
            "where X is too wide for a dense gram."
        )
    return mode


def _leave_one_out_profile(mode, shape, name, fit_intercept):
    """The operations of leave-one-out: the gram, ``X.T @ y`` and ``Xc @ V``; or the kernel,
    from products with the rows' transposes, and ``X.T @ c``.

    ``Xc @ V`` (``n x c``) and the kernel (``n x n``) are the work arrays of the width
    declared; with an intercept, a dense join is also held centered, in a copy.
    """
    n_rows, n_columns = shape
    common = dict(matmul=1, rmatmul=3, join_copies=int(bool(fit_intercept)), name=name,
                  solver="eigen")
    if mode == "cov":
        return OperationProfile(gram=1, width=max(n_columns, 1), **common)
    return OperationProfile(width=max(n_rows, 1), **common)


def _alpha_chunks(n_alphas, values_per_alpha, reduced):
    """Index arrays of the penalties to take at once: all where only reductions are kept
    (``reduced``), else as many as hold ``values_per_alpha`` float64 each within the
    ``cv_working_memory`` setting (at least one)."""
    if reduced:
        return [np.arange(n_alphas)]
    budget = get_config()["cv_working_memory"] * 2**20
    step = max(1, int(budget // (8 * max(values_per_alpha, 1))))
    return [np.arange(start, min(start + step, n_alphas)) for start in range(0, n_alphas, step)]


def _rows_per_slice(n_rows, values_per_row):
    """Rows taken at once by leave-one-out: all where ``n_rows * values_per_row`` float64
    fit the ``cv_working_memory`` setting, else as many as do (at least one)."""
    budget = get_config()["cv_working_memory"] * 2**20
    return max(1, min(n_rows, int(budget // (8 * max(values_per_row, 1)))))


# ---------------------------------------------------------------------- scores
def _squared_error_scores(loo, alphas, per_target, y_ndim, results):
    """``RidgeCV``'s leave-one-out scores without a scorer, every penalty at once: only the
    sums of squared errors are kept (and each row's in ``results``, where given)."""
    n_rows, n_targets = loo.scaled_targets.shape
    squares = np.zeros((len(alphas), n_targets))
    for start, stop, errors in loo.errors(alphas):  # (rows, alphas, targets)
        squares += np.einsum("iat,iat->at", errors, errors)
        if results is not None:
            results[start:stop] = (errors ** 2).transpose(0, 2, 1)
    return [_mean_squared_error_score(row, n_rows, per_target, y_ndim) for row in squares]


def _scorer_scores(loo, alphas, y, y_mean, scorer, per_target, sample_weight, results):
    """The scorer on every penalty's leave-one-out predictions (and those in ``results``,
    where given), as many penalties at a time as ``cv_working_memory`` holds.

    The errors are those of the rows scaled by ``sqrt(sample_weight)``: the predictions are
    scaled back, as scikit-learn's, and the scorer takes the weights.
    """
    n_rows, n_targets = loo.scaled_targets.shape
    score_params = {} if sample_weight is None else {"sample_weight": sample_weight}
    scores = []
    for chunk in _alpha_chunks(len(alphas), n_rows * n_targets, False):
        predictions = np.empty((n_rows, n_targets, len(chunk)))
        for start, stop, errors in loo.errors(alphas[chunk]):
            scaled = loo.scaled_targets[start:stop, None, :] - errors
            if sample_weight is not None:
                scaled /= loo.root[start:stop, None, None]
            predictions[start:stop] = (scaled + y_mean).transpose(0, 2, 1)
        if results is not None:
            results[:, :, chunk] = predictions
        scores += [_score_predictions(scorer, predictions[:, :, a], y, per_target,
                                      score_params) for a in range(len(chunk))]
    return scores


def _mean_squared_error_score(squares, n_rows, per_target, y_ndim):
    """``RidgeCV``'s score without a scorer: minus the mean squared (weighted) leave-one-out
    error, over every row and target, or per target (a 1-D ``y``: one float)."""
    if not per_target:
        return -squares.sum() / (n_rows * squares.size)
    per = -squares / n_rows
    return per[0] if y_ndim == 1 else per


def _r2_scores(squared_errors, y, sample_weight):
    """Each penalty's :func:`~sklearn.metrics.r2_score` (averaged uniformly over the
    targets) from its sums of squared errors ``(n_alphas, n_targets)``, with the metric's
    rules for a constant target (1 where the errors are 0 too, else 0)."""
    denominator = _total_squares(y, sample_weight)
    numerator = squared_errors
    valid = (denominator != 0) & (numerator != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.where(valid, 1 - numerator / denominator, 1.0)
    scores[(numerator != 0) & (denominator == 0)] = 0.0
    return scores.mean(axis=1)


def _total_squares(y, sample_weight):
    """Each column's (weighted) sum of squares about its (weighted) mean, as
    :func:`~sklearn.metrics.r2_score` takes its denominator."""
    weight = 1.0 if sample_weight is None else sample_weight[:, None]
    mean = np.average(y, axis=0, weights=sample_weight)
    return (weight * (y - mean) ** 2).sum(axis=0)


def _score_predictions(scorer, predictions, y, per_target, score_params):
    """The scorer on the predictions (``y``'s shape), per column of a 2-D ``y`` where
    ``per_target``."""
    predictions = predictions[:, 0] if y.ndim == 1 else predictions
    identity = _IdentityRegressor()
    if per_target and y.ndim == 2:
        return np.array([scorer(identity, predictions[:, j], y[:, j], **score_params)
                         for j in range(y.shape[1])])
    return scorer(identity, predictions, y, **score_params)


def _scores_take_weights(scorer, estimator):
    """Whether the folds' scores take the fit's ``sample_weight``; warns where the scorer
    cannot, as ``GridSearchCV`` does."""
    if scorer_accepts_sample_weight(scorer):
        return True
    warnings.warn(
        f"The scoring {scorer} does not support sample_weight, which may lead to "
        f"statistically incorrect results when fitting {estimator} with sample_weight.",
        UserWarning,
    )
    return False


def _best(alphas, scores, per_target):
    """The first penalty with the best score, per target where ``per_target``, as
    ``RidgeCV`` keeps it (a later one replaces it only where strictly better)."""
    best_alpha, best_score = None, None
    for alpha, score in zip(alphas, scores):
        if best_score is None:
            best_score = np.array(score, dtype=np.float64) if per_target else score
            best_alpha = np.full(np.shape(score), alpha) if per_target else float(alpha)
        elif per_target:
            better = score > best_score
            best_score[better], best_alpha[better] = score[better], alpha
        elif score > best_score:
            best_alpha, best_score = float(alpha), score
    return best_alpha, best_score


def _first_best(mean_scores):
    """The first index of the highest mean score, NaN ranked last (``GridSearchCV``'s
    ``best_index_``)."""
    finite = np.where(np.isnan(mean_scores), -np.inf, mean_scores)
    return int(np.argmax(finite))


def _inverse_shifted(eigenvalues, alphas):
    """``1 / (L + alpha)`` for every eigenvalue (rows) and penalty (columns); for a penalty
    of 0 (``cv=k`` allows it), the pseudo-inverse's, which drops eigenvalues that are
    rounding error (as :func:`~sklearn_ilargi.linear_model._base.minimum_norm_solve`
    does)."""
    with np.errstate(divide="ignore"):
        inverse = 1.0 / (eigenvalues[:, None] + alphas[None, :])
    unpenalized = alphas == 0
    if unpenalized.any():
        largest = max(float(eigenvalues.max(initial=0.0)), 0.0)
        cutoff = max(eigenvalues.size, 1) * np.finfo(np.float64).eps * largest
        kept = eigenvalues > cutoff
        inverse[:, unpenalized] = np.where(kept, 1.0 / np.where(kept, eigenvalues, 1.0),
                                           0.0)[:, None]
    return inverse


def _symmetric_eigh(matrix):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix (its mean with its
    transpose), on one BLAS thread where it has fewer than ``one_thread_cells`` cells."""
    with one_blas_thread(matrix.size < get_config()["one_thread_cells"]):
        return scipy.linalg.eigh((matrix + matrix.T) / 2)


# ---------------------------------------------------------------------- leave-one-out
class _GramLeaveOneOut:
    """Leave-one-out from ``G = Xc.T W Xc = V L V.T``, as scikit-learn's
    ``_eigen_decompose_covariance`` and ``_solve_eigen_covariance`` on ``sqrt(W) Xc``.

    For a penalty ``a``, with ``D = 1 / (L + a)`` and ``Q = Xc @ V`` (factorized, held where
    it fits in ``cv_working_memory``, else a slice of rows at a time), the leave-one-out
    error of row ``i`` is ``sqrt(w_i) (yc_i - q_i D V.T Xc.T W yc) / (1 - h_i)`` with the hat
    matrix's diagonal ``h_i = w_i sum_k Q_ik**2 D_k`` (plus ``w_i (1 - q_i D V.T Xc.T w) /
    sum(w)`` for the intercept).
    """

    def __init__(self, matrix, y2, sample_weight, x_mean, y_mean, fit_intercept):
        self.fit_intercept = fit_intercept
        self.sample_weight, self.root = sample_weight, np.sqrt(sample_weight)
        self.scaled_targets = self.root[:, None] * (y2 - y_mean)
        self.centered, gram, rhs = centered_normal_equations(
            matrix, y2, sample_weight, x_mean, y_mean, fit_intercept)
        self.eigenvalues, self.vectors = _symmetric_eigh(gram)
        self.projected_rhs = self.vectors.T @ rhs
        self.projected_sums = self.vectors.T @ self.centered.column_sums(
            _unless_unit(sample_weight))
        n_rows, n_columns = matrix.shape
        self.step = _rows_per_slice(n_rows, n_columns)
        self.held = self.centered.matmul(self.vectors) if self.step >= n_rows else None

    def errors(self, alphas):
        """``(start, stop, errors)`` for consecutive slices of rows; ``errors`` of shape
        ``(stop - start, len(alphas), n_targets)`` are the leave-one-out errors scaled by
        the rows' ``sqrt(sample_weight)``."""
        inverse = _inverse_shifted(self.eigenvalues, alphas)  # (c, a)
        n_columns, n_targets = self.projected_rhs.shape
        weighted_rhs = (inverse[:, :, None] * self.projected_rhs[:, None, :]).reshape(
            n_columns, -1)
        n_rows = self.scaled_targets.shape[0]
        total = self.sample_weight.sum()
        for start in range(0, n_rows, self.step):
            stop = min(start + self.step, n_rows)
            q = (self.held[start:stop] if self.held is not None else
                 self.centered.select_rows(np.arange(start, stop)).matmul(self.vectors))
            root, weight = self.root[start:stop, None], self.sample_weight[start:stop, None]
            fitted = root[:, :, None] * (q @ weighted_rhs).reshape(stop - start, -1,
                                                                   n_targets)
            residual = self.scaled_targets[start:stop, None, :] - fitted
            denominator = 1.0 - weight * ((q * q) @ inverse)
            if self.fit_intercept:
                denominator -= weight * (1.0 - q @ (inverse * self.projected_sums[:, None])) \
                    / total
            yield start, stop, residual / denominator[:, :, None]

    def coef(self, alpha):
        """Coefficients (c, t) for a penalty per target: ``V D V.T Xc.T W yc``."""
        values = np.unique(alpha)
        inverse = _inverse_shifted(self.eigenvalues, values)
        return self.vectors @ (inverse[:, np.searchsorted(values, alpha)] * self.projected_rhs)


class _KernelLeaveOneOut:
    """Leave-one-out from the kernel ``K = sqrt(W) Xc Xc.T sqrt(W) = U L U.T``, as
    scikit-learn's ``_eigen_decompose_gram`` and ``_solve_eigen_gram``: for wide ``X``.

    ``Xc Xc.T`` is taken a slice of columns at a time, each the factorized product of ``Xc``
    with the transpose of a slice of its rows (joined for those rows only); its ``n x n``
    size was checked before (see :func:`_leave_one_out_mode`).
    """

    def __init__(self, matrix, y2, sample_weight, x_mean, y_mean, fit_intercept):
        self.fit_intercept = fit_intercept
        self.sample_weight, self.root = sample_weight, np.sqrt(sample_weight)
        self.scaled_targets = self.root[:, None] * (y2 - y_mean)
        self.centered = matrix.centered(x_mean) if fit_intercept else matrix
        n_rows, n_columns = matrix.shape
        kernel = np.empty((n_rows, n_rows))
        step = _rows_per_slice(n_rows, n_columns)
        for start in range(0, n_rows, step):
            rows = np.arange(start, min(start + step, n_rows))
            kernel[:, rows] = self.centered.matmul(self.centered.rows(rows).T)
        kernel *= np.multiply.outer(self.root, self.root)
        self.eigenvalues, self.vectors = _symmetric_eigh(kernel)
        self.projected_targets = self.vectors.T @ self.scaled_targets
        self.projected_root = self.vectors.T @ self.root

    def _dual(self, inverse):
        """``c = U D U.T sqrt(W) yc`` for each column of ``inverse``: (n, a, t)."""
        n_rows, n_targets = self.projected_targets.shape
        scaled = (inverse[:, :, None] * self.projected_targets[:, None, :]).reshape(n_rows, -1)
        return (self.vectors @ scaled).reshape(n_rows, -1, n_targets)

    def errors(self, alphas):
        """All rows at once: ``(0, n_samples, errors)``, as :meth:`_GramLeaveOneOut.errors`."""
        inverse = _inverse_shifted(self.eigenvalues, alphas)  # (n, a)
        diagonal = (self.vectors * self.vectors) @ inverse
        if self.fit_intercept:
            diagonal -= (self.vectors @ (inverse * self.projected_root[:, None])) * \
                self.root[:, None] / self.sample_weight.sum()
        yield 0, len(self.root), self._dual(inverse) / diagonal[:, :, None]

    def coef(self, alpha):
        """Coefficients (c, t) for a penalty per target: ``Xc.T sqrt(W) c``."""
        values = np.unique(alpha)
        dual = self._dual(_inverse_shifted(self.eigenvalues, values))
        columns = np.searchsorted(values, alpha)
        chosen = dual[:, columns, np.arange(len(alpha))]  # (n, t)
        return self.centered.rmatmul(self.root[:, None] * chosen)


# ---------------------------------------------------------------------- k folds
@dataclass
class _RowSums:
    """Weighted sums over some rows of the data centered by the overall means: what a
    training fold's centered normal equations are made of."""

    gram: np.ndarray  # Z.T W Z
    cross: np.ndarray  # Z.T W zy
    x_sums: np.ndarray  # Z.T w
    y_sums: np.ndarray  # w @ zy
    y_squares: np.ndarray  # w @ zy**2
    weight: float  # sum(w)

    @classmethod
    def over(cls, centered, targets, sample_weight):
        """The sums over the rows of ``centered``, all from one gram of ``[Z, zy, 1]``
        (:meth:`TrainingMatrix.gram_with`): one pass over the sources."""
        n_columns = centered.shape[1]
        full = centered.gram_with(targets, _unless_unit(sample_weight))
        full = (full + full.T) / 2
        x, y, one = slice(0, n_columns), slice(n_columns, -1), -1
        return cls(full[x, x], full[x, y], full[x, one], full[one, y],
                   np.diag(full[y, y]).copy(), float(full[one, one]))

    def __add__(self, other):
        return _RowSums(*(getattr(self, f) + getattr(other, f) for f in _ROW_SUM_FIELDS))

    def __sub__(self, other):
        return _RowSums(*(getattr(self, f) - getattr(other, f) for f in _ROW_SUM_FIELDS))

    def centered_system(self):
        """``(gram, rhs, x_shift, y_shift, cancellation)`` of these rows centered by their
        own means, ``x_shift`` and ``y_shift`` being those means minus the overall ones,
        and ``cancellation`` the largest factor by which the rank-one term of the shift
        cancels a column's or target's sum of squares."""
        x_shift, y_shift = self.x_sums / self.weight, self.y_sums / self.weight
        gram = self.gram - self.weight * np.multiply.outer(x_shift, x_shift)
        rhs = self.cross - self.weight * np.multiply.outer(x_shift, y_shift)
        squares = np.concatenate([np.diag(self.gram), self.y_squares])
        left = np.concatenate([np.diag(gram), self.y_squares - self.weight * y_shift ** 2])
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(squares > 0, squares / left, 1.0)
        factor = np.where((squares > 0) & ~(left > 0), np.inf, factor)
        return gram, rhs, x_shift, y_shift, float(factor.max(initial=1.0))


_ROW_SUM_FIELDS = ("gram", "cross", "x_sums", "y_sums", "y_squares", "weight")


@dataclass
class _FoldModel:
    """A fold's coefficients for every penalty, and the centers its predictions take:
    ``(X_test - 1 reference^T) @ coef - x_shift @ coef + y_center``."""

    coef: np.ndarray  # (c, a, t)
    x_shift: np.ndarray  # (c,)
    y_center: np.ndarray  # (t,)

    def squared_errors_from_sums(self, sums, y_mean, targets, sample_weight):
        """:meth:`squared_errors` from the held-out rows' :class:`_RowSums` (centered by
        the overall means ``y_mean`` and the ``x_shift``'s reference): no pass over them.

        With ``Z`` and ``zy`` those rows centered and ``s = x_shift @ c - y_shift``, the
        errors of the coefficients ``c`` are ``zy + s - Z c``, whose squares sum to
        ``sum(w (zy + s)**2) - 2 c.T (Z.T W zy + s Z.T w) + c.T (Z.T W Z) c``. Their rounding
        is about that of the largest term, at most ``M = (sqrt(sum(w (zy + s)**2)) +
        sum_j |c_j| sqrt(G_jj))**2`` (Cauchy-Schwarz). A penalty whose ``M`` exceeds the
        ``cv_gram_max_cancellation`` setting times a target's sum of squares about its mean
        (the denominator of its :math:`R^2`) is not kept: its errors are to be taken from
        the predictions.

        Returns
        -------
        errors : ndarray of shape (n_alphas, n_targets)
        kept : ndarray of bool of shape (n_alphas,)
            The penalties whose errors are kept.
        """
        n_columns, n_alphas, n_targets = self.coef.shape
        coef = self.coef.reshape(n_columns, -1)  # (c, a t), penalty-major
        shift = (self.x_shift @ coef).reshape(n_alphas, n_targets) - (self.y_center - y_mean)
        constant = sums.y_squares + 2 * shift * sums.y_sums + shift ** 2 * sums.weight
        linear = ((coef * np.tile(sums.cross, n_alphas)).sum(axis=0).reshape(n_alphas, -1)
                  + shift * (sums.x_sums @ coef).reshape(n_alphas, n_targets))
        quadratic = (coef * (sums.gram @ coef)).sum(axis=0).reshape(n_alphas, n_targets)
        spread = np.sqrt(np.clip(np.diag(sums.gram), 0, None)) @ np.abs(coef)
        magnitude = (np.sqrt(np.abs(constant)) + spread.reshape(n_alphas, n_targets)) ** 2
        limit = get_config()["cv_gram_max_cancellation"]
        kept = (magnitude <= limit * _total_squares(targets, sample_weight)).all(axis=1)
        return np.maximum(constant - 2 * linear + quadratic, 0.0), kept

    def squared_errors(self, test_matrix, targets, sample_weight, penalties=None):
        """Each penalty's (weighted) sum of squared errors on the rows of ``test_matrix``,
        per target: ``(n_alphas, n_targets)`` (only the ``penalties``, indices, where
        given), the predictions taken a slice of rows at a time."""
        chosen = self.coef if penalties is None else self.coef[:, penalties, :]
        n_columns, n_alphas, n_targets = chosen.shape
        coef = chosen.reshape(n_columns, -1)
        bias = np.tile(self.y_center, n_alphas) - self.x_shift @ coef
        out = np.zeros((n_alphas, n_targets))
        for start, stop, values in test_matrix.product_slices(coef, bias):
            residual = targets[start:stop].T - values.reshape(n_alphas, n_targets, -1)
            if sample_weight is None:
                out += np.einsum("atn,atn->at", residual, residual)
            else:
                out += np.einsum("atn,atn,n->at", residual, residual,
                                 sample_weight[start:stop])
        return out

    def predict(self, test_matrix, chunk):
        """Predictions (rows, t, len(chunk)) of the penalties ``chunk``."""
        n_columns, _, n_targets = self.coef.shape
        coef = self.coef[:, chunk, :].reshape(n_columns, -1)
        values = test_matrix.matmul(coef) - self.x_shift @ coef
        return (values.reshape(len(values), len(chunk), n_targets)
                + self.y_center).transpose(0, 2, 1)


class _ClosedFormFolds:
    """Folds solved from their centered grams: the held-out rows' sums taken once, the
    training folds' the totals minus them (see :meth:`_RowSums.centered_system`)."""

    def __init__(self, matrix, y2, sample_weight, fit_intercept, folds):
        self.matrix, self.y2, self.sample_weight = matrix, y2, sample_weight
        self.fit_intercept = fit_intercept
        self.x_mean, self.y_mean = weighted_means(matrix, y2, sample_weight, fit_intercept)
        self.centered = matrix.centered(self.x_mean) if fit_intercept else matrix
        self.targets = y2 - self.y_mean
        self.unit_weights = _unless_unit(sample_weight) is None
        n_rows = matrix.shape[0]
        self.held = [_held_out(train, n_rows) for train, _ in folds]
        self.held_sums = [None if rows is None else self._sums(rows) for rows in self.held]
        if _partition(self.held, n_rows):
            self.total = sum(self.held_sums[1:], self.held_sums[0])
        else:
            self.total = _RowSums.over(self.centered, self.targets, sample_weight)

    def _sums(self, rows):
        return _RowSums.over(self.centered.compact_rows(rows), self.targets[rows],
                             self.sample_weight[rows])

    def fold(self, k, train, alphas):
        """The model of training fold ``k`` (rows ``train``) for every penalty."""
        gram, rhs, x_shift, y_shift = self._system_from_sums(k) or self._direct_system(train)
        eigenvalues, vectors = _symmetric_eigh(gram)
        inverse = _inverse_shifted(eigenvalues, alphas)  # (c, a)
        scaled = inverse[:, :, None] * (vectors.T @ rhs)[:, None, :]  # (c, a, t)
        coef = (vectors @ scaled.reshape(len(scaled), -1)).reshape(scaled.shape)
        return _FoldModel(coef, x_shift, self.y_mean + y_shift)

    def _system_from_sums(self, k):
        """Training fold ``k``'s centered normal equations and shifts from the totals minus
        its held-out rows' sums; None where it has none, or where they would cancel more
        than the ``cv_gram_max_cancellation`` setting allows."""
        if self.held_sums[k] is None:
            return None
        training = self.total - self.held_sums[k]
        if not self.fit_intercept:
            return (training.gram, training.cross, np.zeros(self.matrix.shape[1]),
                    np.zeros(self.y2.shape[1]))
        gram, rhs, x_shift, y_shift, cancellation = training.centered_system()
        if cancellation > get_config()["cv_gram_max_cancellation"]:
            return None
        return gram, rhs, x_shift, y_shift

    def _direct_system(self, train):
        """A training fold's centered normal equations from its own rows, centered by its
        own means; the shifts are those means minus the overall ones."""
        rows, weights, targets = self.matrix.compact_rows(train), self.sample_weight[train], \
            self.y2[train]
        x_mean, y_mean = weighted_means(rows, targets, weights, self.fit_intercept)
        _, gram, rhs = centered_normal_equations(rows, targets, weights, x_mean, y_mean,
                                                 self.fit_intercept)
        return gram, rhs, x_mean - self.x_mean, y_mean - self.y_mean

    def test_rows(self, test):
        """The held-out rows, centered by the overall mean (their predictions keep their
        digits where ``X`` has large means)."""
        return self.centered.compact_rows(test)

    def squared_errors(self, k, test, model, targets, sample_weight):
        """Each penalty's sum of squared errors on the rows ``test``, whose targets are
        ``targets`` (weighted by ``sample_weight``, the fit's weights of those rows, where
        given), per target: ``(n_alphas, n_targets)``.

        From fold ``k``'s held-out sums where they are those rows' (with the same weights)
        and the expansion keeps its digits (see :meth:`_FoldModel.squared_errors_from_sums`);
        else from the predictions."""
        sums = self.held_sums[k]
        if not (sums is not None and (sample_weight is not None or self.unit_weights)
                and np.array_equal(self.held[k], test)):
            return model.squared_errors(self.test_rows(test), targets, sample_weight)
        errors, kept = model.squared_errors_from_sums(sums, self.y_mean, targets,
                                                      sample_weight)
        if not kept.all():
            redo = np.flatnonzero(~kept)
            errors[redo] = model.squared_errors(self.test_rows(test), targets, sample_weight,
                                                redo)
        return errors

    def refit(self, alpha):
        """The model of every row for a penalty per target: ``(coef, x_mean, y_mean,
        n_iter)``."""
        if not self.fit_intercept:
            coef, _ = solve_normal_equations(self.total.gram, self.total.cross, alpha)
            return coef, self.x_mean, self.y_mean, np.ones(len(alpha), dtype=np.int32)
        # Centered by the rows' exact means: the overall means' rounding drops out.
        gram, rhs, x_shift, y_shift, _ = self.total.centered_system()
        # The constant columns are found (a pass over X) only where a solve needs them.
        constant = functools.cache(self.matrix.constant_columns)
        coef, _ = solve_normal_equations(gram, rhs, alpha, constant)
        return (coef, self.x_mean + x_shift, self.y_mean + y_shift,
                np.ones(len(alpha), dtype=np.int32))


class _IterativeFolds:
    """Folds solved by conjugate gradients over the products (``X`` too wide for a dense
    gram): per fold, the penalties from the largest down, each solve starting from the
    previous one's solution."""

    def __init__(self, matrix, y2, sample_weight, fit_intercept, tol, max_iter):
        self.matrix, self.y2, self.sample_weight = matrix, y2, sample_weight
        self.fit_intercept, self.tol, self.max_iter = fit_intercept, tol, max_iter

    def _solve(self, matrix, y2, sample_weight, alphas):
        """Coefficients (c, a, t) for every penalty, the means, and the last solve's
        iterations per target."""
        x_mean, y_mean = weighted_means(matrix, y2, sample_weight, self.fit_intercept)
        coef = np.empty((matrix.shape[1], len(alphas), y2.shape[1]))
        start = None
        for a in np.argsort(-alphas, kind="stable"):
            start, n_iter = least_squares_iterative(
                matrix, y2, sample_weight, np.full(y2.shape[1], alphas[a]), x_mean, y_mean,
                solver=ITERATIVE_SOLVER, tol=self.tol, max_iter=self.max_iter,
                coef_init=start)
            coef[:, a, :] = start
        return coef, x_mean, y_mean, n_iter

    def fold(self, k, train, alphas):
        coef, x_mean, y_mean, _ = self._solve(self.matrix.compact_rows(train), self.y2[train],
                                              self.sample_weight[train], alphas)
        return _FoldModel(coef, x_mean, y_mean)

    def test_rows(self, test):
        return self.matrix.compact_rows(test)

    def squared_errors(self, k, test, model, targets, sample_weight):
        return model.squared_errors(self.test_rows(test), targets, sample_weight)

    def refit(self, alpha):
        coef, x_mean, y_mean, n_iter = self._solve(self.matrix, self.y2, self.sample_weight,
                                                   alpha[:1])
        return coef[:, 0, :], x_mean, y_mean, n_iter


def _held_out(train, n_rows):
    """The rows outside ``train``, where their sums are the cheaper way to a training fold's
    (no more of them than of training rows, and no training row twice); else None."""
    train = np.asarray(train)
    outside = np.ones(n_rows, dtype=bool)
    outside[train] = False
    n_outside = np.count_nonzero(outside)
    # A row given twice leaves fewer rows inside than the training fold has.
    if n_outside > len(train) or n_rows - n_outside != len(train):
        return None
    return np.flatnonzero(outside)


def _partition(held, n_rows):
    """Whether the held-out rows of the folds cover every row exactly once."""
    if any(rows is None for rows in held):
        return False
    every = np.concatenate(held) if held else np.empty(0, dtype=np.intp)
    return len(every) == n_rows and bool((np.bincount(every, minlength=n_rows) == 1).all())
