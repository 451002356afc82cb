"""FactorizedRidgeCV against scikit-learn's RidgeCV on the materialized join."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.model_selection import (
    KFold,
    ShuffleSplit,
    TimeSeriesSplit,
    cross_validate,
)
from sklearn.pipeline import make_pipeline
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import check_estimator

from sklearn_ilargi import FactorizedRidgeCV, NormalizedMatrix, config_context
from sklearn_ilargi.datasets import make_onehot_star
from sklearn_ilargi.linear_model._iterative import least_squares_iterative
from sklearn_ilargi.linear_model._ridge_cv import _ClosedFormFolds, _RowSums, _total_squares
from sklearn_ilargi.tests._scenarios import scenarios
from sklearn_ilargi.utils import TrainingMatrix

ALPHAS = np.logspace(-2, 2, 5)
RTOL = 1e-8


def assert_close(actual, desired, rtol=RTOL, floor=1e-3):
    """Equal to ``rtol`` relative to the largest magnitude of ``desired`` (at least
    ``floor``): coefficients that are 0 in one fit are rounding error in the other."""
    desired = np.asarray(desired, dtype=np.float64)
    scale = max(float(np.abs(desired).max(initial=0.0)), floor)
    assert_allclose(np.asarray(actual, dtype=np.float64), desired, rtol=0, atol=rtol * scale)


def assert_same_model(got, ref, rtol=RTOL, fit_with=None, X=None):
    """The chosen penalty, its score and the refitted model, in scikit-learn's shapes.

    The intercept is ``mean(y) - mean(X) @ coef``: where ``X`` is given, it is compared
    relative to the larger of its own magnitude and ``|mean(X)| @ |coef|``, the magnitude of
    the terms that cancel in it (a column far from zero makes that the intercept's rounding).

    ``fit_with(alpha)``, where given, fits scikit-learn's model with that penalty alone:
    where two penalties score the same to rounding (a tie, which rounding decides), the
    penalty chosen must score as well as scikit-learn's, and give its model.
    """
    if fit_with is not None and got.alpha_ != ref.alpha_:
        tied = fit_with(got.alpha_)
        assert_close(tied.best_score_, ref.best_score_, rtol, floor=0.0)
        ref = tied
    assert_allclose(got.alpha_, ref.alpha_, rtol=0)
    assert np.shape(got.coef_) == np.shape(ref.coef_)
    assert np.shape(got.intercept_) == np.shape(ref.intercept_)
    assert np.shape(got.best_score_) == np.shape(ref.best_score_)
    assert_close(got.coef_, ref.coef_, rtol)
    if X is None:
        assert_close(got.intercept_, ref.intercept_, rtol)
    else:
        cancelled = np.abs(np.asarray(X).mean(axis=0)) @ np.abs(np.asarray(ref.coef_)).T
        scale = max(float(np.abs(ref.intercept_).max(initial=0.0)),
                    float(np.max(cancelled, initial=0.0)), 1e-3)
        assert_allclose(got.intercept_, ref.intercept_, rtol=0, atol=rtol * scale)
    assert_close(got.best_score_, ref.best_score_, rtol, floor=0.0)
    if hasattr(ref, "cv_results_"):
        assert got.cv_results_.shape == ref.cv_results_.shape
        assert_close(got.cv_results_, ref.cv_results_, rtol)


def star(n_rows=90, n_targets=2, offset=1e6, seed=0):
    """A fact table with a column of ``offset +- 1`` and a dimension reached by a left join
    that misses the first 40 rows (so that those folds' means lie far from the others')."""
    rng = np.random.default_rng(seed)
    fact = rng.standard_normal((n_rows, 3))
    fact[:, 1] += offset
    dim = rng.standard_normal((10, 4))
    to_dim = rng.integers(0, 10, n_rows)
    to_dim[:40] = -1
    nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(n_rows), to_dim])
    T = nm.materialize()
    y = T @ rng.standard_normal((7, n_targets)) + rng.standard_normal((n_rows, n_targets))
    return nm, T, (y[:, 0] if n_targets == 1 else y), rng.random(n_rows) + 0.5


@st.composite
def problems(draw):
    """A random scenario with a target: (NormalizedMatrix, its join, y, sample_weight or
    None, fit_intercept); a column offset by 1e6 in some, with an intercept (without one, a
    column of 1e6 dominates every penalty's fit and no two solvers agree on the rest)."""
    n_rows = draw(st.integers(12, 40))
    nm, T = draw(scenarios(n_target=n_rows).filter(lambda pair: pair[0].shape[1] > 0))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    fit_intercept = draw(st.booleans())
    if fit_intercept and draw(st.booleans()):
        shift = np.zeros(T.shape[1])
        shift[rng.integers(T.shape[1])] = 1e6
        nm, T = nm + shift, T + shift
    n_targets = draw(st.integers(1, 2))
    y = T @ rng.standard_normal((T.shape[1], n_targets)) + rng.standard_normal(
        (n_rows, n_targets))
    y = y[:, 0] if n_targets == 1 else y
    weights = rng.random(n_rows) + 0.5 if draw(st.booleans()) else None
    return nm, T, y, weights, fit_intercept


# ---------------------------------------------------------------------- same as sklearn
@settings(max_examples=40, deadline=None)
@given(problems(), st.sampled_from([None, "r2"]))
def test_leave_one_out_matches_sklearn(problem, scoring):
    nm, T, y, weights, fit_intercept = problem
    params = dict(fit_intercept=fit_intercept, scoring=scoring)

    def fit_with(alphas):
        return RidgeCV(alphas=alphas, **params).fit(T, y, sample_weight=weights)

    got = FactorizedRidgeCV(alphas=ALPHAS, **params, strategy="factorized").fit(
        nm, y, sample_weight=weights)
    assert_same_model(got, fit_with(ALPHAS), fit_with=lambda alpha: fit_with([alpha]), X=T)


@settings(max_examples=30, deadline=None)
@given(problems())
def test_five_folds_match_sklearn(problem):
    nm, T, y, weights, fit_intercept = problem
    params = dict(fit_intercept=fit_intercept, cv=KFold(5))

    def fit_with(alphas):
        return RidgeCV(alphas=alphas, **params).fit(T, y, sample_weight=weights)

    got = FactorizedRidgeCV(alphas=ALPHAS, **params, strategy="factorized").fit(
        nm, y, sample_weight=weights)
    assert_same_model(got, fit_with(ALPHAS), fit_with=lambda alpha: fit_with([alpha]), X=T)
    assert got.decision_.solver == "eigen"


@pytest.mark.parametrize("cv", [None, KFold(5)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_targets", [1, 2])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_offset_star_matches_sklearn(cv, weighted, n_targets, fit_intercept):
    # Without an intercept, a column of 1e6 +- 1 makes the gram's condition about 1e12, and
    # no two solvers agree on the other coefficients to 1e-8.
    nm, T, y, weights = star(n_targets=n_targets, offset=1e6 if fit_intercept else 0.0)
    weights = weights if weighted else None
    params = dict(alphas=np.logspace(-3, 3, 13), fit_intercept=fit_intercept, cv=cv)
    ref = RidgeCV(**params).fit(T, y, sample_weight=weights)
    for strategy in ("factorized", "materialized"):
        got = FactorizedRidgeCV(**params, strategy=strategy).fit(nm, y, sample_weight=weights)
        assert_same_model(got, ref)


@pytest.mark.parametrize("weighted", [False, True])
def test_training_folds_from_sums_or_from_their_rows(weighted):
    # The left join's missing rows put the first folds' means far from the overall ones.
    nm, T, y, weights = star()
    weights = weights if weighted else None
    params = dict(alphas=ALPHAS, cv=KFold(5))
    ref = RidgeCV(**params).fit(T, y, sample_weight=weights)
    for limit in (0.0, 1e3, np.inf):  # every fold from its rows, as needed, none
        with config_context(cv_gram_max_cancellation=limit):
            got = FactorizedRidgeCV(**params, strategy="factorized").fit(
                nm, y, sample_weight=weights)
        assert_same_model(got, ref)


@settings(max_examples=30, deadline=None)
@given(problems(), st.sampled_from([KFold(5), ShuffleSplit(4, test_size=0.3, random_state=0)]))
def test_held_out_errors_from_sums_are_those_of_the_predictions(problem, cv):
    """Each penalty's held-out squared errors from the held-out rows' sums are those of its
    predictions; the penalties whose bound refuses the sums (the smallest ones, on nearly
    collinear columns) take the predictions'. Both round the centering of a column of
    1e6 +- 1 alike (about 1e-10 of the squares): they agree to 1e-9."""
    nm, T, y, weights, fit_intercept = problem
    y2 = y.reshape(len(y), -1)
    weights = np.ones(len(y)) if weights is None else weights
    alphas = np.array([1e-10, 1e-2, 1.0, 1e2])
    folds = list(cv.split(T))
    folds_of = _ClosedFormFolds(TrainingMatrix(nm), y2, weights, fit_intercept, folds)
    for k, (train, test) in enumerate(folds):
        model = folds_of.fold(k, train, alphas)
        targets = y2[test]
        predicted = model.squared_errors(folds_of.test_rows(test), targets, weights[test])
        scale = _total_squares(targets, weights[test]) + predicted.max(axis=0)
        got = folds_of.squared_errors(k, test, model, targets, weights[test])
        assert_allclose(got, predicted, rtol=0, atol=1e-9 * scale.max())
        if folds_of.held_sums[k] is not None:
            from_sums, kept = model.squared_errors_from_sums(
                folds_of.held_sums[k], folds_of.y_mean, targets, weights[test])
            assert_allclose(from_sums[kept], predicted[kept], rtol=0,
                            atol=1e-9 * scale.max())


def test_cancellation_of_a_fold_that_lacks_a_columns_spread():
    # Over the rows kept, the second column is constant: centering them by their own mean
    # cancels all of its sum of squares around the overall mean.
    X = np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0], [4.0, -5.0]])
    y = np.arange(4.0)[:, None]
    mean, y_mean = X.mean(axis=0), y.mean(axis=0)
    kept = _RowSums.over(TrainingMatrix(X[:3] - mean), y[:3] - y_mean, np.ones(3))
    gram, rhs, x_shift, y_shift, cancellation = kept.centered_system()
    centered = X[:3] - X[:3].mean(axis=0)
    assert_allclose(gram, centered.T @ centered, atol=1e-12)
    assert_allclose(rhs, centered.T @ (y[:3] - y[:3].mean()), atol=1e-12)
    assert_allclose(x_shift, X[:3].mean(axis=0) - mean)
    assert cancellation == np.inf
    spread = _RowSums.over(TrainingMatrix(X - mean), y - y_mean, np.ones(4))
    assert spread.centered_system()[-1] == pytest.approx(1.0)


def brute_force_leave_one_out(T, y, alpha):
    """Each row's squared error when the ridge model is fitted on all other rows."""
    errors = np.empty(len(y))
    for i in range(len(y)):
        kept = np.arange(len(y)) != i
        model = Ridge(alpha=alpha, solver="cholesky").fit(T[kept], y[kept])
        errors[i] = (y[i] - model.predict(T[i:i + 1])[0]) ** 2
    return errors


def test_one_hot_star_with_offsets():
    X, y, _ = make_onehot_star(150, (30, 10), n_categories=(3,), n_numeric=1, offset=1e6,
                               return_X_y=True, random_state=0)
    T = X.materialize()
    T = T.toarray() if sp.issparse(T) else T
    alphas = np.array([0.01, 1.0])
    got = FactorizedRidgeCV(alphas=alphas, store_cv_results=True,
                            strategy="factorized").fit(X, y)
    # Ids referenced once put the hat matrix's diagonal near 1, which magnifies the rounding
    # of the offset column's mean: scikit-learn's leave-one-out errors are about 2e-8 off
    # here. Against fits that leave each row out, these keep 1e-8.
    for k, alpha in enumerate(alphas):
        assert_close(got.cv_results_[:, k], brute_force_leave_one_out(T, y, alpha), 1e-7)
    ref = RidgeCV(alphas=alphas).fit(T, y)
    assert got.alpha_ == ref.alpha_
    assert_close(got.coef_, ref.coef_)
    assert_close(got.intercept_, ref.intercept_)
    params = dict(alphas=np.logspace(-2, 2, 5), cv=KFold(5))
    assert_same_model(FactorizedRidgeCV(**params, strategy="factorized").fit(X, y),
                      RidgeCV(**params).fit(T, y))


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**16), st.sampled_from([60, 150]), st.sampled_from([None, 5]),
       st.booleans())
def test_one_hot_stars_match_sklearn(seed, n_rows, cv, weighted):
    # 60 events on 80 + 10 ids and their categories: more columns than rows, the kernel's
    # leave-one-out over sparse blocks. The folds have a column of 1e6 +- 1 besides (see
    # test_one_hot_star_with_offsets for leave-one-out with one).
    X, y, _ = make_onehot_star(n_rows, (80, 10), n_categories=(3,), n_numeric=int(cv == 5),
                               offset=1e6, return_X_y=True, random_state=seed)
    T = X.materialize()
    T = T.toarray() if sp.issparse(T) else T
    weights = np.random.default_rng(seed).random(n_rows) + 0.5 if weighted else None
    params = dict(cv=None if cv is None else KFold(cv))

    def fit_with(alphas):
        return RidgeCV(alphas=alphas, **params).fit(T, y, sample_weight=weights)

    got = FactorizedRidgeCV(alphas=ALPHAS, **params, strategy="factorized").fit(
        X, y, sample_weight=weights)
    assert_same_model(got, fit_with(ALPHAS), fit_with=lambda alpha: fit_with([alpha]), X=T)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_kernel_leave_one_out_where_columns_outnumber_rows(fit_intercept):
    rng = np.random.default_rng(3)
    fact = rng.standard_normal((30, 5))
    dim = rng.standard_normal((6, 40))
    to_dim = rng.integers(0, 6, 30)
    to_dim[:5] = -1
    nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(30), to_dim])
    T = nm.materialize()
    y = T @ rng.standard_normal((45, 2)) + rng.standard_normal((30, 2))
    weights = rng.random(30) + 0.5
    for params in (dict(store_cv_results=True), dict(alpha_per_target=True),
                   dict(scoring="r2", store_cv_results=True)):
        params = dict(alphas=ALPHAS, fit_intercept=fit_intercept, **params)
        for target in (y[:, 0], y):
            ref = RidgeCV(**params).fit(T, target, sample_weight=weights)
            got = FactorizedRidgeCV(**params, strategy="factorized").fit(
                nm, target, sample_weight=weights)
            assert_same_model(got, ref)


@pytest.mark.parametrize("params", [
    dict(store_cv_results=True),
    dict(store_cv_results=True, scoring="neg_mean_absolute_error"),
    dict(alpha_per_target=True),
    dict(alpha_per_target=True, scoring="r2"),
])
@pytest.mark.parametrize("target", ["1d", "one column", "two columns"])
def test_stored_results_and_a_penalty_per_target(params, target):
    nm, T, y, weights = star()
    y = {"1d": y[:, 0], "one column": y[:, :1], "two columns": y}[target]
    if target == "1d" and params.get("alpha_per_target") and "scoring" in params:
        pytest.skip("scikit-learn indexes a 1-D y as 2-D here and fails")
    params = dict(alphas=ALPHAS, **params)
    ref = RidgeCV(**params).fit(T, y, sample_weight=weights)
    got = FactorizedRidgeCV(**params, strategy="factorized").fit(nm, y, sample_weight=weights)
    assert_same_model(got, ref)
    # X @ V a slice of rows at a time, and the scorer's predictions a penalty at a time.
    with config_context(cv_working_memory=0.001):
        sliced = FactorizedRidgeCV(**params, strategy="factorized").fit(
            nm, y, sample_weight=weights)
    assert_same_model(sliced, ref)


@pytest.mark.parametrize("cv", [
    4,
    TimeSeriesSplit(4),  # training rows that are not the complement of the test rows
    ShuffleSplit(4, test_size=0.3, random_state=0),
    list(KFold(3, shuffle=True, random_state=0).split(np.zeros(90))),
])
def test_splitters(cv):
    nm, T, y, weights = star()
    params = dict(alphas=ALPHAS, cv=cv)
    ref = RidgeCV(**params).fit(T, y, sample_weight=weights)
    got = FactorizedRidgeCV(**params, strategy="factorized").fit(nm, y, sample_weight=weights)
    assert_same_model(got, ref)
    with config_context(cv_working_memory=0.0001):  # the folds' predictions a penalty at a time
        assert_same_model(FactorizedRidgeCV(**params, strategy="factorized").fit(
            nm, y, sample_weight=weights), ref)


def test_no_penalty_among_the_folds_penalties():
    nm, T, y, weights = star(offset=0.0)
    for alphas in ([0.0], [0.0, 1e-3, 1.0]):
        params = dict(alphas=alphas, cv=KFold(5))
        ref = RidgeCV(**params).fit(T, y, sample_weight=weights)
        got = FactorizedRidgeCV(**params, strategy="factorized").fit(
            nm, y, sample_weight=weights)
        assert_same_model(got, ref)


def test_plain_and_sparse_input():
    rng = np.random.default_rng(5)
    S = sp.random(80, 12, density=0.2, random_state=0, format="csr")
    y = S @ rng.standard_normal(12) + rng.standard_normal(80)
    for cv in (None, KFold(5)):
        ref = RidgeCV(alphas=ALPHAS, cv=cv).fit(S.toarray(), y)
        for X in (S, S.tocoo(), S.toarray()):
            assert_same_model(FactorizedRidgeCV(alphas=ALPHAS, cv=cv).fit(X, y), ref)


# ---------------------------------------------------------------------- wide data
def test_wide_folds_run_conjugate_gradients_from_warm_starts():
    X, y, _ = make_onehot_star(300, (40, 12), n_categories=(3,), n_numeric=1, offset=1e6,
                               return_X_y=True, random_state=0)
    T = X.materialize()
    T = T.toarray() if sp.issparse(T) else T
    weights = np.random.default_rng(0).random(len(y)) + 0.5
    params = dict(alphas=ALPHAS, cv=KFold(5))
    ref = RidgeCV(**params).fit(T, y, sample_weight=weights)
    with config_context(closed_form_max_columns=10):
        got = FactorizedRidgeCV(**params, tol=1e-12, strategy="factorized").fit(
            X, y, sample_weight=weights)
        assert got.decision_.solver == "sparse_cg"
        assert got.n_iter_[0] > 1
        assert_same_model(got, ref, rtol=1e-7)
        refusal = r"cv=None .* 61 x 61 .*closed_form_max_columns=10\. Pass cv=5"
        with pytest.raises(ValueError, match=refusal):
            FactorizedRidgeCV(alphas=ALPHAS).fit(X, y)


@pytest.mark.parametrize("kernel", [False, True])
def test_warm_start_at_the_solution_needs_no_iterations(kernel):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((15, 40) if kernel else (40, 15))
    y = rng.standard_normal((len(X), 1))
    matrix, weights = TrainingMatrix(X), np.ones(len(X))
    means = X.mean(axis=0), y.mean(axis=0)
    solve = dict(solver="sparse_cg", tol=1e-10)
    coef, n_iter = least_squares_iterative(matrix, y, weights, np.ones(1), *means, **solve)
    again, n_again = least_squares_iterative(matrix, y, weights, np.ones(1), *means, **solve,
                                             coef_init=coef)
    assert n_iter[0] > 5 and n_again[0] <= 1
    assert_allclose(again, coef, rtol=1e-8)


# ---------------------------------------------------------------------- contract and errors
def test_pipeline_and_cross_validate():
    nm, T, y, _ = star(n_targets=1, offset=0.0)
    for cv in (None, 3):
        ref = cross_validate(RidgeCV(alphas=ALPHAS, cv=cv), T, y, cv=3)
        got = cross_validate(make_pipeline(FactorizedRidgeCV(alphas=ALPHAS, cv=cv)), nm, y,
                             cv=3)
        assert_allclose(got["test_score"], ref["test_score"], rtol=RTOL)


def test_the_contract_on_the_iterative_path():
    with config_context(closed_form_max_columns=1):
        check_estimator(FactorizedRidgeCV(cv=3), on_skip=None)


def test_a_scorer_without_weights_scores_folds_unweighted():
    nm, T, y, weights = star(n_targets=1)

    def negative_error(estimator, X, y):
        return -np.mean((estimator.predict(X) - y) ** 2)

    params = dict(alphas=ALPHAS, cv=KFold(5), scoring=negative_error)
    with pytest.warns(UserWarning, match="does not support sample_weight"):
        ref = RidgeCV(**params).fit(T, y, sample_weight=weights)
    with pytest.warns(UserWarning, match="does not support sample_weight"):
        got = FactorizedRidgeCV(**params, strategy="factorized").fit(
            nm, y, sample_weight=weights)
    assert_same_model(got, ref)


def test_bad_parameters_get_sklearn_errors():
    nm, T, y, _ = star(n_targets=1)
    with pytest.raises(ValueError, match="alphas must be a non-empty"):
        FactorizedRidgeCV(alphas=[]).fit(nm, y)
    with pytest.raises(ValueError, match="alphas must be a non-empty"):
        FactorizedRidgeCV(alphas=[], cv=3).fit(nm, y)
    with pytest.raises(ValueError, match=r"alphas\[1\] == -1.0, must be > 0.0"):
        FactorizedRidgeCV(alphas=[1.0, -1.0]).fit(nm, y)
    with pytest.raises(ValueError, match=r"alphas\[0\] == 0.0, must be > 0.0"):
        FactorizedRidgeCV(alphas=[0.0, 1.0]).fit(nm, y)
    with pytest.raises(ValueError, match=r"alphas == -1.0, must be >= 0.0"):
        FactorizedRidgeCV(alphas=[-1.0], cv=3).fit(nm, y)
    FactorizedRidgeCV(alphas=[0.0, 1.0], cv=3).fit(nm, y)  # k folds allow no penalty
    for alphas in (-1, 0):
        with pytest.raises(InvalidParameterError, match="'alphas' parameter"):
            FactorizedRidgeCV(alphas=alphas).fit(nm, y)
    for cv in ("a", 1, 2.5):
        with pytest.raises(InvalidParameterError, match="'cv' parameter"):
            FactorizedRidgeCV(cv=cv).fit(nm, y)
    with pytest.raises(InvalidParameterError, match="'gcv_mode' parameter"):
        FactorizedRidgeCV(gcv_mode="qr").fit(nm, y)
    with pytest.raises(InvalidParameterError, match="'scoring' parameter"):
        FactorizedRidgeCV(scoring="no such score").fit(nm, y)
    with pytest.raises(ValueError, match="cv!=None and store_cv_results=True"):
        FactorizedRidgeCV(cv=3, store_cv_results=True).fit(nm, y)
    with pytest.raises(ValueError, match="cv!=None and alpha_per_target=True"):
        FactorizedRidgeCV(cv=3, alpha_per_target=True).fit(nm, y)


def test_a_single_penalty_and_feature_names():
    nm, T, y, _ = star(n_targets=1, offset=0.0)
    named = NormalizedMatrix.from_matrices(
        [block.source for block in nm.blocks],
        [block.row_map.to_numpy() for block in nm.blocks],
        feature_names=[f"x{j}" for j in range(7)])
    for cv in (None, 3):
        model = FactorizedRidgeCV(alphas=2.0, cv=cv).fit(named, y)
        assert model.alpha_ == 2.0
        assert list(model.feature_names_in_) == [f"x{j}" for j in range(7)]
        assert model.n_features_in_ == 7
        assert_close(model.coef_, Ridge(alpha=2.0).fit(T, y).coef_)
