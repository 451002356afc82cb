"""Calibration, training and the evaluation metrics, on tiny runs (nothing here is timed)."""

import numpy as np
import pandas as pd
import pytest

from sklearn_ilargi import NormalizedMatrix, config_context
from sklearn_ilargi.cost import OperationProfile, decide
from sklearn_ilargi.cost.calibration import _calibrate
from sklearn_ilargi.cost.calibration._calibrate import MAX_PATH_BYTES, calibrate, main
from sklearn_ilargi.cost.calibration._evaluation import baseline_policies, cases_of, score
from sklearn_ilargi.cost.calibration._scenarios import (
    FAMILIES,
    MIN_ONEHOT_COLUMNS,
    Scenario,
    make_calibration_scenario,
)
from sklearn_ilargi.cost.calibration._workloads import WORKLOADS
from sklearn_ilargi.cost._features import candidate_features
from sklearn_ilargi.cost._heuristic import TERMS, heuristic_seconds
from sklearn_ilargi.cost._memory import peak_bytes
from sklearn_ilargi.cost._model import load_cost_model
from sklearn_ilargi.cost.calibration._train import fit_heuristic_weights, read_measurements
from sklearn_ilargi.tests._scenarios import sources_as_given

pytest.importorskip("catboost")


@pytest.mark.parametrize("family", FAMILIES)
def test_scenarios_are_reproducible(family):
    # Scaled down this far, the sparse sources would be stored dense and the thin ones gathered.
    with sources_as_given():
        a = make_calibration_scenario(family, 3, size_scale=0.02)
        b = make_calibration_scenario(family, 3, size_scale=0.02)
    assert a.X.shape == b.X.shape and a.params == b.params
    np.testing.assert_allclose(a.y_regression, b.y_regression)
    if family == "left":
        assert decide(a.X).features["missing_share"] > 0
    if family == "sparse":
        assert decide(a.X).features["sparse_sources"] == 1
    if family == "onehot":
        features = decide(a.X).features
        assert features["sparse_sources"] == 1 and features["mat_sparse"] == 1
        assert a.X.shape[1] >= MIN_ONEHOT_COLUMNS and a.params["n_dimensions"] >= 2


def test_the_onehot_family_spans_both_regimes():
    """Its draws give entities of about one event per id, whose join is about as small as
    the sources (materializing pays), and entities whose rows the join repeats many times
    (factorizing pays)."""
    from sklearn_ilargi.cost.calibration._scenarios import _draw_onehot

    draws = [_draw_onehot(np.random.default_rng(600_000 + i), 1.0) for i in range(36)]
    assert min(p["n_rows"] / max(p["n_ids"]) for p in draws) < 2
    assert max(p["n_rows"] / min(p["n_ids"]) for p in draws) > 30
    widths = [sum(p["n_ids"]) for p in draws]
    assert min(widths) >= MIN_ONEHOT_COLUMNS and max(widths) > 50_000


def test_calibrate_appends_and_trains(tmp_path):
    output, model = tmp_path / "m.csv.gz", tmp_path / "m.cbm"
    lines = []
    kwargs = dict(output=output, model_path=model, per_family=1, repeats=1,
                  families=("pkfk",), size_scale=0.02, log=lines.append)
    first = calibrate(train=False, **kwargs)
    assert first["model"] is None and first["rows"] > 0 and not first["errors"]
    second = calibrate(seed=1, **kwargs)
    frame = read_measurements(output)
    assert len(frame) == first["rows"] + second["rows"]
    assert set(frame["strategy"]) == {"factorized", "materialized"}
    assert (frame["seconds"] > 0).all() and model.is_file()
    assert any("[1/1]" in line for line in lines)
    with config_context(cost_model=str(model)):
        decision = decide(make_calibration_scenario("star", 0, 0.02).X)
    assert decision.model.startswith("catboost") and "CPU-only" not in decision.reason
    loaded = load_cost_model(str(model))
    assert loaded.heuristic_weights.shape == (len(TERMS),)
    assert (loaded.heuristic_weights >= 0).all()


def test_one_family_is_measured_alone_and_appended(tmp_path):
    """As a new family is appended to the shipped measurements: the rows of the other
    families stay, the new ones are of that family only."""
    output = tmp_path / "m.csv.gz"
    kwargs = dict(output=output, per_family=1, repeats=1, size_scale=0.02, train=False,
                  log=lambda line: None)
    before = calibrate(families=("pkfk",), **kwargs)["rows"]
    added = calibrate(families=("onehot",), **kwargs)
    assert added["rows"] > 0 and not added["errors"]
    frame = read_measurements(output)
    assert len(frame) == before + added["rows"]
    assert frame["family"].value_counts().to_dict() == {"pkfk": before,
                                                        "onehot": added["rows"]}
    assert (frame.loc[frame["family"] == "onehot", "sparse_sources"] == 1).all()
    with pytest.raises(ValueError, match=r"Unknown scenario families \['nope'\]"):
        calibrate(families=("onehot", "nope"), **kwargs)


def test_the_command_line_passes_the_families(monkeypatch, tmp_path):
    seen = {}

    def fake_calibrate(**kwargs):
        seen.update(kwargs)
        return {"rows": 0, "seconds": 0.0}

    monkeypatch.setattr(_calibrate, "calibrate", fake_calibrate)
    assert main(["--families", "onehot", "star", "--no-train", "--output",
                 str(tmp_path / "m.csv.gz")]) == 0
    assert seen["families"] == ("onehot", "star") and seen["train"] is False
    assert main(["--no-train"]) == 0 and seen["families"] == FAMILIES
    with pytest.raises(SystemExit):
        main(["--families", "nope"])


def timed_paths(workload, scenario, **bound):
    """The candidates that :func:`measure_case` times (once), and its errors."""
    rows, errors = _calibrate.measure_case(workload, scenario, _calibrate.candidates(gpu=False),
                                           repeats=1, **bound)
    return [f"{row['backend']}/{row['strategy']}" for row in rows], errors


def materialized_needs(decision):
    """What the materialized path needs beyond its sources, as the dispatcher estimates it:
    without the dense copies of the join that the fit declares, and with them."""
    shared = decision.features
    row = candidate_features(shared, "cpu", "materialized")
    resident = shared["fact_bytes"]
    return row["path_memory"] - resident, peak_bytes(shared, row, decision.profile) - resident


def test_paths_beyond_the_memory_bound_are_not_timed():
    """On 1,000 events over 70,000 one-hot ids the dense join would take more than
    MAX_PATH_BYTES, but PCA's randomized solver and K-means keep the CSR join: both paths
    are timed. Where the memory available (the memory_limit setting) cannot hold the
    materialized path's peak, only the factorized one is, and the refusal is no error."""
    from sklearn_ilargi.datasets import make_onehot_star

    X, y, y_classes = make_onehot_star(1_000, (70_000, 1_000), n_categories=(),
                                       return_X_y=True, random_state=0)
    assert X.shape[0] * X.shape[1] * 8 > MAX_PATH_BYTES
    scenario = Scenario("wide", "onehot", X, y, y_classes)
    by_name = {w.name: w for w in WORKLOADS}
    for name in ("FactorizedPCA", "FactorizedKMeans"):
        assert timed_paths(by_name[name], scenario) == (["cpu/factorized", "cpu/materialized"],
                                                        [])
    features = _calibrate.run_workload(by_name["FactorizedPCA"], scenario, "auto").features
    extra = [candidate_features(features, "cpu", strategy)["path_memory"]
             - features["fact_bytes"] for strategy in ("factorized", "materialized")]
    # A fit may take 80% of the limit: between the two paths' needs beyond the sources.
    with config_context(memory_limit=sum(extra) / 2 / 0.8):
        assert timed_paths(by_name["FactorizedPCA"], scenario) == (["cpu/factorized"], [])


def test_the_bound_on_a_timed_path_counts_the_copies_of_the_join():
    """K-means copies a dense join once on the materialized path: the bound on what a timed
    path may take is checked on the dispatcher's estimate of its peak, copies included. A
    bound between the needs without and with the copy (above the path's memory feature,
    sources included) leaves only the factorized path."""
    rng = np.random.default_rng(0)
    X = NormalizedMatrix.from_matrices(
        [rng.standard_normal((8000, 20)), rng.standard_normal((200, 40))],
        [np.arange(8000), rng.integers(0, 200, 8000)])
    y = rng.standard_normal(8000)
    scenario = Scenario("dense", "star", X, y, (y > 0).astype(int))
    kmeans = next(w for w in WORKLOADS if w.name == "FactorizedKMeans")
    decision = _calibrate.run_workload(kmeans, scenario, "factorized")
    assert decision.features["mat_sparse"] == 0.0 and decision.profile.join_copies == 1
    without_copy, with_copy = materialized_needs(decision)
    bound = (without_copy + with_copy) / 2
    assert candidate_features(decision.features, "cpu", "materialized")["path_memory"] < bound
    assert timed_paths(kmeans, scenario, max_path_bytes=with_copy * 1.01) == (
        ["cpu/factorized", "cpu/materialized"], [])
    assert timed_paths(kmeans, scenario, max_path_bytes=bound) == (["cpu/factorized"], [])


def test_heuristic_weights_fit_the_measurements():
    """Seconds made of known weights are fitted back (with a weak prior: the default one is
    worth more than these 24 rows); a term that is always zero (the sparse gram of a CSR join
    on dense scenarios, transfers on the CPU) keeps its nominal weight."""
    true = np.array([2.0, 0.5, 3.0, 1.5, 1.0, 1.0, 0.5, 2.0, 1.0, 1.0])
    rows = []
    for family, seed in (("pkfk", 0), ("star", 1), ("snowflake", 2), ("left", 3)):
        X = make_calibration_scenario(family, seed, 0.05).X
        for matmul in (0, 5, 50):
            shared = decide(X, OperationProfile(matmul=matmul, rmatmul=matmul, gram=1)).features
            for strategy in ("factorized", "materialized"):
                row = {**shared, **candidate_features(shared, "cpu", strategy)}
                rows.append({**row, "seconds": heuristic_seconds(row, true)})
    frame = pd.DataFrame(rows)
    weights = fit_heuristic_weights(frame, prior_measurements=1e-4)
    def error(w):
        estimate = np.array([heuristic_seconds(r, w) for r in rows])
        return np.abs(estimate / frame["seconds"] - 1).mean()

    assert error(weights) < 0.01 < 0.1 < error(np.ones(len(TERMS)))
    unused = [TERMS.index(t) for t in ("sparse_gram", "transfer", "sklearn_fit")]
    np.testing.assert_allclose(weights[unused], 1.0)


def toy_measurements():
    rows = []
    for i, (fact, mat) in enumerate([(1.0, 2.0), (3.0, 1.0), (1.0, 1.5)]):
        for strategy, seconds in (("factorized", fact), ("materialized", mat)):
            rows.append({"scenario": f"s{i}", "family": "f", "workload": "w",
                         "backend": "cpu", "strategy": strategy, "seconds": seconds,
                         "tuple_ratio": 10.0 * (i != 1), "feature_ratio": 2.0,
                         "flop_ratio": 2.0, "complexity_ratio": 2.0, "byte_ratio": 2.0})
    return pd.DataFrame(rows)


def test_metrics_against_the_oracle():
    times, shared = cases_of(toy_measurements())
    oracle = score(times, np.array(["cpu/factorized", "cpu/materialized", "cpu/factorized"]))
    assert oracle["accuracy"] == 1.0 and oracle["saving_share"] == 1.0
    assert oracle["worst_slowdown"] == 1.0 and oracle["f1"] == 1.0
    fact = score(times, np.full(3, "cpu/factorized"))
    # Possible saving 1 + 2 + 0.5; always factorizing saves 1 and 0.5 of it, loses case 2.
    assert fact["saving_share"] == pytest.approx(1.5 / 3.5)
    assert fact["worst_slowdown"] == pytest.approx(3.0)
    assert fact["accuracy"] == pytest.approx(2 / 3)
    # Against always materializing: possible 1 + 0 + 0.5, always factorizing gets 1 - 2 + 0.5.
    assert fact["saving_vs_materialized"] == pytest.approx(-0.5 / 1.5)
    morpheus = baseline_policies()["Morpheus rule (TR > 5 and FR > 1)"](shared)
    assert list(morpheus) == ["cpu/factorized", "cpu/materialized", "cpu/factorized"]


@pytest.mark.parametrize("seconds, expected", [(0.001, 15), (0.1, 8), (0.3, 3), (3.0, 1)])
def test_short_fits_are_repeated_more(monkeypatch, seconds, expected):
    from collections import namedtuple
    from types import SimpleNamespace

    from sklearn_ilargi.cost.calibration import _calibrate

    Candidate = namedtuple("Candidate", "backend strategy")

    decision = SimpleNamespace(features={"n_rows": 10})
    monkeypatch.setattr(_calibrate, "_timed", lambda *args: (seconds, decision))
    pool = [Candidate("cpu", s) for s in ("factorized", "materialized")]
    monkeypatch.setattr(_calibrate, "candidate_features", lambda *args: {})
    workload = SimpleNamespace(name="w", kind="estimator")
    scenario = SimpleNamespace(id="s", family="f")
    rows, errors = _calibrate.measure_case(workload, scenario, pool, repeats=3)
    assert not errors and [row["repeats"] for row in rows] == [expected, expected]


def test_a_run_of_stalled_repeats_does_not_make_the_time(monkeypatch):
    """Most repeats of one candidate stall (a descheduled core): its time is still the
    undisturbed one, and the faster candidate stays the faster one."""
    import itertools
    from collections import namedtuple
    from types import SimpleNamespace

    from sklearn_ilargi.cost.calibration import _calibrate

    Candidate = namedtuple("Candidate", "backend strategy")
    pool = [Candidate("cpu", s) for s in ("factorized", "materialized")]
    times = {pool[0]: itertools.cycle([0.02, 0.2, 0.2, 0.02, 0.2]),  # 60% stalled
             pool[1]: itertools.cycle([0.04])}
    decision = SimpleNamespace(features={"n_rows": 10})
    monkeypatch.setattr(_calibrate, "_timed",
                        lambda workload, scenario, candidate: (next(times[candidate]), decision))
    monkeypatch.setattr(_calibrate, "candidate_features", lambda *args: {})
    workload = SimpleNamespace(name="w", kind="estimator")
    scenario = SimpleNamespace(id="s", family="f")
    rows, _ = _calibrate.measure_case(workload, scenario, pool, repeats=3)
    seconds = {row["strategy"]: row["seconds"] for row in rows}
    assert seconds == {"factorized": pytest.approx(0.02), "materialized": pytest.approx(0.04)}


def test_measurements_of_another_version_are_not_appended_to(tmp_path):
    output = tmp_path / "old.csv"
    output.write_text("scenario,seconds\ns0,1.0\n")
    with pytest.raises(ValueError, match="old.csv holds measurements of another version"):
        calibrate(output=output, model_path=tmp_path / "m.cbm", per_family=1, repeats=1,
                  families=("pkfk",), size_scale=0.02, log=lambda line: None)
    assert output.read_text() == "scenario,seconds\ns0,1.0\n"


def test_the_evaluation_prints_every_table(tmp_path, capsys):
    from sklearn_ilargi.cost.calibration import _evaluate as evaluate

    output = tmp_path / "m.csv.gz"
    calibrate(output=output, per_family=1, repeats=1, families=("pkfk", "star"),
              size_scale=0.02, train=False, log=lambda line: None)
    assert evaluate.main(["--measurements", str(output), "--tpch-scale", "0",
                          "--iterations", "10"]) == 0
    printed = capsys.readouterr().out
    for heading in ("Leave one scenario family out", "Leave one estimator out",
                    "against the medians of the repeats", "Decision overhead"):
        assert heading in printed
    assert printed.count("| cost model (CatBoost) |") == 4
