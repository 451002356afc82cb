"""``strategy="auto"`` against the faster forced path, per estimator, on wide one-hot stars.

Over ``make_onehot_star`` data (Zipf-distributed foreign keys into two entities whose ids and
categories one-hot encode to thousands of columns), each of the seven estimators is fitted
with ``strategy="factorized"``, ``"materialized"`` (the fit builds the CSR join) and
``"auto"`` (the shipped cost model, or the one the ``cost_model`` setting names), interleaved.
The ratio to read is ``auto / min(factorized, materialized)``: 1 where auto picks the faster
path, above 1 by as much as a wrong pick costs. Each cell is the median of ``--repeats`` fits,
or of more where a fit takes milliseconds (``MIN_SECONDS``).
A forced path that the dispatcher rules out for memory (it raises ``InsufficientMemoryError``
before allocating) is recorded as skipped, with the reason, and the ratio is over the paths
that ran.

    python benchmarks/auto_wide.py [--repeats 3] [--full] [--scale 1] [--out benchmarks/results]
    python benchmarks/auto_wide.py --scale 0.5 --estimators KMeans NMF StandardScaler
"""

import math
import time
import warnings

from _timing import arguments, machine, median_times, write_results
from sklearn_ilargi import (
    FactorizedKMeans,
    FactorizedLinearRegression,
    FactorizedLogisticRegression,
    FactorizedNMF,
    FactorizedPCA,
    FactorizedRidge,
    FactorizedStandardScaler,
    InsufficientMemoryError,
)
from sklearn_ilargi.datasets import make_onehot_star

#: The estimators as a user fits them, iterative ones with a bounded number of iterations.
#: The scaler does not center: centering needs the join dense, which does not fit here.
ESTIMATORS = {
    "LinearRegression": (lambda: FactorizedLinearRegression(), "regression"),
    "Ridge": (lambda: FactorizedRidge(alpha=1.0), "regression"),
    "LogisticRegression": (lambda: FactorizedLogisticRegression(max_iter=30), "classes"),
    "KMeans": (lambda: FactorizedKMeans(8, n_init=1, max_iter=20, random_state=0), None),
    "NMF": (lambda: FactorizedNMF(5, max_iter=30, random_state=0), None),
    "PCA": (lambda: FactorizedPCA(5, random_state=0), None),
    "StandardScaler": (lambda: FactorizedStandardScaler(with_mean=False), None),
}
#: (events, ids of each entity, categories of each entity, numeric columns per table: dates
#: or prices, positive for NMF). The second star's entities carry more values per row.
SHAPES = [
    (100_000, (20_000, 5_000), (20,), 0),
    (100_000, (20_000, 4_000), (50, 20), 2),
]
STRATEGIES = ("factorized", "materialized", "auto")
#: Fits of a few milliseconds are repeated until the strategies have run about this many
#: seconds together (at most ``MAX_ROUNDS`` rounds), so that a median is not one scheduler
#: tick's noise.
MIN_SECONDS, MAX_ROUNDS = 4.0, 200
#: ``--full`` adds the larger star of ``sparse_paths.py``.
FULL_SHAPES = [(250_000, (50_000, 20_000), (20,), 0)]


def measure(shape, repeats, scale=1.0, estimators=tuple(ESTIMATORS)):
    n_rows, n_ids, n_categories, n_numeric = shape
    n_rows, n_ids = int(n_rows * scale), tuple(int(n * scale) for n in n_ids)
    X, y, y_class = make_onehot_star(n_rows, n_ids, n_categories=n_categories,
                                     n_numeric=n_numeric, offset=10.0, random_state=0,
                                     return_X_y=True)
    result = {"shape": list(X.shape), "params": list(shape), "estimators": {}}
    for name in estimators:
        make, target = ESTIMATORS[name]
        target = {"regression": y, "classes": y_class}.get(target)

        fitted = {}

        def fit(strategy):
            args = (X,) if target is None else (X, target)

            def run():
                fitted[strategy] = make().set_params(strategy=strategy).fit(*args)
            return run

        runs, row, warmup_s = {}, dict.fromkeys(STRATEGIES), 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence notes of the bounded fits
            for strategy in STRATEGIES:  # the warm-up fits, which find the paths ruled out
                try:
                    start = time.perf_counter()
                    fit(strategy)()
                    warmup_s += time.perf_counter() - start
                    runs[strategy] = fit(strategy)
                except InsufficientMemoryError as error:
                    row[f"{strategy}_skipped"] = str(error)
            rounds = max(repeats,
                         min(MAX_ROUNDS, math.ceil(MIN_SECONDS / max(warmup_s, 1e-9))))
            times = median_times(list(runs.values()), rounds, warmup=0)
        row["repeats"] = rounds
        row.update(zip(runs, times))
        decision = fitted["auto"].decision_ if "auto" in fitted else None
        row["auto_strategy"] = decision.strategy if decision else None
        row["solver"] = decision.solver if decision else ""
        result["estimators"][name] = row
        print(shape, name, {k: round(v, 3) if isinstance(v, float) else v
                            for k, v in row.items() if not k.endswith("_skipped")}, flush=True)
        for strategy in STRATEGIES:
            if row.get(f"{strategy}_skipped"):
                print(f"  {strategy} skipped: {row[f'{strategy}_skipped']}", flush=True)
    return result


def _cell(seconds):
    return "skipped" if seconds is None else f"{seconds:.3g}"


def markdown(results):
    lines = ["times in s; auto over the faster of factorized and materialized that ran (1.00x: "
             "auto picked it; skipped: ruled out for memory before allocating)", "",
             "| shape | estimator | solver | factorized | materialized | auto | auto / best |",
             "|---|---|---|---:|---:|---|---:|"]
    for r in results:
        for name, t in r["estimators"].items():
            ran = [t[s] for s in ("factorized", "materialized") if t[s] is not None]
            ratio = (f"{t['auto'] / min(ran):.2f}x" if ran and t["auto"] is not None
                     else "-")
            auto = _cell(t["auto"]) + (f" ({t['auto_strategy']})" if t["auto_strategy"] else "")
            lines.append(
                f"| {r['shape'][0]} x {r['shape'][1]} | {name} | {t['solver'] or '-'} | "
                f"{_cell(t['factorized'])} | {_cell(t['materialized'])} | {auto} | {ratio} |")
    return "\n".join(lines)


def main():
    parser = arguments(__doc__, repeats=3)
    parser.add_argument("--full", action="store_true",
                        help="add the 250,000-row star of 70,000 one-hot columns")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiplies the events and ids of every star")
    parser.add_argument("--estimators", nargs="+", choices=list(ESTIMATORS),
                        default=list(ESTIMATORS), help="the estimators to fit (default: all)")
    args = parser.parse_args()
    info = machine()
    print(f"# auto on wide one-hot stars: {info['cores']} cores, BLAS {info['blas']}, "
          f"median of {args.repeats}")
    results = [measure(shape, args.repeats, args.scale, args.estimators)
               for shape in SHAPES + (FULL_SHAPES if args.full else [])]
    print()
    print(markdown(results))
    write_results(args.out, "auto_wide.json",
                  {"machine": info, "repeats": args.repeats, "scale": args.scale,
                   "estimators": args.estimators, "results": results})


if __name__ == "__main__":
    main()
