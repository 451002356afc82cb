"""The least-squares solvers on a one-hot star against scikit-learn's on the CSR join."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_ilargi import FactorizedLinearRegression, FactorizedRidge, config_context
from sklearn_ilargi.datasets import make_onehot_star

TIGHT = 1e-10  # the iterative solvers' tolerance where they are compared


@pytest.fixture(scope="module")
def star():
    """About 400 one-hot columns (ids and categories of two entities) and a numeric column
    of each table; the join as CSR; sample weights."""
    X, y, _ = make_onehot_star(2000, (300, 100), n_categories=(5,), n_numeric=1, offset=0.0,
                               return_X_y=True, random_state=0)
    weights = np.random.default_rng(0).uniform(0.5, 2.0, X.shape[0])
    return X, X.materialize(sparse=True), y, weights


def assert_same_predictions(ours, theirs, X, T, rtol):
    expected = theirs.predict(T)
    assert_allclose(ours.predict(X), expected, rtol=rtol, atol=rtol * np.abs(expected).max())


ITERATIVE = [
    (FactorizedLinearRegression, LinearRegression, {"solver": "lsqr"}, {}),
    (FactorizedRidge, Ridge, {"solver": "lsqr", "alpha": 0.5}, {"solver": "lsqr", "alpha": 0.5}),
    (FactorizedRidge, Ridge, {"solver": "sparse_cg", "alpha": 0.5},
     {"solver": "sparse_cg", "alpha": 0.5}),
]


@pytest.mark.parametrize("ours, theirs, our_params, their_params", ITERATIVE,
                         ids=["LinearRegression-lsqr", "Ridge-lsqr", "Ridge-sparse_cg"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
def test_iterative_solvers_match_sklearn_on_the_csr_join(star, ours, theirs, our_params,
                                                         their_params, fit_intercept,
                                                         weighted, strategy):
    X, T, y, weights = star
    sample_weight = weights if weighted else None
    model = ours(fit_intercept=fit_intercept, tol=TIGHT, strategy=strategy, **our_params)
    model.fit(X, y, sample_weight=sample_weight)
    reference = theirs(fit_intercept=fit_intercept, tol=TIGHT, **their_params).fit(
        T, y, sample_weight=sample_weight)
    assert model.strategy_ == strategy and model.decision_.solver == our_params["solver"]
    assert model.rank_ is None if ours is FactorizedLinearRegression else True
    assert np.all(np.asarray(model.n_iter_) > 1)
    assert_same_predictions(model, reference, X, T, rtol=1e-6)
    assert_allclose(model.coef_, reference.coef_, atol=1e-5 * np.abs(reference.coef_).max())


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_closed_forms_match_sklearn_on_the_csr_join(star, fit_intercept, weighted):
    X, T, y, weights = star
    sample_weight = weights if weighted else None
    pairs = [(FactorizedLinearRegression(solver="lstsq", fit_intercept=fit_intercept),
              LinearRegression(fit_intercept=fit_intercept, tol=TIGHT)),
             (FactorizedRidge(solver="cholesky", alpha=0.5, fit_intercept=fit_intercept),
              Ridge(alpha=0.5, fit_intercept=fit_intercept, tol=TIGHT))]
    for model, reference in pairs:
        model.fit(X, y, sample_weight=sample_weight)
        reference.fit(T, y, sample_weight=sample_weight)
        assert model.n_iter_ is not None and np.all(np.asarray(model.n_iter_) == 1)
        assert_same_predictions(model, reference, X, T, rtol=1e-6)


@pytest.mark.parametrize("ours, closed_form, iterative, theirs",
                         [(FactorizedLinearRegression, "lstsq", "lsqr", LinearRegression),
                          (FactorizedRidge, "cholesky", "sparse_cg", Ridge)])
def test_auto_takes_the_closed_form_only_up_to_the_column_limit(star, ours, closed_form,
                                                                iterative, theirs):
    X, T, y, _ = star
    narrow = ours(tol=TIGHT).fit(X, y)
    assert narrow.decision_.solver == closed_form
    assert f"solver: {closed_form} ({X.shape[1]} columns, at most" in narrow.decision_.explain()
    with config_context(closed_form_max_columns=X.shape[1] - 1):
        wide = ours(tol=TIGHT).fit(X, y)
    assert wide.decision_.solver == iterative
    assert wide.decision_.profile.gram == 0 and wide.decision_.features["gram"] == 0
    explained = wide.decision_.explain()
    assert f"solver: {iterative} (not {closed_form}: X has {X.shape[1]} columns" in explained
    # scikit-learn's default on the CSR join is that same iterative solver
    reference = theirs(tol=TIGHT).fit(T, y)
    assert_same_predictions(wide, reference, X, T, rtol=1e-6)
    assert_same_predictions(narrow, reference, X, T, rtol=1e-6)


def test_a_closed_form_that_does_not_fit_in_memory_is_refused_before_it_allocates(
        star):
    X, _, y, _ = star
    # 1 MiB available: the closed form's 413 x 413 grams take about 5 MiB
    with config_context(memory_limit=2**20):
        for model in (FactorizedRidge(solver="cholesky"),
                      FactorizedLinearRegression(solver="lstsq")):
            with pytest.raises(MemoryError, match=rf"{type(model).__name__} with solver "
                                                  rf"'{model.solver}' cannot run: its dense "
                                                  rf"{X.shape[1]} x {X.shape[1]} gram takes"
                                                  r".*\(see the solver parameter\)"):
                model.fit(X, y)
        auto = FactorizedRidge(tol=TIGHT).fit(X, y)
    assert auto.decision_.solver == "sparse_cg"
    assert "host has 1.00 MiB available" in auto.decision_.solver_reason


def test_multiple_targets_are_one_solve_each(star):
    X, T, y, _ = star
    Y = np.column_stack([y, -2 * y + X.materialize(sparse=True)[:, 0].toarray().ravel()])
    alpha = np.array([0.5, 3.0])
    for solver in ("lsqr", "sparse_cg"):
        model = FactorizedRidge(alpha=alpha, solver=solver, tol=TIGHT).fit(X, Y)
        reference = Ridge(alpha=alpha, solver=solver, tol=TIGHT).fit(T, Y)
        assert model.n_iter_.shape == (2,) and model.coef_.shape == (2, X.shape[1])
        assert_same_predictions(model, reference, X, T, rtol=1e-6)
    model = FactorizedLinearRegression(solver="lsqr", tol=TIGHT).fit(X, Y)
    assert_same_predictions(model, LinearRegression(tol=TIGHT).fit(T, Y), X, T, rtol=1e-6)
    assert isinstance(model.n_iter_, int)


def test_sparse_cg_solves_the_kernel_system_where_x_is_wider_than_tall():
    X, y, _ = make_onehot_star(400, (600, 50), n_categories=(4,), return_X_y=True,
                               random_state=1)
    T = X.materialize(sparse=True)
    assert X.shape[1] > X.shape[0]
    for weights in (None, np.linspace(0.5, 1.5, X.shape[0])):
        model = FactorizedRidge(solver="sparse_cg", tol=TIGHT).fit(X, y, sample_weight=weights)
        reference = Ridge(solver="sparse_cg", tol=TIGHT).fit(T, y, sample_weight=weights)
        assert_same_predictions(model, reference, X, T, rtol=1e-6)


def test_lsqr_keeps_the_digits_of_a_column_with_a_large_offset():
    # 1e7 +- 1: centered by rank-one terms, scikit-learn's sparse LSQR would lose them; the
    # centered products subtract the mean inside the dense sources.
    X, y, _ = make_onehot_star(2000, (60, 20), n_categories=(3,), n_numeric=1, offset=1e7,
                               return_X_y=True, random_state=2)
    dense = X.materialize(sparse=False)
    reference = LinearRegression().fit(dense, y)
    model = FactorizedLinearRegression(solver="lsqr", tol=TIGHT).fit(X, y)
    numeric = np.flatnonzero(np.abs(dense.mean(axis=0)) > 1e6)
    assert len(numeric) == 3
    assert_allclose(model.coef_[numeric], reference.coef_[numeric], rtol=1e-6)
    expected = reference.predict(dense)
    assert_allclose(model.predict(X), expected, rtol=1e-7, atol=1e-7 * np.abs(expected).max())


@pytest.mark.parametrize("model", [FactorizedLinearRegression(solver="lsqr", max_iter=2),
                                   FactorizedRidge(solver="lsqr", max_iter=2),
                                   FactorizedRidge(solver="sparse_cg", max_iter=2)],
                         ids=["LinearRegression-lsqr", "Ridge-lsqr", "Ridge-sparse_cg"])
def test_a_solve_stopped_by_max_iter_warns(star, model):
    X, _, y, _ = star
    with pytest.warns(ConvergenceWarning, match=rf"{model.solver} solver did not converge "
                                                "within 2 iterations"):
        model.fit(X, y)
    assert np.all(np.asarray(model.n_iter_) == 2)


def test_the_solver_parameter_is_checked():
    X, y, _ = make_onehot_star(50, (10, 5), n_categories=(), return_X_y=True, random_state=0)
    with pytest.raises(InvalidParameterError, match="'solver' parameter"):
        FactorizedLinearRegression(solver="sparse_cg").fit(X, y)
    with pytest.raises(InvalidParameterError, match="'solver' parameter"):
        FactorizedRidge(solver="svd").fit(X, y)
    with pytest.raises(InvalidParameterError, match="'max_iter' parameter"):
        FactorizedLinearRegression(solver="lsqr", max_iter=0).fit(X, y)


def test_plain_sparse_input_takes_the_same_solver_choice(star):
    _, T, y, _ = star
    with config_context(closed_form_max_columns=10):
        model = FactorizedLinearRegression(tol=TIGHT).fit(T, y)
    assert model.decision_.solver == "lsqr" and model.strategy_ == "materialized"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # converges, no warning
        reference = LinearRegression(tol=TIGHT).fit(T, y)
    assert_allclose(model.predict(T), reference.predict(T), rtol=1e-6,
                    atol=1e-6 * np.abs(y).max())


@pytest.mark.parametrize("sparse", [False, True])
def test_only_a_solve_without_penalty_looks_for_constant_columns(monkeypatch, sparse):
    """Finding the constant columns reads all of X: a penalized Cholesky solve does without;
    least squares without penalty looks once, and gives a constant column coefficient 0."""
    import scipy.sparse as sp

    from sklearn_ilargi.utils import TrainingMatrix

    rng = np.random.default_rng(5)
    X = np.column_stack([rng.standard_normal((300, 3)), np.full(300, 7.0)])
    y = X[:, :3] @ np.array([1.0, -2.0, 0.5]) + rng.standard_normal(300)
    dense, X = X, sp.csr_matrix(X) if sparse else X
    calls = []
    looked_up = TrainingMatrix.constant_columns

    def counted(self):
        calls.append(1)
        return looked_up(self)

    monkeypatch.setattr(TrainingMatrix, "constant_columns", counted)
    ridge = FactorizedRidge(alpha=np.array([0.5])).fit(X, y)
    assert calls == []
    assert_allclose(ridge.coef_, Ridge(alpha=0.5).fit(dense, y).coef_, rtol=1e-9,
                    atol=1e-10)
    ols = FactorizedLinearRegression().fit(X, y)
    assert len(calls) == 1 and ols.coef_[3] == 0.0
    assert_allclose(ols.coef_, LinearRegression().fit(dense, y).coef_, atol=1e-9)
