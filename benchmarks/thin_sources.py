"""Thin sources kept factorized or stored gathered, against the materialized join.

Over the cost model's calibration scenarios with thin dimensions (sparse ones with fewer than
one value per target row once joined, the ``gathered_values_per_row`` setting, and dense ones
of one column), each calibration estimator is fitted three ways, interleaved: factorized with
those sources kept behind their row maps (``gathered_values_per_row=0``), factorized with them
stored gathered (the default), and on the materialized join. Each cell is the median of
``--repeats`` fits.

    python benchmarks/thin_sources.py [--seeds 8] [--repeats 5] [--out benchmarks/results]
"""

import warnings

import numpy as np

from _timing import arguments, machine, median_times, write_results
from sklearn_ilargi import config_context
from sklearn_ilargi.cost.calibration._scenarios import FAMILIES, make_calibration_scenario
from sklearn_ilargi.cost.calibration._workloads import WORKLOADS, run_workload

def scenario_pair(family, seed):
    """(kept, gathered) builds of one scenario, or None when nothing is thin."""
    gathered = make_calibration_scenario(family, seed)
    with config_context(gathered_values_per_row=0):
        kept = make_calibration_scenario(family, seed)
    if len(kept.X.blocks) == len(gathered.X.blocks):
        return None
    return kept, gathered


def measure(kept, gathered, repeats):
    out = {}
    for workload in WORKLOADS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_kept, t_gathered, t_mat = median_times([
                lambda: run_workload(workload, kept, "factorized"),
                lambda: run_workload(workload, gathered, "factorized"),
                lambda: run_workload(workload, gathered, "materialized"),
            ], repeats)
        out[workload.name] = {"kept_s": t_kept, "gathered_s": t_gathered,
                              "materialized_s": t_mat}
    return out


def markdown(results):
    names = [w.name.replace("Factorized", "") for w in WORKLOADS]
    lines = ["kept / gathered (above 1: gathering is faster), then materialized / gathered",
             "", "| scenario | shape | " + " | ".join(names) + " |",
             "|---|---|" + "---:|" * len(names)]
    for r in results:
        cells = " | ".join(
            f"{t['kept_s'] / t['gathered_s']:.2f}x, {t['materialized_s'] / t['gathered_s']:.2f}x"
            for t in r["times"].values())
        lines.append(f"| {r['scenario']} | {r['shape'][0]} x {r['shape'][1]} | {cells} |")
    ratios = np.array([[t["kept_s"] / t["gathered_s"], t["materialized_s"] / t["gathered_s"]]
                       for r in results for t in r["times"].values()])
    if len(ratios):
        lines += ["", f"median over {len(ratios)} fits: kept / gathered "
                      f"{np.median(ratios[:, 0]):.2f}x, materialized / gathered "
                      f"{np.median(ratios[:, 1]):.2f}x"]
    return "\n".join(lines)


def main():
    parser = arguments(__doc__, repeats=5)
    parser.add_argument("--seeds", type=int, default=8, help="scenarios to scan per family")
    args = parser.parse_args()
    info = machine()
    print(f"# thin sources: {info['cores']} cores, BLAS {info['blas']}, "
          f"median of {args.repeats}")
    results = []
    # The calibration's first seeds of each family (100,000 apart).
    plan = [(family, 100_000 * k + i) for k, family in enumerate(FAMILIES)
            for i in range(args.seeds)]
    for family, seed in plan:
        pair = scenario_pair(family, seed)
        if pair is None:
            continue
        kept, gathered = pair
        times = measure(kept, gathered, args.repeats)
        results.append({"scenario": gathered.id, "shape": list(gathered.X.shape),
                        "blocks": [len(kept.X.blocks), len(gathered.X.blocks)],
                        "times": times})
        print(gathered.id, ", ".join(
            f"{name} {t['kept_s'] / t['gathered_s']:.2f}x" for name, t in times.items()),
            flush=True)
    print()
    print(markdown(results))
    write_results(args.out, "thin_sources.json",
                  {"machine": info, "repeats": args.repeats, "results": results})


if __name__ == "__main__":
    main()
