"""``python -m sklearn_ilargi.calibrate evaluate``: how well the cost model chooses, on held-out data.

Three evaluations, each printed as a markdown table for the model, the heuristic with its
weights fitted to the same training measurements (the model without its trees), the fallback
heuristic (nominal weights) and the baselines (always materialize, always factorize, the
Morpheus and Amalur rules, the complexity and byte ratios):

1. leave one scenario family out: for each family, a model trained on the other families'
   measurements chooses for this family's cases;
2. leave one estimator out: likewise per estimator;
3. TPC-H (optional, ``--tpch-scale``): the estimators timed live on the TPC-H lineitem
   snowflake, chosen for by the model trained on every synthetic measurement.

The held-out picks are scored against the lower quartiles of the candidates' repeats (what
the model learns), then against their medians.

It also measures the decision overhead (features plus prediction) of :func:`decide`.
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ._calibrate import _blas_threads, measure_case
from .._candidates import candidates
from .._dispatch import OperationProfile, decide
from ._evaluation import (cases_of, compare, fitted_heuristic_picks, heuristic_picks,
                          held_out_picks, markdown_table, model_picks)
from .._model import model_weights
from ._scenarios import FAMILIES, Scenario, make_calibration_scenario
from ._train import read_measurements, train_cost_model
from ._workloads import WORKLOADS

SHIPPED_MEASUREMENTS = Path(__file__).parent / "data" / "measurements.csv.gz"


def held_out_tables(frame, iterations=None):
    """Metrics tables for leave-one-family-out and leave-one-estimator-out.

    Returns
    -------
    dict
        ``"family"`` and ``"workload"`` -> pandas.DataFrame of metrics per policy, scored
        against the times the model learns (lower quartiles of the repeats);
        ``"family, medians"`` and ``"workload, medians"``: the same picks scored against the
        medians of the repeats.
    """
    params = {} if iterations is None else {"iterations": iterations}

    def choose(training, held, held_times):
        return model_picks(train_cost_model(training, **params), held, held_times)

    tables = {}
    _, shared = cases_of(frame)
    for group in ("family", "workload"):
        times, picks = held_out_picks(frame, group, choose)
        _, fitted = held_out_picks(frame, group, fitted_heuristic_picks)
        tables[group] = compare(times, shared, frame, picks, fitted)
        medians = cases_of(frame, "median_seconds")[0].loc[times.index, times.columns]
        tables[f"{group}, medians"] = compare(medians, shared, frame, picks, fitted)
    return tables


def tpch_table(model, scale_factor, repeats=3, data_home=None, blas_threads=None):
    """Time every workload on TPC-H and score the model's and the baselines' choices."""
    from ...datasets import tpch_training_set

    X, y = tpch_training_set(scale_factor, data_home)
    scenario = Scenario(f"tpch-{scale_factor}", "tpch", X, y,
                        (y > np.median(y)).astype(int), {"scale_factor": scale_factor})
    rows = []
    with _blas_threads(blas_threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for workload in WORKLOADS:
            rows += measure_case(workload, scenario, candidates(gpu=False), repeats)[0]
    frame = pd.DataFrame(rows)
    times, shared = cases_of(frame)
    fitted = heuristic_picks(frame, times, model_weights(model))
    return compare(times, shared, frame, model_picks(model, frame, times), fitted), times


def decision_overhead(n_calls=200):
    """Milliseconds per :func:`decide` call (features and prediction) over a few scenarios.

    Returns
    -------
    dict
        ``first_ms`` (the first call of the process: model load and hardware probe),
        ``median_ms`` and ``p95_ms`` (wall clock) and ``cpu_ms`` (mean CPU time) of the calls
        after it, and the model's ``source``.
    """
    scenarios = [make_calibration_scenario(family, 7) for family in FAMILIES]
    profile = OperationProfile(matmul=30, rmatmul=30, width=2, name="overhead")
    start = time.perf_counter()
    first = decide(scenarios[0].X, profile)
    first_ms = 1e3 * (time.perf_counter() - start)
    samples, cpu = [], []
    for i in range(n_calls):
        X = scenarios[i % len(scenarios)].X
        start, start_cpu = time.perf_counter(), time.process_time()
        decide(X, profile)
        samples.append(1e3 * (time.perf_counter() - start))
        cpu.append(1e3 * (time.process_time() - start_cpu))
    return {"first_ms": first_ms, "median_ms": float(np.median(samples)),
            "p95_ms": float(np.percentile(samples, 95)), "cpu_ms": float(np.mean(cpu)),
            "source": first.model}


def main(argv=None):
    """Command line of ``python -m sklearn_ilargi.calibrate evaluate``."""
    parser = argparse.ArgumentParser(prog="python -m sklearn_ilargi.calibrate evaluate",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--measurements", default=str(SHIPPED_MEASUREMENTS),
                        help="measurement file (default: the shipped one)")
    parser.add_argument("--tpch-scale", type=float, default=0.01,
                        help="TPC-H scale factor; 0 skips TPC-H")
    parser.add_argument("--tpch-home", help="where TPC-H files are generated and kept")
    parser.add_argument("--iterations", type=int, help="CatBoost iterations per held-out model")
    args = parser.parse_args(argv)
    frame = read_measurements(args.measurements)
    n_cases = len(cases_of(frame)[0])
    print(f"{len(frame)} measurements, {n_cases} cases, families "
          f"{sorted(frame['family'].unique())}, estimators {sorted(frame['workload'].unique())}")
    kinds = frame.drop_duplicates("workload").set_index("workload")["workload_kind"].to_dict()
    print(f"estimator rows from: {kinds}")
    tables = held_out_tables(frame, args.iterations)
    for group, title in (("family", "Leave one scenario family out"),
                         ("workload", "Leave one estimator out")):
        print(f"\n## {title}\n")
        print(markdown_table(tables[group]))
        print("\nThe same picks, against the medians of the repeats:\n")
        print(markdown_table(tables[f"{group}, medians"]))
    if args.tpch_scale > 0:
        model = train_cost_model(frame)
        table, times = tpch_table(model, args.tpch_scale, data_home=args.tpch_home)
        print(f"\n## TPC-H (scale factor {args.tpch_scale}), model trained on all synthetic "
              "measurements\n")
        print(markdown_table(table))
        print("\nmeasured seconds per estimator:\n")
        print(times.round(4).to_string())
    overhead = decision_overhead()
    print(f"\n## Decision overhead ({overhead['source']})\n")
    print(f"first call of a process {overhead['first_ms']:.1f} ms; then median "
          f"{overhead['median_ms']:.2f} ms, p95 {overhead['p95_ms']:.2f} ms per fit (wall "
          f"clock); mean CPU time {overhead['cpu_ms']:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
