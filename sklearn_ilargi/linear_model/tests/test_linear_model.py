"""The linear models on a NormalizedMatrix against scikit-learn's on the materialized join."""

import pickle

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV, cross_val_score, train_test_split

from sklearn_ilargi.tests._scenarios import build, random_scenario
from sklearn_ilargi import (
    FactorizedLinearRegression,
    FactorizedLogisticRegression,
    FactorizedRidge,
    NormalizedMatrix,
    config_context,
)
from sklearn_ilargi.backend import gpu_available

SEEDS = range(12)
LOGISTIC_TOL = dict(tol=1e-10, max_iter=2000)


def scenario(seed, sparse=None):
    """A random NormalizedMatrix with enough rows to fit, and its reference join."""
    rng = np.random.default_rng(seed)
    nm = build(random_scenario(rng, n_target=int(rng.integers(40, 80)), sparse=sparse),
               gather_thin=seed % 2 == 1)
    return nm, nm.toarray(), rng


def star(n_rows=300, seed=0):
    """A fact table with two dimensions, one reached through a left join."""
    rng = np.random.default_rng(seed)
    fact = rng.standard_normal((n_rows, 3))
    customers = rng.standard_normal((25, 4))
    products = rng.standard_normal((8, 2))
    to_products = rng.integers(0, 8, n_rows)
    to_products[rng.random(n_rows) < 0.2] = -1
    nm = NormalizedMatrix.from_matrices(
        [fact, customers, products], [np.arange(n_rows), rng.integers(0, 25, n_rows),
                                      to_products],
        feature_names=[f"x{j}" for j in range(9)],
    )
    T = nm.materialize()
    y = T @ rng.standard_normal(9) + 0.3 * rng.standard_normal(n_rows)
    return nm, T, y


def labels(values, n_classes):
    return np.digitize(values, np.quantile(values, np.linspace(0, 1, n_classes + 1)[1:-1]))


# ---------------------------------------------------------------------- same model as sklearn
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_least_squares_match_sklearn_on_the_join(seed, fit_intercept):
    nm, T, rng = scenario(seed)
    y = T @ rng.standard_normal(T.shape[1]) + rng.standard_normal(T.shape[0])
    sample_weight = rng.random(T.shape[0]) if seed % 2 else None
    pairs = [(FactorizedLinearRegression, LinearRegression, {}),
             (FactorizedRidge, Ridge, {"alpha": 0.7})]
    for ours, theirs, params in pairs:
        model = ours(fit_intercept=fit_intercept, strategy="factorized", **params)
        model.fit(nm, y, sample_weight=sample_weight)
        reference = theirs(fit_intercept=fit_intercept, **params).fit(
            T, y, sample_weight=sample_weight)
        assert model.strategy_ == "factorized"
        assert_allclose(model.coef_, reference.coef_, rtol=1e-8, atol=1e-8)
        assert_allclose(model.intercept_, reference.intercept_, rtol=1e-8, atol=1e-8)
        assert_allclose(model.predict(nm), reference.predict(T), rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_logistic_matches_sklearn_on_the_join(seed, n_classes):
    nm, T, rng = scenario(seed)
    y = labels(T @ rng.standard_normal(T.shape[1]) + rng.standard_normal(T.shape[0]),
               n_classes)
    sample_weight = rng.random(T.shape[0]) + 0.5 if seed % 2 else None
    model = FactorizedLogisticRegression(C=0.5, strategy="factorized", **LOGISTIC_TOL)
    model.fit(nm, y, sample_weight=sample_weight)
    reference = LogisticRegression(C=0.5, **LOGISTIC_TOL).fit(T, y, sample_weight=sample_weight)
    assert_allclose(model.coef_, reference.coef_, atol=1e-4)
    assert_allclose(model.intercept_, reference.intercept_, atol=1e-4)
    assert_allclose(model.predict_proba(nm), reference.predict_proba(T), atol=1e-4)
    assert_allclose(model.predict_log_proba(nm), np.log(model.predict_proba(nm)), atol=1e-9)
    assert_allclose(model.decision_function(nm), reference.decision_function(T), atol=1e-4)
    assert model.score(nm, y) == reference.score(T, y)


def test_sparse_sources_and_multi_target():
    nm, T, rng = scenario(3, sparse=True)
    assert any(sp.issparse(block.source) for block in nm.blocks)
    Y = T @ rng.standard_normal((T.shape[1], 3))
    model = FactorizedRidge(alpha=[0.1, 1.0, 0.0], strategy="factorized").fit(nm, Y)
    reference = Ridge(alpha=[0.1, 1.0, 0.0], solver="svd").fit(T, Y)
    assert model.coef_.shape == (3, T.shape[1])
    assert_allclose(model.coef_, reference.coef_, atol=1e-8)
    assert_allclose(model.predict(nm), reference.predict(T), atol=1e-8)


def test_rank_deficient_join_gives_the_minimum_norm_solution():
    # One-hot dimension columns sum to one: with the intercept the join is rank deficient.
    rng = np.random.default_rng(1)
    n_rows = 200
    one_hot = np.eye(6)
    fact = rng.standard_normal((n_rows, 2))
    nm = NormalizedMatrix.from_matrices(
        [fact, one_hot, fact[:, :1]], [np.arange(n_rows), rng.integers(0, 6, n_rows),
                                       np.arange(n_rows)],
        [[0, 1], np.arange(2, 8), [9]], n_columns=10)  # a duplicate and an empty column
    T = nm.materialize()
    y = T @ rng.standard_normal(10) + rng.standard_normal(n_rows)
    model = FactorizedLinearRegression(strategy="factorized").fit(nm, y)
    reference = LinearRegression().fit(T, y)
    assert model.rank_ == 7
    assert_allclose(model.coef_, reference.coef_, atol=1e-8)
    assert_allclose(model.intercept_, reference.intercept_, atol=1e-8)


def test_badly_scaled_rank_deficient_join_takes_sklearn_rank_decision():
    # Prices in the thousands next to one-hot columns, as in TPC-H: scikit-learn's lstsq
    # drops singular values below tol * largest; the closed form makes the same decision.
    rng = np.random.default_rng(2)
    n_rows = 400
    fact = np.column_stack([rng.gamma(2.0, 5000.0, n_rows), 9000 + rng.normal(0, 700, n_rows)])
    one_hot = np.eye(5)
    nm = NormalizedMatrix.from_matrices(
        [fact, one_hot, rng.standard_normal((30, 2))],
        [np.arange(n_rows), rng.integers(0, 5, n_rows), rng.integers(0, 30, n_rows)])
    T = nm.materialize()
    y = T @ rng.standard_normal(9) + rng.standard_normal(n_rows)
    model = FactorizedLinearRegression(strategy="factorized").fit(nm, y)
    reference = LinearRegression().fit(T, y)
    assert model.rank_ == reference.rank_
    assert_allclose(model.predict(nm), reference.predict(T), rtol=1e-9)
    assert_allclose(model.coef_, reference.coef_, rtol=1e-6, atol=1e-6)


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
@pytest.mark.parametrize("Estimator", [FactorizedLinearRegression, FactorizedRidge,
                                       FactorizedLogisticRegression])
def test_materialized_strategy_and_plain_input_agree(Estimator):
    nm, T, y = star()
    if Estimator is FactorizedLogisticRegression:
        y = labels(y, 3)
    params = LOGISTIC_TOL if Estimator is FactorizedLogisticRegression else {}
    factorized = Estimator(strategy="factorized", **params).fit(nm, y)
    materialized = Estimator(strategy="materialized", **params).fit(nm, y)
    dense = Estimator(**params).fit(T, y)
    sparse = Estimator(**params).fit(sp.csr_matrix(T), y)
    assert materialized.strategy_ == dense.strategy_ == "materialized"
    for other in (materialized, dense, sparse):
        assert_allclose(factorized.coef_, other.coef_, atol=1e-7)
        assert_allclose(factorized.predict(T), other.predict(nm), atol=1e-7)
    assert factorized.backend_ == "cpu"
    assert "factorized" in factorized.decision_.explain()


# ---------------------------------------------------------------------- gradient descent
def test_gradient_descent_reaches_the_closed_form():
    nm, T, y = star()
    exact = FactorizedRidge(alpha=1.0, strategy="factorized").fit(nm, y)
    gd = FactorizedRidge(alpha=1.0, solver="gd", tol=1e-10, max_iter=20000,
                         strategy="factorized").fit(nm, y)
    assert_allclose(gd.coef_, exact.coef_, atol=1e-6)
    assert 1 < gd.n_iter_[0] < 20000
    ols = FactorizedLinearRegression(solver="gd", tol=1e-10, max_iter=20000,
                                     strategy="factorized").fit(nm, y)
    assert_allclose(ols.coef_, LinearRegression().fit(T, y).coef_, atol=1e-6)


def test_logistic_gradient_descent_approaches_lbfgs():
    nm, T, y = star()
    y = labels(y, 2)
    lbfgs = FactorizedLogisticRegression(strategy="factorized", **LOGISTIC_TOL).fit(nm, y)
    gd = FactorizedLogisticRegression(solver="gd", tol=1e-7, max_iter=20000,
                                      strategy="factorized").fit(nm, y)
    assert_allclose(gd.coef_, lbfgs.coef_, atol=1e-4)
    with pytest.warns(ConvergenceWarning):
        FactorizedLogisticRegression(solver="gd", max_iter=2).fit(nm, y)


def test_warm_start_and_class_weight():
    nm, T, y = star()
    y = labels(y, 3)
    model = FactorizedLogisticRegression(warm_start=True, strategy="factorized",
                                         **LOGISTIC_TOL).fit(nm, y)
    first = model.n_iter_[0]
    model.fit(nm, y)
    assert model.n_iter_[0] < first
    weighted = FactorizedLogisticRegression(class_weight="balanced", strategy="factorized",
                                            **LOGISTIC_TOL).fit(nm, y)
    reference = LogisticRegression(class_weight="balanced", **LOGISTIC_TOL).fit(T, y)
    assert_allclose(weighted.coef_, reference.coef_, atol=1e-4)


# ---------------------------------------------------------------------- model selection
ESTIMATORS = [
    (FactorizedRidge(strategy="factorized"), {"alpha": [0.1, 10.0]}, False),
    (FactorizedLinearRegression(strategy="factorized"), {"fit_intercept": [True, False]},
     False),
    (FactorizedLogisticRegression(strategy="factorized"), {"C": [0.1, 1.0]}, True),
]


@pytest.fixture
def count_materializations(monkeypatch):
    """Counts every join of a NormalizedMatrix, on purpose or through numpy."""
    calls = []
    materialize = NormalizedMatrix.materialize

    def counted(self, *args, **kwargs):
        calls.append(self.shape)
        return materialize(self, *args, **kwargs)

    monkeypatch.setattr(NormalizedMatrix, "materialize", counted)
    return calls


@pytest.mark.parametrize("estimator, grid, classify", ESTIMATORS)
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_search_never_materializes(estimator, grid, classify, n_jobs,
                                        count_materializations):
    nm, _, y = star()
    count_materializations.clear()  # star() builds its reference join
    estimator = clone(estimator)
    if classify:
        y = labels(y, 2)
    # Threads, so that the counter sees the workers' calls too.
    with joblib.parallel_backend("threading", n_jobs=n_jobs):
        search = GridSearchCV(estimator, grid, cv=3, n_jobs=n_jobs).fit(nm, y)
        scores = cross_val_score(estimator, nm, y, cv=3, n_jobs=n_jobs)
    assert count_materializations == []
    assert search.best_estimator_.strategy_ == "factorized"
    assert np.isfinite(scores).all()
    materialized = GridSearchCV(estimator.set_params(strategy="materialized"), grid, cv=3)
    materialized.fit(nm, y)
    assert count_materializations  # the counter does see joins
    assert_allclose(materialized.cv_results_["mean_test_score"],
                    search.cv_results_["mean_test_score"], atol=1e-6)


def test_grid_search_in_worker_processes_matches_one_process():
    nm, _, y = star()
    grid = {"alpha": [0.1, 1.0, 10.0]}
    one = GridSearchCV(FactorizedRidge(strategy="factorized"), grid, cv=3).fit(nm, y)
    two = GridSearchCV(FactorizedRidge(strategy="factorized"), grid, cv=3, n_jobs=2).fit(nm, y)
    assert_allclose(one.cv_results_["mean_test_score"], two.cv_results_["mean_test_score"],
                    rtol=1e-12)


def test_train_test_split_keeps_the_factorized_form(count_materializations):
    nm, T, y = star()
    count_materializations.clear()  # star() builds its reference join
    nm_train, nm_test, y_train, y_test = train_test_split(nm, y, random_state=0)
    T_train, T_test, _, _ = train_test_split(T, y, random_state=0)
    assert isinstance(nm_train, NormalizedMatrix)
    model = FactorizedRidge(strategy="factorized").fit(nm_train, y_train)
    score = model.score(nm_test, y_test)
    assert count_materializations == []
    assert_allclose(score, Ridge().fit(T_train, y_train).score(T_test, y_test), rtol=1e-9)


# ---------------------------------------------------------------------- attributes, pickling
@pytest.mark.parametrize("Estimator", [FactorizedLinearRegression, FactorizedRidge,
                                       FactorizedLogisticRegression])
def test_pickle_and_feature_names(Estimator):
    nm, T, y = star()
    if Estimator is FactorizedLogisticRegression:
        y = labels(y, 2)
    model = Estimator(strategy="factorized").fit(nm, y)
    assert list(model.feature_names_in_) == [f"x{j}" for j in range(9)]
    assert model.n_features_in_ == 9
    restored = pickle.loads(pickle.dumps(model))
    assert_allclose(restored.predict(nm), model.predict(nm))
    assert restored.strategy_ == "factorized"
    assert isinstance(model.coef_, np.ndarray)


# ---------------------------------------------------------------------- bad input
@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
@pytest.mark.parametrize("Estimator", [FactorizedLinearRegression, FactorizedRidge,
                                       FactorizedLogisticRegression])
def test_bad_input_gets_sklearn_errors(Estimator):
    nm, T, y = star()
    if Estimator is FactorizedLogisticRegression:
        y = labels(y, 2)
    bad = T.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        Estimator().fit(bad, y)
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        Estimator().fit(bad, y)
    with pytest.raises(ValueError, match="NaN or infinity"):
        NormalizedMatrix.from_matrices([bad], [np.arange(len(bad))])
    bad_y = np.asarray(y, dtype=float).copy()
    bad_y[0] = np.nan
    with pytest.raises(ValueError, match="Input y contains NaN"):
        Estimator().fit(nm, bad_y)
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array instead"):
        Estimator().fit(T[:, 0], y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        Estimator().fit(nm, y[:-1])
    model = Estimator(strategy="factorized").fit(nm, y)
    with pytest.raises(ValueError, match="X has 8 features, but .* is expecting 9"):
        model.predict(T[:, :8])
    with pytest.raises(ValueError, match="X has 8 features, but .* is expecting 9"):
        model.predict(nm[:, :8])
    renamed = NormalizedMatrix.from_matrices(
        [block.source for block in nm.blocks], [block.row_map.to_numpy() for block in nm.blocks],
        feature_names=[f"z{j}" for j in range(9)])
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict(renamed)
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array instead"):
        model.predict(T[0])


def test_bad_parameters():
    nm, _, y = star()
    with pytest.raises(ValueError, match="solver"):
        FactorizedRidge(solver="svd").fit(nm, y)
    with pytest.raises(ValueError, match="alpha"):
        FactorizedRidge(alpha=-1.0).fit(nm, y)
    with pytest.raises(ValueError, match="learning_rate"):
        FactorizedLinearRegression(solver="gd", learning_rate=0).fit(nm, y)
    with pytest.raises(ValueError, match="strategy"):
        FactorizedRidge(strategy="joined").fit(nm, y)
    with pytest.raises(ValueError, match="only one class"):
        FactorizedLogisticRegression().fit(nm, np.zeros(len(y)))


@pytest.mark.skipif(gpu_available(), reason="a GPU is present")
def test_gpu_backend_without_gpu_is_a_clear_error():
    nm, _, y = star()
    with pytest.raises(RuntimeError, match="backend='gpu'"):
        FactorizedRidge(backend="gpu").fit(nm, y)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
def test_gpu_fit_matches_cpu(strategy):
    nm, T, y = star()
    for Estimator, target in [(FactorizedRidge, y), (FactorizedLogisticRegression,
                                                     labels(y, 3))]:
        cpu = Estimator(strategy=strategy, backend="cpu").fit(nm, target)
        gpu = Estimator(strategy=strategy, backend="gpu").fit(nm, target)
        assert gpu.backend_ == "gpu"
        assert isinstance(gpu.coef_, np.ndarray)
        assert_allclose(gpu.coef_, cpu.coef_, atol=1e-6)


@pytest.mark.parametrize("smallest, cholesky", [(1e-2, True), (1e-9, False), (1e-14, False),
                                                (0.0, False)])
def test_minimum_norm_solve_with_and_without_cholesky(monkeypatch, smallest, cholesky):
    """A clearly full-rank gram is solved by Cholesky, anything near the rank cutoff by the
    eigendecomposition: both give lstsq's minimum-norm solution and rank."""
    import scipy.linalg

    from sklearn_ilargi.linear_model._base import minimum_norm_solve

    eigh = scipy.linalg.eigh
    calls = []
    monkeypatch.setattr(scipy.linalg, "eigh", lambda *a, **k: calls.append(1) or eigh(*a, **k))

    rng = np.random.default_rng(0)
    vectors, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    singular = np.array([3.0, 2.0, 1.5, 1.0, 0.5, np.sqrt(smallest)])
    data = rng.standard_normal((40, 6))
    u, _ = np.linalg.qr(data)
    X = (u * singular) @ vectors.T
    B = rng.standard_normal((40, 2))
    got, rank = minimum_norm_solve(X.T @ X, X.T @ B)
    expected, _, expected_rank, _ = np.linalg.lstsq(X, B, rcond=6 * np.finfo(float).eps ** 0.5)
    assert rank == expected_rank
    assert (not calls) == cholesky
    # The normal equations lose precision as the condition squared: 1e-6 at 1e10.
    assert_allclose(X @ got, X @ expected, atol=1e-5 * np.abs(X @ expected).max())


def test_logistic_products_run_on_one_blas_thread(monkeypatch):
    """The products run with BLAS limited to one thread, whatever the size; the pointwise loss
    runs on one OpenMP thread below ``parallel_loss_samples`` and on all above; the model is
    the same either way."""
    from threadpoolctl import threadpool_info

    from sklearn_ilargi.linear_model import _logistic

    nm, T, rng = scenario(3)
    y = rng.integers(0, 2, T.shape[0])
    seen = []
    loss_gradient = _logistic.LogisticLoss.loss_gradient

    def spy(self, flat):
        blas = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        seen.append((blas, self.n_threads))
        return loss_gradient(self, flat)

    monkeypatch.setattr(_logistic.LogisticLoss, "loss_gradient", spy)
    one = FactorizedLogisticRegression(strategy="factorized").fit(nm, y)
    assert seen and set(seen) == {(1, 1)}
    seen.clear()
    with config_context(parallel_loss_samples=0):
        as_is = FactorizedLogisticRegression(strategy="factorized").fit(nm, y)
    assert set(seen) == {(1, _logistic._openmp_effective_n_threads())}
    assert_allclose(one.coef_, as_is.coef_, rtol=1e-8, atol=1e-10)


def test_unit_weights_take_no_memory_and_cannot_be_written():
    """Without sample_weight, the weights are a read-only view of a single one (a fit over
    many rows holds no array of them), and fit as explicit ones do."""
    from sklearn_ilargi.linear_model._base import check_fit_input

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((50, 3)), rng.standard_normal(50)
    _, _, weights = check_fit_input(FactorizedRidge(), X, y, None)
    assert weights.shape == (50,) and weights.strides == (0,) and (weights == 1).all()
    assert not weights.flags.writeable
    for estimator in (FactorizedRidge(), FactorizedLinearRegression()):
        unit = clone(estimator).fit(X, y)
        ones = clone(estimator).fit(X, y, sample_weight=np.ones(50))
        assert_allclose(unit.coef_, ones.coef_, rtol=1e-12)
