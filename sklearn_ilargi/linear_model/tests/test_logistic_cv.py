"""FactorizedLogisticRegressionCV against scikit-learn's LogisticRegressionCV on the join."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegressionCV
from sklearn.metrics import get_scorer
from sklearn.model_selection import KFold, StratifiedKFold, cross_validate
from sklearn.pipeline import make_pipeline
from threadpoolctl import threadpool_limits

from sklearn_ilargi import (
    FactorizedLogisticRegression,
    FactorizedLogisticRegressionCV,
    FactorizedStandardScaler,
    NormalizedMatrix,
)
from sklearn_ilargi.datasets import make_onehot_star
from sklearn_ilargi.tests._scenarios import (
    build,
    random_scenario,
    scenarios,
    sources_as_given,
)
from sklearn_ilargi.utils._sklearn_compat import InvalidParameterError

TIGHT = dict(tol=1e-10, max_iter=2000)
#: How closely two L-BFGS runs of one fit agree at ``TIGHT``: each stops where every gradient
#: entry is below ``tol`` or where the objective's relative decrease falls below ``64 eps``
#: (scipy's ``ftol``), whichever comes first, and the factorized products round differently
#: from the joined ones (as in ``test_linear_model.py``).
COEF_TOLERANCE = dict(rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------- data and reference
def scenario(seed, n_classes):
    """A random NormalizedMatrix, its join and class labels that depend on it."""
    rng = np.random.default_rng(seed)
    nm = build(random_scenario(rng, n_target=int(rng.integers(60, 90))),
               gather_thin=seed % 2 == 1)
    T = nm.toarray()
    return nm, T, labels(T, rng, n_classes), rng


def labels(T, rng, n_classes):
    """Labels cut from a noisy linear function of ``T`` at its quantiles."""
    values = T @ rng.standard_normal(T.shape[1]) + rng.standard_normal(T.shape[0])
    return np.digitize(values, np.quantile(values, np.linspace(0, 1, n_classes + 1)[1:-1]))


def left_join_star(n_rows=120, seed=0):
    """A fact table with two dimensions, one reached through a left join."""
    rng = np.random.default_rng(seed)
    to_products = rng.integers(0, 8, n_rows)
    to_products[rng.random(n_rows) < 0.25] = -1
    nm = NormalizedMatrix.from_matrices(
        [rng.standard_normal((n_rows, 2)), rng.standard_normal((15, 3)),
         rng.standard_normal((8, 2))],
        [np.arange(n_rows), rng.integers(0, 15, n_rows), to_products])
    T = nm.toarray()
    return nm, T, labels(T, rng, 2)


def reference(**params):
    """scikit-learn's LogisticRegressionCV with the L2 penalty and the attributes of its
    versions 1.7 to 1.9 (``use_legacy_attributes`` where it exists)."""
    if "use_legacy_attributes" in LogisticRegressionCV().get_params():
        params["use_legacy_attributes"] = True
    return LogisticRegressionCV(**params)


def fit_reference(X, y, sample_weight=None, **params):
    # On one BLAS thread, as our small fits run: scipy's L-BFGS-B calls BLAS on vectors of
    # a few entries, where waking more threads costs more than they bring.
    with warnings.catch_warnings(), threadpool_limits(1, user_api="blas"):
        warnings.simplefilter("ignore", FutureWarning)  # l1_ratios' default, from 1.8
        return reference(**params).fit(X, y, sample_weight=sample_weight)


def assert_same_model(model, expected, *, score_atol=1e-12):
    """The fitted attributes of ``model`` are ``expected``'s: the same Cs, choice of C and
    (to rounding) scores; coefficients to the solvers' tolerance."""
    assert list(model.scores_) == list(expected.scores_)
    assert list(model.coefs_paths_) == list(expected.coefs_paths_)
    assert_allclose(model.Cs_, expected.Cs_, rtol=1e-15)
    assert_allclose(model.C_, expected.C_, rtol=1e-15)
    assert model.C_.shape == expected.C_.shape
    assert model.n_iter_.shape == expected.n_iter_.shape
    assert_array_equal(model.classes_, expected.classes_)
    for key, path in expected.coefs_paths_.items():
        assert model.coefs_paths_[key].shape == path.shape
        assert_allclose(model.coefs_paths_[key], path, **COEF_TOLERANCE)
        assert_allclose(model.scores_[key], expected.scores_[key], atol=score_atol)
    assert_allclose(model.coef_, expected.coef_, **COEF_TOLERANCE)
    assert_allclose(model.intercept_, expected.intercept_, **COEF_TOLERANCE)


# ---------------------------------------------------------------------- same model as sklearn
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("refit", [True, False])
def test_matches_sklearn_on_the_join(seed, n_classes, refit):
    nm, T, y, rng = scenario(seed, n_classes)
    sample_weight = rng.random(len(y)) + 0.5 if seed % 2 else None
    splitter = (StratifiedKFold(3, shuffle=True, random_state=seed) if seed < 2
                else KFold(4, shuffle=True, random_state=seed))
    params = dict(Cs=[1e-3, 0.1, 10.0], cv=list(splitter.split(T, y)), refit=refit, **TIGHT)
    model = FactorizedLogisticRegressionCV(strategy="factorized", **params)
    model.fit(nm, y, sample_weight=sample_weight)
    expected = fit_reference(T, y, sample_weight, **params)
    assert model.strategy_ == "factorized"
    assert_same_model(model, expected)
    assert_allclose(model.predict_proba(nm), expected.predict_proba(T), atol=1e-4)
    assert_array_equal(model.predict(nm), expected.predict(T))


@pytest.mark.parametrize("weighted", [False, True])
def test_a_left_join_matches_sklearn(weighted):
    nm, T, y = left_join_star()
    sample_weight = np.random.default_rng(1).uniform(0.5, 2, len(y)) if weighted else None
    params = dict(Cs=[0.01, 0.3, 10.0], cv=StratifiedKFold(5), **TIGHT)
    model = FactorizedLogisticRegressionCV(strategy="factorized", **params)
    model.fit(nm, y, sample_weight=sample_weight)
    assert_same_model(model, fit_reference(T, y, sample_weight, **params))


def test_a_wide_onehot_star_matches_sklearn():
    with sources_as_given():  # the one-hot blocks stay sparse, small as they are
        X, _, y = make_onehot_star(300, (60, 20), n_categories=(3,), n_classes=3,
                                   return_X_y=True, random_state=0)
    assert any(sp.issparse(block.source) for block in X.blocks)
    params = dict(Cs=[0.1, 1.0, 10.0], cv=KFold(3, shuffle=True, random_state=0), **TIGHT)
    model = FactorizedLogisticRegressionCV(strategy="factorized", **params).fit(X, y)
    expected = fit_reference(sp.csr_matrix(X.toarray()), y, **params)
    assert_same_model(model, expected)


@settings(max_examples=10, deadline=None)
@given(scenarios(n_target=48).filter(lambda pair: pair[0].shape[1] > 0),
       st.integers(0, 2**32 - 1))
def test_random_scenarios_match_sklearn(scenario, seed):
    nm, T = scenario
    rng = np.random.default_rng(seed)
    y = labels(T, rng, 2)
    sample_weight = rng.uniform(0.5, 2, len(y))
    params = dict(Cs=[0.05, 1.0, 20.0], cv=KFold(3, shuffle=True, random_state=0), **TIGHT)
    model = FactorizedLogisticRegressionCV(strategy="factorized", **params)
    model.fit(nm, y, sample_weight=sample_weight)
    assert_same_model(model, fit_reference(T, y, sample_weight, **params))


def test_scorers_are_told_every_class():
    """A fold without some class still scores by log loss over all classes, as scikit-learn
    scores it; and so do scorers given as callables. (The training rows then lack a class too,
    whose intercept has no finite optimum: only the scores and the C are compared.)"""
    nm, T, y, _ = scenario(0, 3)
    order = np.argsort(y, kind="stable")
    nm, T, y = nm[order], T[order], y[order]  # unshuffled folds then lack classes
    for scoring in ["neg_log_loss", get_scorer("neg_log_loss")]:
        params = dict(Cs=[0.1, 1.0], cv=KFold(3), scoring=scoring, **TIGHT)
        model = FactorizedLogisticRegressionCV(strategy="factorized", **params).fit(nm, y)
        expected = fit_reference(T, y, **params)
        assert_allclose(model.C_, expected.C_)
        for key, scores in expected.scores_.items():
            assert_allclose(model.scores_[key], scores, rtol=1e-4)


def test_materialized_and_plain_inputs_give_the_same_model():
    nm, T, y = left_join_star()
    params = dict(Cs=4, cv=3, **TIGHT)
    factorized = FactorizedLogisticRegressionCV(strategy="factorized", **params).fit(nm, y)
    for X, strategy in [(nm, "materialized"), (T, "auto"), (sp.coo_matrix(T), "auto")]:
        model = FactorizedLogisticRegressionCV(strategy=strategy, **params).fit(X, y)
        assert model.strategy_ == "materialized"
        assert_allclose(model.C_, factorized.C_)
        assert_allclose(model.coef_, factorized.coef_, atol=1e-7)
        assert_allclose(model.scores_[1], factorized.scores_[1])


def test_no_penalty_and_class_weight_as_sklearn():
    nm, T, y, _ = scenario(1, 2)
    params = dict(Cs=[np.inf, 1.0], cv=StratifiedKFold(3), class_weight="balanced", **TIGHT)
    model = FactorizedLogisticRegressionCV(strategy="factorized", **params).fit(nm, y)
    expected = fit_reference(T, y, **params)
    assert_allclose(model.C_, expected.C_)
    assert_allclose(model.scores_[1], expected.scores_[1])
    assert_allclose(model.coefs_paths_[1][:, 1], expected.coefs_paths_[1][:, 1], atol=1e-6)


def test_an_int_cs_is_sklearns_grid_and_the_refit_starts_from_the_folds():
    nm, T, y = left_join_star()
    model = FactorizedLogisticRegressionCV(Cs=3, cv=3, strategy="factorized").fit(nm, y)
    assert_allclose(model.Cs_, [1e-4, 1.0, 1e4])
    best = int(np.argmax(model.scores_[1].sum(axis=0)))
    assert model.C_[0] == model.Cs_[best]
    one = FactorizedLogisticRegression(C=model.C_[0], **TIGHT).fit(nm, y)
    assert_allclose(model.coef_, one.coef_, atol=1e-3)


def test_score_uses_the_scoring():
    nm, T, y = left_join_star()
    model = FactorizedLogisticRegressionCV(Cs=2, cv=3, scoring="neg_log_loss").fit(nm, y)
    assert model.score(nm, y) == pytest.approx(get_scorer("neg_log_loss")(model, nm, y))
    weights = np.linspace(0.5, 1.5, len(y))
    assert model.score(nm, y, sample_weight=weights) == pytest.approx(
        get_scorer("neg_log_loss")(model, nm, y, sample_weight=weights))
    accuracy = FactorizedLogisticRegressionCV(Cs=2, cv=3).fit(nm, y)
    assert accuracy.score(nm, y) == np.mean(accuracy.predict(nm) == y)


# ---------------------------------------------------------------------- scikit-learn's tools
def test_in_a_pipeline_and_cross_validate():
    nm, T, y = left_join_star()
    pipeline = make_pipeline(FactorizedStandardScaler(),
                             FactorizedLogisticRegressionCV(Cs=3, cv=3))
    pipeline.fit(nm, y)
    assert pipeline.score(nm, y) > 0.5
    results = cross_validate(FactorizedLogisticRegressionCV(Cs=3, cv=3), nm, y, cv=3,
                             return_estimator=True)
    on_join = cross_validate(FactorizedLogisticRegressionCV(Cs=3, cv=3), T, y, cv=3)
    assert_allclose(results["test_score"], on_join["test_score"])
    assert all(e.strategy_ in ("factorized", "materialized") for e in results["estimator"])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_iterations_are_reported_per_fold_and_c():
    nm, _, y = left_join_star()
    model = FactorizedLogisticRegressionCV(Cs=4, cv=3, max_iter=3).fit(nm, y)
    assert model.n_iter_.shape == (1, 3, 4)
    assert model.n_iter_.dtype == np.int32
    assert (model.n_iter_ <= 3).all()
    with pytest.warns(ConvergenceWarning):
        FactorizedLogisticRegressionCV(Cs=2, cv=2, max_iter=1).fit(nm, y)


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("params, match", [
    ({"Cs": 0}, "'Cs' parameter"),
    ({"cv": "five"}, "'cv' parameter"),
    ({"scoring": "no-such-scorer"}, "'scoring' parameter"),
    ({"refit": "yes"}, "'refit' parameter"),
    ({"max_iter": -1}, "'max_iter' parameter"),
    ({"class_weight": "even"}, "'class_weight' parameter"),
    ({"strategy": "joined"}, "'strategy' parameter"),
])
def test_bad_parameters_get_sklearns_errors(params, match):
    nm, _, y = left_join_star()
    with pytest.raises(InvalidParameterError, match=match):
        FactorizedLogisticRegressionCV(**params).fit(nm, y)


@pytest.mark.parametrize("Cs", [[], [1.0, 0.0], [-1.0], ["a"], [[1.0, 2.0]], [np.nan]])
def test_bad_cs_are_named(Cs):
    nm, _, y = left_join_star()
    with pytest.raises(ValueError, match="Cs must be"):
        FactorizedLogisticRegressionCV(Cs=Cs).fit(nm, y)


def test_one_class_and_bad_weights_are_refused():
    nm, _, y = left_join_star()
    with pytest.raises(ValueError, match="at least 2 classes"):
        FactorizedLogisticRegressionCV().fit(nm, np.zeros(len(y)))
    with pytest.raises(ValueError, match="sample_weight"):
        FactorizedLogisticRegressionCV().fit(nm, y, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="class"):
        FactorizedLogisticRegressionCV(class_weight={7: 1.0}).fit(nm, y)
    with pytest.raises(ValueError, match="n_splits"):
        FactorizedLogisticRegressionCV(cv=len(y) + 1).fit(nm, y)
