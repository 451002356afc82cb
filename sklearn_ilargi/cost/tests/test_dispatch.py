"""The dispatcher: the model or its fallback, infeasibility, forcing, determinism."""

import importlib
import inspect
import sys
import warnings
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ilargi import InsufficientMemoryError, NormalizedMatrix, config_context
from sklearn_ilargi.cost import CostModelWarning, OperationProfile, decide, record_decisions
from sklearn_ilargi.cost import _dispatch, _model
from sklearn_ilargi.cost._candidates import Candidate
from sklearn_ilargi.cost._features import FEATURE_NAMES, candidate_features, fit_features
from sklearn_ilargi.cost._hardware import hardware_info
from sklearn_ilargi.cost._memory import peak_bytes
from sklearn_ilargi.tests._scenarios import sources_as_given


@pytest.fixture
def fresh_model_cache():
    """Forget loaded models and given warnings, so each test sees its own setting."""
    _model.forget_warnings()
    _model._load.cache_clear()
    yield
    _model.forget_warnings()
    _model._load.cache_clear()


def redundant_star(n_target=2000, n_dim=20, dim_columns=30):
    rng = np.random.default_rng(1)
    fact = rng.random((n_target, 2))
    dim = rng.random((n_dim, dim_columns))
    return NormalizedMatrix.from_matrices(
        [fact, dim], [np.arange(n_target), rng.integers(0, n_dim, n_target)])


def clearly_redundant_star():
    """A star that the heuristic factorizes by a wide margin: tuple ratio 1000, feature ratio
    15. At ``redundant_star``'s default size the fixed costs of a fit leave the two paths so
    close that the machine's measured bandwidth decides."""
    return redundant_star(n_target=50_000, n_dim=50)


PROFILE = OperationProfile(matmul=20, rmatmul=20, iterations=20, name="test")


def tiny_catboost(feature_names=FEATURE_NAMES, seed=0):
    catboost = pytest.importorskip("catboost")
    rng = np.random.default_rng(seed)
    X = rng.random((40, len(feature_names)))
    y = X[:, -1]  # anything learnable
    model = catboost.CatBoostRegressor(iterations=5, depth=2, verbose=False,
                                       allow_writing_files=False, random_seed=0)
    model.fit(X, y)
    model.set_feature_names(list(feature_names))
    model.get_metadata()["gpu_rows"] = "0"
    model.get_metadata()["heuristic_weights"] = str([0.5] * 10)
    return model


def tiny_model(path, feature_names=FEATURE_NAMES):
    """A model file as CatBoost writes it, without exported trees."""
    tiny_catboost(feature_names).save_model(str(path))
    return path


def test_heuristic_on_purpose_does_not_warn(fresh_model_cache):
    with config_context(cost_model="heuristic"), warnings.catch_warnings():
        warnings.simplefilter("error")
        decision = decide(clearly_redundant_star(), PROFILE)
    assert decision.model.startswith("heuristic")
    assert set(decision.scores) == {("cpu", "factorized"), ("cpu", "materialized")}
    assert decision.strategy == "factorized"


def test_missing_model_file_warns_once_and_falls_back(fresh_model_cache, tmp_path):
    with config_context(cost_model=str(tmp_path / "absent.cbm")):
        with pytest.warns(CostModelWarning, match="heuristic"):
            first = decide(redundant_star(), PROFILE)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            second = decide(redundant_star(), PROFILE)
    assert first.model.startswith("heuristic") and second.strategy == first.strategy


def test_corrupt_model_file_falls_back(fresh_model_cache, tmp_path):
    path = tmp_path / "corrupt.cbm"
    path.write_bytes(b"this is not a CatBoost model" * 10)
    with config_context(cost_model=str(path)), pytest.warns(CostModelWarning, match="unreadable"):
        decision = decide(redundant_star(), PROFILE)
    assert decision.model.startswith("heuristic")
    assert decision.strategy in ("factorized", "materialized")


def test_model_with_other_features_falls_back(fresh_model_cache, tmp_path):
    path = tiny_model(tmp_path / "other.cbm", [f"f{i}" for i in range(len(FEATURE_NAMES))])
    with config_context(cost_model=str(path)), pytest.warns(CostModelWarning, match="features"):
        assert decide(redundant_star(), PROFILE).model.startswith("heuristic")


def test_without_catboost_falls_back(fresh_model_cache, tmp_path, monkeypatch):
    path = tiny_model(tmp_path / "fine.cbm")
    monkeypatch.setitem(sys.modules, "catboost", None)  # import catboost raises ImportError
    with config_context(cost_model=str(path)), pytest.warns(CostModelWarning, match="CatBoost"):
        assert decide(redundant_star(), PROFILE).model.startswith("heuristic")


def test_a_readable_model_is_used_silently(fresh_model_cache, tmp_path):
    path = tiny_model(tmp_path / "fine.cbm")
    with config_context(cost_model=str(path)), warnings.catch_warnings():
        warnings.simplefilter("error")
        decision = decide(redundant_star(), PROFILE)
    assert decision.model.startswith("catboost")
    assert all(seconds > 0 for seconds in decision.scores.values())
    assert "cpu" in decision.explain() and "predicted" in decision.explain()


def test_the_shipped_model_loads_if_present(fresh_model_cache):
    if not _model.SHIPPED_MODEL.is_file():
        pytest.skip("no shipped model in this checkout")
    model, why = _model._read_model(_model.SHIPPED_MODEL)
    assert why is None and model.gpu_trained in (True, False)


def test_decisions_are_deterministic():
    nm = redundant_star()
    first, second = decide(nm, PROFILE), decide(nm, PROFILE)
    assert (first.strategy, first.backend) == (second.strategy, second.backend)
    assert first.scores == second.scores and first.features == second.features


def test_infeasible_candidate_is_never_chosen():
    nm = redundant_star(n_target=3000, n_dim=3000, dim_columns=2)  # materializing looks cheap
    with config_context(cost_model="heuristic", memory_limit=nm.nbytes):
        decision = decide(nm, OperationProfile(gram=1, rmatmul=1))
    assert decision.strategy == "factorized"
    assert Candidate("cpu", "materialized") in decision.infeasible
    assert "infeasible" in decision.explain()


def test_forced_strategy_overrides_the_model():
    nm = clearly_redundant_star()
    with config_context(cost_model="heuristic"):
        assert decide(nm, PROFILE).strategy == "factorized"
        forced = decide(nm, PROFILE, strategy="materialized")
        assert forced.strategy == "materialized" and "forced" in forced.reason
        with config_context(strategy="materialized"):
            assert decide(nm, PROFILE).strategy == "materialized"


def test_a_single_candidate_consults_no_model(monkeypatch):
    def no_model(*args, **kwargs):
        raise AssertionError("the cost model was loaded for a forced fit")

    monkeypatch.setattr(_dispatch, "gpu_available", lambda: False)
    monkeypatch.setattr(_dispatch, "load_cost_model", no_model)
    decision = decide(redundant_star(), PROFILE, strategy="factorized", backend="cpu")
    assert (decision.strategy, decision.backend) == ("factorized", "cpu")
    assert decision.scores == {} and decision.model == ""
    assert "forced" in decision.reason and decision.explain().startswith("cpu/factorized")


def cpu_only_model(setting=None):
    """A cost model trained without GPU timings, as ``load_cost_model`` would return it."""
    return _model.HeuristicCostModel("no GPU timings in its training", gpu_trained=False)


def test_gpu_is_only_ranked_by_a_model_that_knows_gpus(monkeypatch):
    monkeypatch.setattr(_dispatch, "gpu_available", lambda: True)
    monkeypatch.setattr(_dispatch, "gpu_free_memory", lambda: 2**34)
    with config_context(cost_model="heuristic"):
        assert len(decide(redundant_star(), PROFILE).scores) == 4
    monkeypatch.setattr(_dispatch, "load_cost_model", cpu_only_model)
    decision = decide(redundant_star(), PROFILE)
    assert decision.backend == "cpu" and len(decision.scores) == 2
    assert "CPU-only" in decision.reason


def test_forcing_the_gpu_without_one_is_a_clear_error():
    if _dispatch.gpu_available():
        pytest.skip("a GPU is usable here")
    with pytest.raises(RuntimeError, match="gpu"):
        decide(redundant_star(), PROFILE, backend="gpu")


def test_the_join_is_as_sparse_as_the_features_price_it():
    """Sparse sources join into CSR, unless the profile needs the join dense (to center it)."""
    import scipy.sparse as sp

    from sklearn_ilargi.cost import prepare

    rng = np.random.default_rng(3)
    fact = sp.random(500, 20, density=0.02, format="csr", random_state=rng)
    dim = sp.random(10, 30, density=0.02, format="csr", random_state=rng)
    with sources_as_given():  # these small sources would otherwise be stored dense
        X = NormalizedMatrix.from_matrices([fact, dim],
                                           [np.arange(500), rng.integers(0, 10, 500)])
    for dense_join in (False, True):
        profile = OperationProfile(gram=1, dense_join=dense_join)
        decision = decide(X, profile, strategy="materialized", backend="cpu")
        assert decision.features["mat_sparse"] == (not dense_join)
        joined = prepare(X, decision)
        assert sp.issparse(joined) == (not dense_join)
        np.testing.assert_allclose(joined.toarray() if sp.issparse(joined) else joined,
                                   X.toarray())


def test_plain_input_and_missing_profile():
    decision = decide(np.ones((4, 2)))
    assert (decision.strategy, decision.backend) == ("materialized", "cpu")
    with config_context(cost_model="heuristic"):
        assert decide(redundant_star()).features["n_ops"] == 2


def test_invalid_arguments():
    with pytest.raises(ValueError, match="strategy"):
        decide(redundant_star(), strategy="joined")
    with pytest.raises(ValueError, match="backend"):
        decide(redundant_star(), backend="tpu")


def _estimator_classes():
    from sklearn_ilargi.base import FactorizedMixin

    found = []
    for package in ("linear_model", "cluster", "decomposition", "preprocessing"):
        try:
            module = importlib.import_module(f"sklearn_ilargi.{package}")
        except ImportError:
            continue
        for name in getattr(module, "__all__", dir(module)):
            obj = getattr(module, name, None)
            if inspect.isclass(obj) and issubclass(obj, FactorizedMixin):
                found.append(obj)
    return found


@pytest.mark.parametrize("estimator_class", _estimator_classes(), ids=lambda c: c.__name__)
def test_every_estimator_goes_through_the_dispatcher(estimator_class):
    from sklearn.base import is_classifier, is_regressor

    nm = redundant_star(n_target=200, n_dim=10, dim_columns=3)
    rng = np.random.default_rng(0)
    if is_classifier(estimator_class()):
        y = np.arange(200) % 2
    elif is_regressor(estimator_class()):
        y = rng.random(200)
    else:
        y = None
    with config_context(cost_model="heuristic"):
        for strategy in ("auto", "factorized", "materialized"):
            with record_decisions() as decisions:
                fitted = estimator_class(strategy=strategy).fit(nm, y)
            assert decisions, f"{estimator_class.__name__} did not call decide()"
            assert fitted.decision_ is decisions[-1]
            if strategy != "auto":
                assert fitted.decision_.strategy == strategy


def test_tree_evaluation_matches_catboost(tmp_path):
    catboost = pytest.importorskip("catboost")
    path = tiny_model(tmp_path / "fine.cbm")
    model = catboost.CatBoostRegressor()
    model.load_model(str(path))
    rows = np.random.default_rng(3).random((7, len(FEATURE_NAMES)))
    np.testing.assert_allclose(_model.export_trees(model).predict(rows), model.predict(rows),
                               rtol=1e-12, atol=1e-12)


def test_a_forced_gpu_is_ranked_by_the_heuristic_without_gpu_timings(monkeypatch):
    monkeypatch.setattr(_dispatch, "get_backend", lambda name: None)  # pretend it is usable
    monkeypatch.setattr(_dispatch, "gpu_free_memory", lambda: 2**34)
    monkeypatch.setattr(_dispatch, "load_cost_model", cpu_only_model)
    decision = decide(redundant_star(), PROFILE, backend="gpu")
    assert decision.backend == "gpu" and set(decision.scores) == {
        ("gpu", "factorized"), ("gpu", "materialized")}
    assert "no GPU timings" in decision.model


def _same_model(a, b):
    rows = np.random.default_rng(3).random((7, len(FEATURE_NAMES)))
    np.testing.assert_allclose(a.trees.predict(rows), b.trees.predict(rows), rtol=1e-12)
    np.testing.assert_array_equal(a.heuristic_weights, b.heuristic_weights)
    assert (a.gpu_trained, a.relative) == (b.gpu_trained, b.relative)


def test_a_saved_model_is_read_from_its_exported_trees_without_catboost(
        fresh_model_cache, tmp_path, monkeypatch):
    path = tmp_path / "fine.cbm"
    _model.save_model(tiny_catboost(), path)
    assert _model.trees_path(path).is_file()
    by_catboost, _ = _model._read_catboost(str(path))
    monkeypatch.setitem(sys.modules, "catboost", None)  # import catboost raises ImportError
    exported, why = _model._read_model(str(path))
    assert why is None
    _same_model(exported, by_catboost)
    with config_context(cost_model=str(path)), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert decide(redundant_star(), PROFILE).model.startswith("catboost")


def test_the_trees_of_another_model_file_are_not_used(fresh_model_cache, tmp_path, monkeypatch):
    path, other = tmp_path / "a.cbm", tmp_path / "b.cbm"
    _model.save_model(tiny_catboost(seed=0), path)
    _model.save_model(tiny_catboost(seed=1), other)
    path.write_bytes(other.read_bytes())  # the model file replaced, its exported trees stale
    fresh, why = _model._read_model(str(path))
    assert why is None
    _same_model(fresh, _model._read_model(str(other))[0])
    monkeypatch.setitem(sys.modules, "catboost", None)
    model, why = _model._read_model(str(path))
    assert model is None and why.startswith("CatBoost is not installed") and str(path) in why


@pytest.mark.parametrize("damage", [b"not an archive", None])
def test_damaged_exported_trees_are_not_used(fresh_model_cache, tmp_path, damage):
    """Unreadable, or readable without the trees: the model file is read by CatBoost, and
    the damage is reported."""
    path = tmp_path / "fine.cbm"
    _model.save_model(tiny_catboost(), path)
    if damage is None:
        np.savez(_model.trees_path(path), about="{}")
    else:
        _model.trees_path(path).write_bytes(damage)
    exported, damaged = _model._read_exported_trees(str(path))
    assert exported is None and "damaged" in damaged
    model, why = _model._read_model(str(path))
    assert model.source.startswith("catboost") and why.startswith(damaged)


def test_the_shipped_model_needs_no_catboost(fresh_model_cache, monkeypatch):
    if not _model.SHIPPED_MODEL.is_file():
        pytest.skip("no shipped model in this checkout")
    by_catboost = _model._read_catboost(str(_model.SHIPPED_MODEL))[0]
    monkeypatch.setitem(sys.modules, "catboost", None)
    exported, why = _model._read_model(str(_model.SHIPPED_MODEL))
    assert why is None
    if by_catboost is not None:
        _same_model(exported, by_catboost)


def test_the_dense_copies_of_the_join_count_in_the_memory_check():
    """A materialized path that copies its dense join three times (scikit-learn's full SVD)
    needs four joins at its peak: under a limit that holds one, it is ruled out, and forced,
    it raises before anything is allocated, naming the estimator, strategy and bytes."""
    nm = redundant_star()  # a dense join of 2000 x 32: 500 KiB
    join = 2000 * 32 * 8
    plain = OperationProfile(matmul=1, rmatmul=1, name="Model")
    copying = OperationProfile(matmul=1, rmatmul=1, join_copies=3, name="Model", solver="full")
    materialized = Candidate("cpu", "materialized")
    with config_context(cost_model="heuristic", memory_limit=(2 * join + nm.nbytes) / 0.8):
        assert materialized not in decide(nm, plain).infeasible
        decision = decide(nm, copying)
        assert decision.strategy == "factorized" and materialized in decision.infeasible
        with pytest.raises(InsufficientMemoryError, match=(
                r"^Model cannot run with strategy='materialized' \(solver 'full'\): "
                r"cpu/materialized: the path needs 2\.0\d MiB more at its peak, more than the "
                r"[\d.]+ MiB it may take \(80% of the [\d.]+ MiB available on the host\)\. "
                r"Nothing was allocated")):
            decide(nm, copying, strategy="materialized")
        with config_context(strategy="materialized"), pytest.raises(InsufficientMemoryError):
            decide(nm, copying)
        assert decide(nm, copying, strategy="factorized").strategy == "factorized"


def extra_needs(nm, profile):
    """What each CPU path needs at its peak beyond the sources, as the memory check
    estimates it."""
    shared = fit_features(nm, profile, hardware_info())
    return {strategy: peak_bytes(shared, candidate_features(shared, "cpu", strategy), profile)
            - shared["fact_bytes"] for strategy in ("factorized", "materialized")}


def test_the_copies_of_the_sources_count_in_the_factorized_memory_check():
    """A factorized path that copies its sources (K-means' reordered fact table) needs them
    twice: the check adds one copy of the sources to the factorized path only, and under a
    limit that holds the path without the copy, forced, it raises."""
    nm = redundant_star()
    plain = OperationProfile(matmul=1, rmatmul=1, name="Model")
    copying = replace(plain, source_copies=1)
    before, after = extra_needs(nm, plain), extra_needs(nm, copying)
    sources = fit_features(nm, plain, hardware_info())["fact_bytes"]
    assert after["factorized"] == pytest.approx(before["factorized"] + sources)
    assert after["materialized"] == before["materialized"]
    limit = (before["factorized"] + sources / 2) / 0.8
    with config_context(cost_model="heuristic", memory_limit=limit):
        assert decide(nm, plain, strategy="factorized", backend="cpu").infeasible == {}
        with pytest.raises(InsufficientMemoryError, match="cpu/factorized: the path needs"):
            decide(nm, copying, strategy="factorized", backend="cpu")


def test_kmeans_declares_its_reordered_copy_of_the_sources():
    from sklearn_ilargi import FactorizedKMeans

    fitted = FactorizedKMeans(3, n_init=1, max_iter=2, random_state=0).fit(redundant_star())
    assert fitted.decision_.profile.source_copies == 1


def test_auto_runs_the_least_demanding_path_where_it_is_close_to_fitting():
    """No path fits in the 80% of the memory that a fit may plan to take, but the
    factorized one, the least demanding, fits in all of it: auto runs it, and says so."""
    nm = redundant_star()
    needs = extra_needs(nm, PROFILE)
    assert needs["factorized"] < needs["materialized"]
    with config_context(cost_model="heuristic", memory_limit=needs["factorized"] / 0.9):
        decision = decide(nm, PROFILE, backend="cpu")
    assert (decision.backend, decision.strategy) == ("cpu", "factorized")
    assert set(decision.infeasible) == {Candidate("cpu", "factorized"),
                                        Candidate("cpu", "materialized")}
    assert decision.reason.startswith("no candidate fits in 80% of the memory available; "
                                      "running the least demanding, whose estimated peak "
                                      "fits in all of it")
    assert "infeasible: the path needs" in decision.explain()


def test_auto_raises_where_no_path_fits_in_all_of_the_memory():
    """Where even the least demanding path needs more than all of the memory available,
    auto raises before anything is allocated, as a forced strategy does, naming the fit and
    each path with the bytes it needs."""
    nm = redundant_star()
    needs = extra_needs(nm, PROFILE)
    with config_context(cost_model="heuristic", memory_limit=needs["factorized"] / 1.1):
        with pytest.raises(InsufficientMemoryError, match=(
                r"^test cannot run with strategy='auto': cpu/factorized: the path needs "
                r"[\d.]+ KiB more at its peak, more than the [\d.]+ KiB available on the host; "
                r"cpu/materialized: the materialized matrix needs [\d.]+ KiB, more than the "
                r"[\d.]+ KiB available on the host\. Nothing was allocated; no path fits in "
                r"the memory available \(at most the memory_limit setting\)\.$")):
            decide(nm, PROFILE, backend="cpu")


def test_an_estimator_under_auto_raises_where_nothing_fits():
    from sklearn_ilargi import FactorizedKMeans

    nm = redundant_star()
    model = FactorizedKMeans(n_clusters=3, n_init=1, random_state=0)
    with config_context(memory_limit=2**10), pytest.raises(
            InsufficientMemoryError, match=r"^FactorizedKMeans cannot run with strategy='auto'"):
        model.fit(nm)
    assert not hasattr(model, "cluster_centers_")


def test_a_csr_join_is_never_copied_dense():
    rng = np.random.default_rng(0)
    with config_context(dense_storage_max_cells=0):
        nm = NormalizedMatrix.from_matrices(
            [rng.random((3000, 1)), sp.eye(1000, format="csr")],
            [np.arange(3000), rng.integers(0, 1000, 3000)])
    profile = OperationProfile(matmul=1, rmatmul=1, join_copies=3)
    shared = fit_features(nm, profile, hardware_info())
    assert shared["mat_sparse"] == 1.0
    for strategy in ("factorized", "materialized"):
        row = candidate_features(shared, "cpu", strategy)
        assert peak_bytes(shared, row, profile) == row["path_memory"]
    dense = replace(profile, dense_join=True)
    shared = fit_features(nm, dense, hardware_info())
    row = candidate_features(shared, "cpu", "materialized")
    assert peak_bytes(shared, row, dense) == row["path_memory"] + 3 * 3000 * 1001 * 8


def test_a_closed_form_counts_the_copies_of_its_gram():
    nm = redundant_star()
    profile = OperationProfile(gram=1, name="Model")
    shared = fit_features(nm, profile, hardware_info())
    row = candidate_features(shared, "cpu", "factorized")
    assert peak_bytes(shared, row, profile) == row["path_memory"] + 3 * 8 * 32**2
