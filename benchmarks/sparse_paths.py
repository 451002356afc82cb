"""K-means on wide one-hot stars: factorized against the CSR join and scikit-learn.

Over ``make_onehot_star`` data (Zipf-distributed foreign keys into two entities whose ids and
categories one-hot encode to tens of thousands of columns), ``FactorizedKMeans`` is fitted
factorized, materialized (the fit builds the CSR join) and with ``strategy="auto"``, and
scikit-learn's ``KMeans`` (Lloyd) on the CSR join built beforehand. Two fits each:

- ``k-means++``: the default initialization (which selects rows of ``X``) and tolerance;
  scikit-learn seeds differently, so its iterations differ from ours;
- ``same centers``: from the same initial centers (rows of the join), ``max_iter``
  iterations at most with ``tol=0``, the same work on every side.

Each cell is the median of ``--repeats`` interleaved fits; ratios are of one run.

    python benchmarks/sparse_paths.py [--repeats 3] [--full] [--out benchmarks/results]
"""

import warnings

import numpy as np
from sklearn.cluster import KMeans

from _timing import arguments, machine, median_times, write_results
from sklearn_ilargi import FactorizedKMeans
from sklearn_ilargi.datasets import make_onehot_star

N_CLUSTERS = 8
MAX_ITER = 10
#: (events, ids of each entity); ``--full`` adds the issue's acceptance shape.
SHAPES = [(100_000, (20_000, 5_000)), (250_000, (50_000, 20_000))]
FULL_SHAPES = [(500_000, (50_000, 20_000))]


def fits(X, joined, init):
    """Per side, a function fitting it once; ``init`` None for k-means++."""
    common = dict(n_clusters=N_CLUSTERS, random_state=0)
    if init is None:
        ours = dict(common)
        theirs = dict(common, n_init=1)
    else:
        ours = dict(common, init=init, n_init=1, max_iter=MAX_ITER, tol=0.0)
        theirs = dict(ours)

    def ilargi(strategy):
        return lambda: FactorizedKMeans(strategy=strategy, **ours).fit(X)

    return {
        "factorized": ilargi("factorized"),
        "materialized": ilargi("materialized"),
        "auto": ilargi("auto"),
        "sklearn": lambda: KMeans(algorithm="lloyd", **theirs).fit(joined),
    }


def measure(n_rows, n_ids, repeats):
    X, _, _ = make_onehot_star(n_rows, n_ids, n_categories=(20,), random_state=0,
                               return_X_y=True)
    (join_s,) = median_times([X.materialize], repeats)
    joined = X.materialize()
    rows = np.random.default_rng(0).choice(n_rows, N_CLUSTERS, replace=False)
    init = X[rows].materialize(sparse=False)
    out = {"shape": list(X.shape), "join_nnz": int(joined.nnz), "join_s": join_s}
    for name, start in (("k-means++", None), ("same centers", init)):
        functions = fits(X, joined, start)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            times = median_times(list(functions.values()), repeats)
            auto = functions["auto"]().strategy_
        out[name] = dict(zip(functions, times), auto_strategy=auto)
    return out


def markdown(results):
    lines = ["times in s; ratios over the factorized fit (above 1: factorized is faster); "
             "auto over the faster of factorized and materialized", "",
             "| shape | fit | factorized | materialized | sklearn on the CSR join | auto |",
             "|---|---|---:|---:|---:|---:|"]
    for r in results:
        for fit in ("k-means++", "same centers"):
            t = r[fit]
            best = min(t["factorized"], t["materialized"])
            lines.append(
                f"| {r['shape'][0]} x {r['shape'][1]} | {fit} | {t['factorized']:.3g} | "
                f"{t['materialized'] / t['factorized']:.2f}x | "
                f"{t['sklearn'] / t['factorized']:.2f}x | "
                f"{t['auto'] / best:.2f}x ({t['auto_strategy']}) |")
    return "\n".join(lines)


def main():
    parser = arguments(__doc__, repeats=3)
    parser.add_argument("--full", action="store_true",
                        help="add the 500,000-row star of 70,000 one-hot ids")
    args = parser.parse_args()
    info = machine()
    print(f"# sparse paths: {info['cores']} cores, BLAS {info['blas']}, "
          f"median of {args.repeats}")
    results = []
    for n_rows, n_ids in SHAPES + (FULL_SHAPES if args.full else []):
        result = measure(n_rows, n_ids, args.repeats)
        results.append(result)
        print(result["shape"], {fit: {side: round(t, 3) for side, t in result[fit].items()
                                      if side != "auto_strategy"}
                                for fit in ("k-means++", "same centers")}, flush=True)
    print()
    print(markdown(results))
    write_results(args.out, "sparse_paths.json",
                  {"machine": info, "repeats": args.repeats, "n_clusters": N_CLUSTERS,
                   "max_iter": MAX_ITER, "results": results})


if __name__ == "__main__":
    main()
