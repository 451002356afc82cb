"""Estimators over a PartitionedMatrix (Dask) give the in-memory fit's model.

Closed forms agree to 1e-9 relative, iterative solvers to their tolerance; ``predict`` and
``transform`` keep the rows in Dask. Most tests run on dask's synchronous scheduler; the
``cluster`` ones on a ``LocalCluster(processes=False, n_workers=2)`` shared by the module.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

dask = pytest.importorskip("dask", reason="the distributed extra (dask) is not installed")
da = pytest.importorskip("dask.array", reason="the distributed extra (dask) is not installed")
distributed = pytest.importorskip("distributed", reason="the distributed extra is not installed")

import joblib  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_validate  # noqa: E402

from sklearn_ilargi import (  # noqa: E402
    FactorizedKMeans,
    FactorizedLinearRegression,
    FactorizedLogisticRegression,
    FactorizedNMF,
    FactorizedPCA,
    FactorizedRidge,
    FactorizedStandardScaler,
    NormalizedMatrix,
    config_context,
)
from sklearn_ilargi.normalized import PartitionedMatrix  # noqa: E402
from sklearn_ilargi.tests._clusters import in_process_client  # noqa: E402
from sklearn_ilargi.tests._scenarios import sources_as_given  # noqa: E402

CHUNKS = (25, 0, 41, 34)


@pytest.fixture(scope="module")
def client():
    with in_process_client() as client:
        yield client


@pytest.fixture
def on_cluster(client):
    with client.as_current(), dask.config.set(scheduler=client.get):
        yield client


@pytest.fixture
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def star(seed=0, offset=0.0, nonnegative=False):
    """The in-memory matrix and the same one over partitions of unequal sizes (one empty):
    a fact table, a dimension with left-join misses, a sparse one-hot dimension."""
    rng = np.random.default_rng(seed)
    n = sum(CHUNKS)
    fact = rng.random((n, 3)) if nonnegative else rng.standard_normal((n, 3)) + offset
    dense = rng.random((8, 2))
    onehot = sp.csr_matrix(np.eye(4)[rng.integers(0, 4, 6)])
    g_dense, g_onehot = rng.integers(-1, 8, n), rng.integers(0, 6, n)
    with sources_as_given():
        reference = NormalizedMatrix.from_matrices([fact, dense, onehot],
                                                   [np.arange(n), g_dense, g_onehot])
        partitioned = NormalizedMatrix.from_matrices(
            [da.from_array(fact, chunks=(CHUNKS, 3)), dense, onehot],
            [da.arange(n, chunks=(CHUNKS,)), da.from_array(g_dense, chunks=30), g_onehot])
    T = reference.materialize(sparse=False)
    y = T @ rng.standard_normal(T.shape[1]) + 0.1 * rng.standard_normal(n)
    return reference, partitioned, y


def relative(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(np.asarray(b)).max(), 1e-300)


@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
@pytest.mark.parametrize("Estimator, params", [
    (FactorizedLinearRegression, {}),
    (FactorizedRidge, {"alpha": 0.5}),
])
def test_least_squares_closed_form(synchronous, Estimator, params, strategy):
    reference, X, y = star(offset=1e6)
    weights = np.random.default_rng(1).random(len(y)) + 0.5
    expected = Estimator(strategy=strategy, **params).fit(reference, y, weights)
    model = Estimator(strategy=strategy, **params).fit(X, da.from_array(y, chunks=33), weights)
    assert model.strategy_ == strategy and model.decision_.solver == expected.decision_.solver
    assert relative(model.coef_, expected.coef_) < 1e-9
    assert model.intercept_ == pytest.approx(expected.intercept_, rel=1e-9)
    predictions = model.predict(X)
    assert isinstance(predictions, da.Array)
    assert_allclose(predictions.compute(), expected.predict(reference), rtol=1e-9)


@pytest.mark.parametrize("Estimator", [FactorizedLinearRegression, FactorizedRidge])
def test_a_dask_target_is_read_where_it_lives(synchronous, Estimator):
    """A closed form over partitions reads a Dask y with the partitions, never assembled in
    one array (no task returns all of its rows); two targets too. An iterative solver reads
    it whole, and fits the same model as from the array."""
    from dask.callbacks import Callback

    reference, X, y = star(offset=1e6)
    Y = np.column_stack([y, 2 * y + 1e6])
    assembled = []

    def watch(key, result, dsk, state, worker_id):
        if isinstance(result, np.ndarray) and result.ndim and result.shape[0] == len(y):
            assembled.append(key)

    for target in (y, Y):
        expected = Estimator().fit(reference, target)
        with Callback(posttask=watch):
            model = Estimator().fit(X, da.from_array(target, chunks=(33,) + target.shape[1:]))
        assert not assembled
        assert relative(model.coef_, expected.coef_) < 1e-9
        assert_allclose(model.intercept_, expected.intercept_, rtol=1e-9)
    iterative = FactorizedRidge(solver="lsqr", tol=1e-10)
    assert relative(clone(iterative).fit(X, da.from_array(y, chunks=33)).coef_,
                    clone(iterative).fit(X, y).coef_) < 1e-12


@pytest.mark.parametrize("bad, message", [
    (np.nan, "Input y contains NaN"),
    (np.inf, "Input y contains infinity"),
])
def test_a_dask_target_is_checked_where_it_lives(synchronous, bad, message):
    _, X, y = star()
    y = y.copy()
    y[50] = bad
    with pytest.raises(ValueError, match=message):
        FactorizedRidge().fit(X, da.from_array(y, chunks=33))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        FactorizedLinearRegression().fit(X, da.from_array(y[:-1], chunks=33))


def test_least_squares_over_products(synchronous):
    reference, X, y = star()
    expected = FactorizedRidge(solver="lsqr", tol=1e-10).fit(reference, y)
    model = FactorizedRidge(solver="lsqr", tol=1e-10).fit(X, y)
    assert relative(model.coef_, expected.coef_) < 1e-7


def test_on_a_cluster(on_cluster):
    reference, X, y = star(offset=1e6)
    X = X.persist()
    expected = FactorizedRidge().fit(reference, y)
    model = FactorizedRidge().fit(X, y)
    assert relative(model.coef_, expected.coef_) < 1e-9
    assert_allclose(model.predict(X).compute(), expected.predict(reference), rtol=1e-9)


def test_the_decision_says_the_input_is_partitioned(synchronous):
    _, X, y = star()
    model = FactorizedRidge().fit(X, y)
    explanation = model.decision_.explain()
    assert "partitioned input: 4 partitions" in explanation
    assert "heuristic" in explanation and "Dask" in explanation
    assert model.backend_ == "cpu" and set(model.decision_.scores) == {
        ("cpu", "factorized"), ("cpu", "materialized")}
    with pytest.raises(ValueError, match="runs on the CPU"):
        FactorizedRidge(backend="gpu").fit(X, y)


def test_pca(synchronous):
    reference, X, _ = star(offset=1e6)
    for solver in ("covariance_eigh", "randomized"):
        expected = FactorizedPCA(n_components=3, svd_solver=solver, random_state=0).fit(
            reference)
        model = FactorizedPCA(n_components=3, svd_solver=solver, random_state=0).fit(X)
        assert_allclose(model.explained_variance_, expected.explained_variance_, rtol=1e-9)
        assert_allclose(np.abs(model.components_), np.abs(expected.components_), rtol=1e-7,
                        atol=1e-9)
        assert_allclose(model.mean_, expected.mean_, rtol=1e-12)
    projected = model.transform(X)
    assert isinstance(projected, da.Array)
    assert_allclose(projected.compute(), expected.transform(reference), rtol=1e-7, atol=1e-7)


def test_standard_scaler(synchronous):
    reference, X, _ = star(offset=1e6)
    weights = np.random.default_rng(2).random(X.shape[0])
    expected = FactorizedStandardScaler().fit(reference, sample_weight=weights)
    model = FactorizedStandardScaler().fit(X, sample_weight=weights)
    assert_allclose(model.mean_, expected.mean_, rtol=1e-12)
    assert_allclose(model.var_, expected.var_, rtol=1e-9)
    scaled = model.transform(X)
    assert isinstance(scaled, PartitionedMatrix)
    assert_allclose(scaled.materialize(sparse=False).compute(),
                    expected.transform(reference).materialize(sparse=False), rtol=1e-9,
                    atol=1e-8)  # values near 1 from columns near 1e6: eps * 1e6 absolute


def test_logistic_regression(synchronous):
    reference, X, y = star()
    labels = (y > np.median(y)).astype(int)
    expected = FactorizedLogisticRegression(tol=1e-8).fit(reference, labels)
    model = FactorizedLogisticRegression(tol=1e-8).fit(X.persist(), labels)
    assert_allclose(model.coef_, expected.coef_, rtol=1e-5, atol=1e-6)
    probabilities = model.predict_proba(X)
    assert isinstance(probabilities, da.Array)
    assert_allclose(probabilities.compute(), expected.predict_proba(reference), atol=1e-6)
    assert (np.asarray(model.predict(X)) == expected.predict(reference)).all()


@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
def test_kmeans(synchronous, strategy):
    reference, X, _ = star(nonnegative=True)
    expected = FactorizedKMeans(n_clusters=3, n_init=1, random_state=0,
                                strategy=strategy).fit(reference)
    model = FactorizedKMeans(n_clusters=3, n_init=1, random_state=0, strategy=strategy).fit(X)
    assert_allclose(model.cluster_centers_, expected.cluster_centers_, rtol=1e-9, atol=1e-12)
    assert (model.labels_ == expected.labels_).all()
    assert (np.asarray(model.predict(X)) == expected.labels_).all()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_nmf(synchronous):
    reference, X, _ = star(nonnegative=True)
    expected = FactorizedNMF(n_components=2, random_state=0, max_iter=15).fit(reference)
    model = FactorizedNMF(n_components=2, random_state=0, max_iter=15).fit(X.persist())
    assert_allclose(model.components_, expected.components_, rtol=1e-7, atol=1e-10)


# ---------------------------------------------------------------------- searches
def test_grid_search_on_the_dask_backend(on_cluster, monkeypatch):
    """joblib's Dask backend scatters the in-memory matrix (its size counts its sources) and
    sends every task a reference to it, never a pickled copy; the search's settings reach
    the fits that run on the workers."""
    reference, _, y = star()
    pickled = []
    state = NormalizedMatrix.__getstate__
    monkeypatch.setattr(NormalizedMatrix, "__getstate__",
                        lambda self: pickled.append(1) or state(self))
    grid = {"alpha": [0.1, 1.0, 10.0]}
    with config_context(strategy="materialized"), joblib.parallel_config(backend="dask"):
        search = GridSearchCV(FactorizedRidge(), grid, cv=3, n_jobs=2).fit(reference, y)
        fits = cross_validate(FactorizedRidge(), reference, y, cv=3, n_jobs=2,
                              return_estimator=True)
    assert not pickled
    assert {model.strategy_ for model in fits["estimator"]} == {"materialized"}
    expected = GridSearchCV(FactorizedRidge(), grid, cv=3).fit(reference, y)
    assert_allclose(search.cv_results_["mean_test_score"],
                    expected.cv_results_["mean_test_score"], rtol=1e-12)


def test_the_materialized_path_is_priced_a_join_per_pass(synchronous):
    """A joined partition is not kept: an iterative fit over partitions joins each one again
    on every pass, which the materialized path's price counts, where in memory the join is
    built once (the factorized path builds nothing, and is priced alike)."""
    from sklearn_ilargi.cost import OperationProfile, decide
    from sklearn_ilargi.cost._heuristic import BUILD_PASSES

    rng = np.random.default_rng(3)
    n = 200
    fact, wide, keys = rng.standard_normal((n, 2)), rng.standard_normal((5, 500)), np.arange(n) % 5
    reference = NormalizedMatrix.from_matrices([fact, wide], [np.arange(n), keys])
    X = NormalizedMatrix.from_matrices([da.from_array(fact, chunks=(n, 2)), wide],
                                       [da.arange(n, chunks=n), keys])
    profile = OperationProfile(matmul=10, rmatmul=10)
    with config_context(cost_model="heuristic"):
        in_memory, partitioned = decide(reference, profile), decide(X, profile)
    features = partitioned.features
    build = features["build_bytes"] * BUILD_PASSES / (max(features["bandwidth_gbs"], 1.0) * 1e9)
    materialized, factorized = ("cpu", "materialized"), ("cpu", "factorized")
    assert partitioned.scores[materialized] == pytest.approx(
        in_memory.scores[materialized] + 19 * build, rel=1e-6)
    assert partitioned.scores[factorized] == pytest.approx(in_memory.scores[factorized],
                                                           rel=1e-6)
