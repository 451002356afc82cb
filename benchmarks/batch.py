"""Batch workloads: model selection that shares its work, and Ilargi's batch metric.

Two sections, each measured side by side in one run (ratios of interleaved medians, see
``_timing.median_times``; absolute seconds on a shared machine mean little):

- ``selection`` (the issue's (b)): on TPC-H's lineitem snowflake and on a one-hot star
  (``make_onehot_star``), ``GridSearchCV(FactorizedRidge(), 30 alphas, cv=5)`` without the
  cache and with ``cache="memory"`` (cleared before every run, so that each run computes
  every fold's results once), ``FactorizedRidgeCV(alphas=30 values, cv=5)`` where it exists,
  one ``FactorizedRidge`` fit, and scikit-learn's ``RidgeCV(alphas, cv=5)`` on the join made
  by ``pandas.merge`` + ``get_dummies`` (``join_with_pandas``), the join included. Every
  estimator runs with its defaults otherwise (``strategy="auto"``).
- ``batch`` (the issue's (a)): a batch of tasks, the seven estimators over scenarios of the
  calibration's synthetic families (``cost/calibration/_scenarios.py``), a one-hot star and
  TPC-H. Per task, the factorized and the materialized fit are timed (the oracle takes the
  faster one) and ``strategy="auto"`` is asked which it takes (its time is that path's).
  Reported for auto, always-factorize and the oracle: the arithmetic mean of the per-task
  speed-ups against always-materialize (Ilargi's batch metric), and the total time of the
  batch against always-materialize's.

Usage::

    python benchmarks/batch.py                       # both sections, TPC-H SF1
    python benchmarks/batch.py --tpch-scale 0.02     # a scale that fits a shared machine
    python benchmarks/batch.py --section selection --onehot-rows 20000
    python benchmarks/batch.py --section selection --no-sklearn-join   # a shared machine
    python benchmarks/batch.py --section selection --no-sklearn-join --no-grid-search \
        --selection-repeats 3                        # FactorizedRidgeCV against one fit
    python benchmarks/batch.py --section batch --per-family 2 --size-scale 0.3

Writes ``benchmarks/results/batch.json`` (``batch_selection.json`` or ``batch_batch.json``
for one section) and prints markdown tables. Never asserts.
"""

import math
import time
import warnings

import numpy as np
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import GridSearchCV

from _timing import arguments, machine, median_times, write_results
from sklearn_ilargi import (
    FactorizedKMeans,
    FactorizedLinearRegression,
    FactorizedLogisticRegression,
    FactorizedNMF,
    FactorizedPCA,
    FactorizedRidge,
    FactorizedStandardScaler,
    cache_info,
    clear_cache,
    config_context,
    from_tables,
)
from sklearn_ilargi.cost._hardware import available_memory
from sklearn_ilargi.cost.calibration._scenarios import FAMILIES, make_calibration_scenario
from sklearn_ilargi.datasets import join_with_pandas, make_onehot_star
from sklearn_ilargi.datasets._tpch import (
    GENERATOR_MISSING,
    TPCH_FEATURES,
    TPCH_KEYS,
    generator_path,
    load_tpch,
    tpch_description,
)

#: Least seconds of one timed sample of a batch task (see ``batch_tasks``).
MIN_SAMPLE_SECONDS = 0.2

#: Most ``size_scale`` of the one-hot family in the batch (see ``batch_datasets``).
ONEHOT_SIZE_SCALE = 0.1

#: The penalties of every search: 30 values, log-spaced.
ALPHAS = np.logspace(-3, 3, 30)
FOLDS = 5

#: The seven estimators of the batch, with the parameters that fix their work (as the
#: calibration's workloads fix them) and the target each fit takes.
BATCH_ESTIMATORS = {
    "LinearRegression": (FactorizedLinearRegression, {}, "regression"),
    "Ridge": (FactorizedRidge, {"alpha": 1.0}, "regression"),
    "LogisticRegression": (FactorizedLogisticRegression, {"max_iter": 30}, "classes"),
    "KMeans": (FactorizedKMeans, {"n_clusters": 8, "max_iter": 20, "n_init": 1, "tol": 0.0,
                                  "random_state": 0}, None),
    "NMF": (FactorizedNMF, {"n_components": 5, "max_iter": 30, "tol": 0.0,
                            "random_state": 0}, None),
    "PCA": (FactorizedPCA, {"n_components": 5, "random_state": 0}, None),
    "StandardScaler": (FactorizedStandardScaler, {}, None),
}


# ---------------------------------------------------------------------- data
def tpch_tables(scale_factor):
    """TPC-H's tables for the lineitem snowflake, as ``from_tables`` arguments."""
    target = "l_extendedprice"
    columns = {t: TPCH_FEATURES[t] + TPCH_KEYS[t] for t in TPCH_FEATURES}
    columns["lineitem"] = columns["lineitem"] + [target]
    tables = load_tpch(scale_factor, tables=list(TPCH_FEATURES), columns=columns)
    return tpch_description(tables, target=target)


def onehot_tables(n_rows, n_ids, n_categories):
    """A one-hot star's tables as ``from_tables`` arguments (numeric columns with offsets)."""
    s = make_onehot_star(n_rows, n_ids, n_categories=n_categories, n_numeric=2,
                         random_state=0)
    return {"base": s.base, "joins": s.joins, "target": s.target}


# ---------------------------------------------------------------------- (b) selection
def ridge_cv_class():
    """``FactorizedRidgeCV`` where this version has it, else None."""
    try:
        from sklearn_ilargi.linear_model import FactorizedRidgeCV
    except ImportError:
        return None
    return FactorizedRidgeCV


def selection_case(label, description, repeats, search_alphas, sklearn_join=True,
                   grid_search=True):
    """Time the searches of one dataset; returns its row of results.

    The two searches that share no work across penalties (the grid search without the
    cache, and scikit-learn's ``RidgeCV(cv=5)``, a grid search of ``Ridge`` inside) fit every
    penalty and fold on its own, so their time grows by one fold's fits per penalty. Where
    ``search_alphas`` (None: all below a million rows, else 2) is below ``len(ALPHAS)``,
    they run on that many of the penalties, spread over the range, and
    their time for all of them is extrapolated: ``(5 * 30 + 1) / (5 * k + 1)`` times the
    fits (the refit included), plus scikit-learn's join once. Measured and extrapolated
    seconds are both kept, and the row says so. Without ``grid_search``, the two grid
    searches are left out (``FactorizedRidgeCV`` against one fit, in minutes less).
    """
    X, y = from_tables(**description)
    print(f"\n{label}: {X.shape[0]} rows x {X.shape[1]} columns, {len(X.blocks)} blocks",
          flush=True)
    if search_alphas is None:  # all of them below a million rows
        search_alphas = len(ALPHAS) if X.shape[0] < 1_000_000 else 2
    k = min(search_alphas, len(ALPHAS))
    few = ALPHAS[np.linspace(0, len(ALPHAS) - 1, k).round().astype(int)]
    scale = (FOLDS * len(ALPHAS) + 1) / (FOLDS * k + 1)
    recorded = {}  # the join's seconds and the cache's counts, from inside the runs

    def search(alphas=ALPHAS):
        return GridSearchCV(FactorizedRidge(), {"alpha": list(alphas)}, cv=FOLDS).fit(X, y)

    def search_with_cache():
        clear_cache()  # each run computes every fold's results once
        with config_context(cache="memory"):
            fitted = search()
            recorded["cache"] = cache_info()
        clear_cache()
        return fitted

    def one_fit():
        return FactorizedRidge().fit(X, y)

    def sklearn_on_the_join():
        start = time.perf_counter()
        frame, target = join_with_pandas(**description)
        T = frame.to_numpy(dtype=np.float64)
        del frame
        recorded["join_seconds"] = time.perf_counter() - start
        return RidgeCV(alphas=few, cv=FOLDS).fit(T, target)

    functions = {"grid_search": lambda: search(few), "grid_search_cached": search_with_cache,
                 "one_fit": one_fit, "sklearn_ridge_cv_with_join": sklearn_on_the_join}
    if not grid_search:
        del functions["grid_search"], functions["grid_search_cached"]
    ridge_cv = ridge_cv_class()
    if ridge_cv is not None:
        functions["ridge_cv"] = lambda: ridge_cv(alphas=ALPHAS, cv=FOLDS).fit(X, y)
    # The join and scikit-learn's fits hold about three copies of the joined matrix.
    needed = 3.2 * X.shape[0] * X.shape[1] * 8
    skipped = not sklearn_join or needed > available_memory()
    if skipped:
        del functions["sklearn_ridge_cv_with_join"]
    # The searches take minutes: one run each, interleaved, after no warm-up.
    times = dict(zip(functions, median_times(list(functions.values()), repeats=repeats,
                                             warmup=0)))
    measured = dict(times)
    if grid_search:
        times["grid_search"] *= scale
    if not skipped:
        join = recorded["join_seconds"]
        times["sklearn_ridge_cv_with_join"] = join + (measured["sklearn_ridge_cv_with_join"]
                                                     - join) * scale
    row = {"dataset": label, "shape": list(X.shape), "seconds": times,
           "strategy": one_fit().strategy_, "ratios": {}}
    if grid_search:
        info = recorded["cache"]  # what the last run with the cache did
        row.update(cache_hits=info.hits, cache_misses=info.misses)
        row["ratios"]["grid_search / grid_search_cached"] = (times["grid_search"]
                                                             / times["grid_search_cached"])
    extrapolated = [n for n in ("grid_search", "sklearn_ridge_cv_with_join") if n in measured]
    if k < len(ALPHAS) and extrapolated:
        row["measured_seconds"] = measured
        row["extrapolated"] = (
            f"{' and '.join(extrapolated)} ran {k} of the {len(ALPHAS)} "
            f"penalties; their seconds are extrapolated (fits times {scale:.3g}, "
            "scikit-learn's join once)")
    if skipped:
        row["note"] = (f"scikit-learn's RidgeCV left out: it needs about {needed / 2**30:.1f} "
                       "GiB, more than the memory available" if sklearn_join else
                       "scikit-learn's RidgeCV left out (--no-sklearn-join)")
    else:
        row["join_seconds"] = recorded["join_seconds"]
        if grid_search:
            row["ratios"]["sklearn_ridge_cv_with_join / grid_search_cached"] = (
                times["sklearn_ridge_cv_with_join"] / times["grid_search_cached"])
    if ridge_cv is None:
        row["note"] = "FactorizedRidgeCV is not in this version: its rows are left out."
    else:
        row["ratios"]["ridge_cv / one_fit"] = times["ridge_cv"] / times["one_fit"]
        if not skipped:
            row["ratios"]["sklearn_ridge_cv_with_join / ridge_cv"] = (
                times["sklearn_ridge_cv_with_join"] / times["ridge_cv"])
        if grid_search:
            row["ratios"]["grid_search_cached / ridge_cv"] = (
                times["grid_search_cached"] / times["ridge_cv"])
    return row


def print_selection(rows):
    names = list(dict.fromkeys(name for row in rows for name in row["ratios"]))
    print("\n| dataset | shape | path | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for row in rows:
        ratios = " | ".join(f"{row['ratios'][n]:.2f}" if n in row["ratios"] else "-"
                            for n in names)
        print(f"| {row['dataset']} | {row['shape'][0]}x{row['shape'][1]} | "
              f"{row['strategy']} | {ratios} |")
    for row in rows:
        seconds = ", ".join(f"{k} {v:.2f}" for k, v in row["seconds"].items())
        cache = (f"; gram misses/hits with the cache: {row['cache_misses'].get('gram', 0)}/"
                 f"{row['cache_hits'].get('gram', 0)}" if "cache_hits" in row else "")
        print(f"{row['dataset']} seconds: {seconds}{cache}"
              + (f" ({row['note']})" if "note" in row else "")
              + (f" ({row['extrapolated']})" if "extrapolated" in row else ""))


# ---------------------------------------------------------------------- (a) batch
def batch_datasets(per_family, size_scale, tpch_scale, onehot_rows):
    """``(label, X, y_regression, y_classes)`` of every dataset of the batch."""
    for family in FAMILIES:
        # The one-hot family's materialized PCA holds its dense join: kept to the size
        # whose tasks already take a second.
        scale = min(size_scale, ONEHOT_SIZE_SCALE) if family == "onehot" else size_scale
        for seed in range(per_family):
            s = make_calibration_scenario(family, 1000 + seed, scale)
            yield s.id, s.X, s.y_regression, s.y_classes
    X, y = from_tables(**onehot_tables(onehot_rows, (onehot_rows // 20, onehot_rows // 100),
                                       (20,)))
    yield "onehot-star", X, y, (y > np.median(y)).astype(int)
    if tpch_scale:
        X, y = from_tables(**tpch_tables(tpch_scale))
        yield f"tpch-sf{tpch_scale:g}", X, y, (y > np.median(y)).astype(int)


def fitter(cls, params, target, X, y_regression, y_classes, strategy):
    """A function that fits one task under ``strategy`` and returns the fitted estimator."""
    params = dict(params)
    if "n_components" in params:  # small scenarios can be narrower than five components
        params["n_components"] = max(1, min(params["n_components"], min(X.shape) - 1))
    y = {"regression": y_regression, "classes": y_classes}.get(target)
    if cls is FactorizedNMF:  # NMF takes no negative values: it runs on their magnitudes
        X = abs(X)

    def fit():
        estimator = cls(**params, strategy=strategy)
        return estimator.fit(X, y) if y is not None else estimator.fit(X)

    return fit


def seconds_of(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def runs(function, number):
    """``function`` run ``number`` times in a row: one timed sample."""
    def run():
        for _ in range(number):
            function()
    return run


def batch_tasks(datasets, repeats, save):
    """Time every task; ``save(rows)`` after each dataset keeps what a cut run measured.

    One run of each path warms it up and sizes its samples: a path that takes less than
    ``MIN_SAMPLE_SECONDS`` runs as many times per sample as reach it (as ``timeit`` does);
    its time is per run."""
    rows = []
    for label, X, y_regression, y_classes in datasets:
        for name, (cls, params, target) in BATCH_ESTIMATORS.items():
            fits = {s: fitter(cls, params, target, X, y_regression, y_classes, s)
                    for s in ("factorized", "materialized", "auto")}
            chosen = fits["auto"]().strategy_
            paths = ("factorized", "materialized")
            number = [max(1, math.ceil(MIN_SAMPLE_SECONDS / max(seconds_of(fits[s]), 1e-6)))
                      for s in paths]
            factorized, materialized = (
                t / n for t, n in zip(median_times([runs(fits[s], n) for s, n in
                                                    zip(paths, number)],
                                                   repeats=repeats, warmup=0), number))
            rows.append({"dataset": label, "estimator": name, "shape": list(X.shape),
                         "factorized": factorized, "materialized": materialized,
                         "auto_strategy": chosen, "runs_per_sample": number})
            print(f"{label:>16} {name:>18}: factorized {factorized:.3f}s, materialized "
                  f"{materialized:.3f}s ({repeats} samples of {number} runs), auto takes "
                  f"{chosen}", flush=True)
        save(rows)
    return rows


def batch_metric(rows):
    """Per policy: the mean of per-task speed-ups against always-materialize, and the total
    time against always-materialize's."""
    materialized = np.array([r["materialized"] for r in rows])
    policies = {
        "auto": np.array([r[r["auto_strategy"]] for r in rows]),
        "always_factorize": np.array([r["factorized"] for r in rows]),
        "oracle": np.minimum(materialized, [r["factorized"] for r in rows]),
    }
    return {name: {"mean_speedup": float(np.mean(materialized / seconds)),
                   "total_seconds": float(seconds.sum()),
                   "total_vs_materialize": float(materialized.sum() / seconds.sum())}
            for name, seconds in policies.items()} | {
        "always_materialize": {"mean_speedup": 1.0,
                               "total_seconds": float(materialized.sum()),
                               "total_vs_materialize": 1.0}}


def print_batch(metric, n_tasks):
    print(f"\nBatch of {n_tasks} tasks: speed-ups against always-materialize")
    print("| policy | mean per-task speed-up | total time (s) | total speed-up |")
    print("|---|---|---|---|")
    for name, m in metric.items():
        print(f"| {name} | {m['mean_speedup']:.3f} | {m['total_seconds']:.2f} | "
              f"{m['total_vs_materialize']:.3f} |")


# ---------------------------------------------------------------------- main
def main():
    parser = arguments(__doc__, repeats=3)
    parser.add_argument("--section", choices=("selection", "batch", "both"), default="both")
    parser.add_argument("--tpch-scale", type=float, default=1.0,
                        help="TPC-H scale factor of the selection (0 leaves TPC-H out)")
    parser.add_argument("--batch-tpch-scale", type=float, default=0.1,
                        help="TPC-H scale factor of the batch (0 leaves TPC-H out)")
    parser.add_argument("--selection-repeats", type=int, default=1,
                        help="runs of each search (they take minutes)")
    parser.add_argument("--search-alphas", type=int, default=None,
                        help="penalties that the searches without shared work run, the "
                             "rest extrapolated (default: all below 10^6 rows, else 2)")
    parser.add_argument("--no-sklearn-join", dest="sklearn_join", action="store_false",
                        help="leave out scikit-learn's RidgeCV on the join, which holds "
                             "about three copies of the joined matrix (a shared machine)")
    parser.add_argument("--no-grid-search", dest="grid_search", action="store_false",
                        help="leave out the grid searches: FactorizedRidgeCV against one "
                             "fit (and scikit-learn's RidgeCV)")
    parser.add_argument("--onehot-rows", type=int, default=20_000,
                        help="events of the one-hot stars")
    parser.add_argument("--per-family", type=int, default=1,
                        help="scenarios per synthetic family in the batch")
    parser.add_argument("--size-scale", type=float, default=1.0,
                        help="scales the rows of the synthetic scenarios")
    args = parser.parse_args()
    if (args.tpch_scale or args.batch_tpch_scale) and generator_path() is None:
        print(f"TPC-H left out: {GENERATOR_MISSING}")
        args.tpch_scale = args.batch_tpch_scale = 0.0
    info = machine()
    print(f"{info['cores']} cores, BLAS {info['blas']}")
    results = {"machine": info, "arguments": {k: str(v) for k, v in vars(args).items()},
               "alphas": len(ALPHAS), "folds": FOLDS}
    name = "batch.json" if args.section == "both" else f"batch_{args.section}.json"
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ill-conditioned small penalties, convergence
        if args.section in ("selection", "both"):
            cases = [(f"one-hot star n={args.onehot_rows}",
                      onehot_tables(args.onehot_rows, (args.onehot_rows // 100,
                                                       args.onehot_rows // 400), (20,)))]
            if args.tpch_scale:
                cases.insert(0, (f"TPC-H SF{args.tpch_scale:g}", tpch_tables(args.tpch_scale)))
            rows = [selection_case(label, description, args.selection_repeats,
                                   args.search_alphas, args.sklearn_join, args.grid_search)
                    for label, description in cases]
            results["selection"] = rows
            print_selection(rows)
        if args.section in ("batch", "both"):
            def save(rows):
                results["batch"] = {"tasks": rows, "metric": batch_metric(rows)}
                write_results(args.out, name, results)

            tasks = batch_tasks(batch_datasets(args.per_family, args.size_scale,
                                               args.batch_tpch_scale, args.onehot_rows),
                                args.repeats, save)
            metric = batch_metric(tasks)
            results["batch"] = {"tasks": tasks, "metric": metric}
            print_batch(metric, len(tasks))
    results["seconds"] = time.perf_counter() - started
    write_results(args.out, name, results)


if __name__ == "__main__":
    main()
