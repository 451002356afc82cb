"""FactorizedKMeans on a star, its labelling paths side by side: the full argmin over every
center, against the exact bound that labels most samples from their dimension row alone
(the ``pruned_argmin_min_share`` setting), the samples in the order of their dimension's
rows against their own (the ``locality_order_min_bytes`` setting: 0 always reorders them,
a huge value never), and scikit-learn's KMeans on the joined matrix.

Interleaved repeats from the same initial centers, 20 iterations (``tol=0``), the join
excluded, on the threads the library and scikit-learn choose; medians. Also one fit on a
wide one-hot star (sparse dimensions, which the bound does not take), to show that it stays
sparse and what it costs.

    python benchmarks/kmeans_paths.py                   # 1M rows, cells 100x10 and 20x4
    python benchmarks/kmeans_paths.py --rows 200000 --repeats 3
    python benchmarks/kmeans_paths.py --output /tmp/kmeans_paths.json

Writes ``benchmarks/results/kmeans_paths.json`` (or ``--output``).
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from sklearn_ilargi import FactorizedKMeans, config_context, from_tables
from sklearn_ilargi.datasets import make_onehot_star, make_star

RESULTS = Path(__file__).parent / "results"
N_CLUSTERS, N_ITERATIONS = 8, 20


def cell(tuple_ratio, feature_ratio, n_rows, repeats):
    s = make_star(n_rows, 1, tuple_ratio=tuple_ratio, feature_ratio=feature_ratio,
                  n_fact_features=5, random_state=0)
    nm, _ = from_tables(s.base, s.joins, target=s.target)
    T = nm.materialize()
    init = T[np.random.default_rng(0).choice(len(T), N_CLUSTERS, replace=False)]
    params = dict(n_clusters=N_CLUSTERS, init=init, n_init=1, max_iter=N_ITERATIONS, tol=0.0)
    sides = {
        "full_argmin": lambda: _fit(nm, params, 2.0),
        "bound": lambda: _fit(nm, params, None),
        "dimension_order": lambda: _fit(nm, params, None, 0),
        "samples_order": lambda: _fit(nm, params, None, NEVER),
        "sklearn": lambda: KMeans(**params).fit(T),
    }
    seconds, models = {name: [] for name in sides}, {}
    for _ in range(repeats):
        for name, fit in sides.items():
            start = time.perf_counter()
            models[name] = fit()
            seconds[name].append(time.perf_counter() - start)
    median = {name: float(np.median(times)) for name, times in seconds.items()}
    same = all(np.array_equal(models[name].labels_, models["sklearn"].labels_)
               for name in sides if name != "sklearn")
    return {"tuple_ratio": tuple_ratio, "feature_ratio": feature_ratio,
            "shape": list(T.shape), "seconds": median,
            "sklearn_over_bound": median["sklearn"] / median["bound"],
            "sklearn_over_full_argmin": median["sklearn"] / median["full_argmin"],
            "full_argmin_over_bound": median["full_argmin"] / median["bound"],
            "samples_order_over_dimension_order": (median["samples_order"]
                                                   / median["dimension_order"]),
            "same_labels_as_sklearn": bool(same)}


#: A ``locality_order_min_bytes`` that no dimension reaches: the samples' own order.
NEVER = 1 << 62


def _fit(X, params, min_share, min_bytes=None):
    settings = {} if min_share is None else {"pruned_argmin_min_share": min_share}
    if min_bytes is not None:
        settings["locality_order_min_bytes"] = min_bytes
    with config_context(**settings), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return FactorizedKMeans(strategy="factorized", **params).fit(X)


def onehot(repeats):
    X, _, _ = make_onehot_star(30_000, (100_000, 3_000), n_categories=(5,), n_numeric=1,
                               offset=0.0, return_X_y=True, random_state=0)
    params = dict(n_clusters=4, random_state=0, max_iter=5, tol=0.0)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        _fit(X, params, None)
        times.append(time.perf_counter() - start)
    return {"shape": list(X.shape), "seconds": float(np.median(times))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cells", nargs="+", default=["100x10", "20x4"])
    parser.add_argument("--output", default=None,
                        help="the results file (default: benchmarks/results/kmeans_paths.json)")
    args = parser.parse_args()
    rows = []
    for spec in args.cells:
        tuple_ratio, feature_ratio = (int(v) for v in spec.split("x"))
        row = cell(tuple_ratio, feature_ratio, args.rows, args.repeats)
        rows.append(row)
        print(f"TR={tuple_ratio} FR={feature_ratio}: sklearn / bound "
              f"{row['sklearn_over_bound']:.2f}x, sklearn / full argmin "
              f"{row['sklearn_over_full_argmin']:.2f}x, full argmin / bound "
              f"{row['full_argmin_over_bound']:.2f}x, samples' order / dimension's "
              f"{row['samples_order_over_dimension_order']:.2f}x, same labels "
              f"{row['same_labels_as_sklearn']}", flush=True)
    wide = onehot(max(1, args.repeats // 2))
    print(f"wide one-hot star {wide['shape']}: {wide['seconds']:.2f} s", flush=True)
    out = Path(args.output) if args.output else RESULTS / "kmeans_paths.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": args.rows, "repeats": args.repeats,
                               "iterations": N_ITERATIONS, "cells": rows,
                               "wide_onehot": wide}, indent=2) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
