"""End to end, from tables to a fitted model: factorized vs materialized vs pandas + scikit-learn.

For each dataset and estimator, three pipelines start from the same in-memory DataFrames:

- ``factorized``:   ``from_tables`` + the sklearn-ilargi estimator with ``strategy="factorized"``
- ``materialized``: ``from_tables`` + the same estimator with ``strategy="materialized"``
  (joins the NormalizedMatrix, then fits)
- ``pandas``:       ``pandas.merge`` + ``pandas.get_dummies`` (``join_with_pandas``) + the
  scikit-learn counterpart on the joined array

Times are medians of repeats measured side by side in one run; the ratios (``pandas /
factorized``, ``materialized / factorized``) are what to read, not the absolute seconds. Also
reported: what ``strategy="auto"`` picks, and how far the factorized model is from
scikit-learn's (coefficients and scales matched by feature name; inertia, explained variance and
reconstruction error as relative differences). NMF runs on the absolute values.

Datasets: synthetic stars over a tuple ratio x feature ratio grid (``make_star``) and the TPC-H
lineitem snowflake (``tpch_training_set``'s tables and features, SF1 by default).

The ``--iterative`` section measures the fits alone on one star per cell of a tuple ratio x
feature ratio grid at 1M target rows (a fact table of 5 columns and one dimension of
``1M / tuple ratio`` rows with ``5 x feature ratio`` columns). Per estimator, side by side in
one run: the factorized fit against scikit-learn's on the joined matrix with the join excluded
(both start from built matrices) and included (``from_tables`` against ``pandas.merge``), our
estimator on the plain joined array against scikit-learn's, the time per iteration, and the
share of the fit that its products take (the same products, timed alone, as many times as the
fit iterated). K-means, NMF (coordinate descent) and logistic regression run a fixed number of
iterations from the same initialization on both sides.

The ``--plain`` section fits each estimator and its scikit-learn counterpart on the same plain
numpy array (and, for those whose counterpart takes one, the same CSR matrix), with the same
parameters and start as the iterative section, at a few shapes from tall and narrow to short
and wide: ``ours / sklearn`` is the ratio of their interleaved medians.

Usage::

    python benchmarks/estimators.py                 # synthetic grid and TPC-H SF1
    python benchmarks/estimators.py --quick         # small grid, TPC-H SF0.1
    python benchmarks/estimators.py --no-tpch --repeats 5
    python benchmarks/estimators.py --iterative     # the iterative section, full grid
    python benchmarks/estimators.py --iterative --quick           # one small cell
    python benchmarks/estimators.py --iterative --cells 100x10 20x4
    python benchmarks/estimators.py --plain         # plain numpy and CSR input, three shapes
    python benchmarks/estimators.py --plain --shapes 200000x50

Writes ``benchmarks/results/estimators.json`` (``estimators_iterative.json`` for the iterative
section, suffixed by the cells and estimators of a restricted run, e.g.
``estimators_iterative_100x10_20x4_kmeans.json``; ``estimators_plain.json`` for the plain
one) and prints a markdown table. Never asserts.
"""

import argparse
import gc
import json
import os
import platform
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.cluster import KMeans
from sklearn.decomposition import NMF, PCA
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler

from sklearn_ilargi import (
    FactorizedKMeans,
    FactorizedLinearRegression,
    FactorizedLogisticRegression,
    FactorizedNMF,
    FactorizedPCA,
    FactorizedRidge,
    FactorizedStandardScaler,
    from_tables,
)
from sklearn_ilargi.datasets import join_with_pandas, make_star
from sklearn_ilargi.datasets._tpch import GENERATOR_MISSING, generator_path
from sklearn_ilargi.utils import TrainingMatrix

from _timing import machine, median_times, write_results

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def as_labels(y):
    """A binary target for the classifier: above or below the median."""
    return (y > np.median(y)).astype(np.int64)


def by_feature(attribute):
    """Largest |difference| of a per-feature attribute, relative to its largest |value|."""

    def gap(ours, theirs, our_names, their_names):
        position = {name: j for j, name in enumerate(their_names)}
        order = [position[name] for name in our_names]
        a = np.atleast_2d(getattr(ours, attribute))
        b = np.atleast_2d(getattr(theirs, attribute))[:, order]
        return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))

    return gap


def relative(attribute):
    """Relative difference of a fitted quantity that does not depend on the column order."""

    def gap(ours, theirs, our_names, their_names):
        a, b = np.asarray(getattr(ours, attribute)), np.asarray(getattr(theirs, attribute))
        return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))

    return gap


# name -> (ours, scikit-learn's, shared parameters, target, how to compare the two models,
#          what to feed: "as is" or "abs" for NMF, which needs non-negative data)
# K-means seeds differ by design (doc/user_guide/cluster.rst), so its inertias are compared, not
# centers; PCA's explained variances do not depend on the column order.
ESTIMATORS = {
    "Ridge": (FactorizedRidge, Ridge, {"alpha": 1.0}, "regress", by_feature("coef_"), None),
    "LogisticRegression": (FactorizedLogisticRegression, LogisticRegression,
                           {"C": 1.0, "max_iter": 100, "tol": 1e-4}, "classify",
                           by_feature("coef_"), None),
    "LinearRegression": (FactorizedLinearRegression, LinearRegression, {}, "regress",
                         by_feature("coef_"), None),
    "StandardScaler": (FactorizedStandardScaler, StandardScaler, {}, None,
                       by_feature("scale_"), None),
    "PCA": (FactorizedPCA, PCA, {"n_components": 5}, None,
            relative("explained_variance_"), None),
    "KMeans": (FactorizedKMeans, KMeans, {"n_clusters": 8, "n_init": 1, "random_state": 0},
               None, relative("inertia_"), None),
    "NMF": (FactorizedNMF, NMF, {"n_components": 5, "init": "nndsvda", "solver": "mu",
                                 "max_iter": 50, "tol": 0.0}, None,
            relative("reconstruction_err_"), "abs"),
}
# scikit-learn may center the joined array in place: the same model, one copy less of a
# matrix that at TPC-H SF1 is 6.5 GB.
SKLEARN_ONLY = {"Ridge": {"copy_X": False}, "LinearRegression": {"copy_X": False}}


def median_time(fn, repeats):
    """(median seconds, result of the last call)."""
    times, result = [], None
    for _ in range(repeats):
        result = None
        gc.collect()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def run_case(label, description, estimators, repeats, *, auto=True, on_row=None,
             classify_transform=as_labels):
    """Time the three pipelines for every estimator on one dataset.

    ``auto=False`` skips the extra fit that records what ``strategy="auto"`` picks;
    ``on_row`` is called with each result row as soon as it is measured.
    """
    rows = []
    X, y = from_tables(**description)  # warm-up, and the feature names
    print(f"\n{label}: X {X.shape[0]} x {X.shape[1]}, {len(X.blocks)} blocks", flush=True)
    del X
    for name in estimators:
        ours, theirs, params, kind, compare, feed = ESTIMATORS[name]

        def fit_args(X, y):
            X = abs(X) if feed == "abs" else X
            if kind is None:
                return (X,)
            return (X, classify_transform(y) if kind == "classify" else y)

        def factorized(strategy="factorized"):
            X, y = from_tables(**description)
            model = ours(strategy=strategy, **params).fit(*fit_args(X, y))
            return model, X.feature_names

        def pandas():
            frame, y = join_with_pandas(**description)
            names = list(frame.columns)
            values = frame.to_numpy(dtype=np.float64)
            del frame
            model = theirs(**params, **SKLEARN_ONLY.get(name, {}))
            return model.fit(*fit_args(values, y)), names

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t_fact, (model_f, names_f) = median_time(factorized, repeats)
            t_mat, (model_m, _) = median_time(lambda: factorized("materialized"), repeats)
            t_pd, (model_p, names_p) = median_time(pandas, repeats)
            choice = factorized("auto")[0].strategy_ if auto else None
        row = {
            "dataset": label, "estimator": name, "n_features": int(model_f.n_features_in_),
            "factorized_s": t_fact, "materialized_s": t_mat, "pandas_s": t_pd,
            "pandas_over_factorized": t_pd / t_fact,
            "materialized_over_factorized": t_mat / t_fact,
            "auto_choice": choice,
            "gap_vs_sklearn": compare(model_f, model_p, names_f, names_p),
            "gap_materialized": compare(model_f, model_m, names_f, names_f),
        }
        rows.append(row)
        if on_row is not None:
            on_row(row)
        print(f"  {name:<20} factorized {t_fact:8.3f}s  materialized {t_mat:8.3f}s  "
              f"pandas {t_pd:8.3f}s  -> pandas/fact {t_pd / t_fact:6.2f}x  "
              f"mat/fact {t_mat / t_fact:6.2f}x  auto={choice}  "
              f"gap {row['gap_vs_sklearn']:.1e}", flush=True)
    return rows


def synthetic_cases(quick):
    n_rows = 20_000 if quick else 200_000
    tuple_ratios = (2, 20) if quick else (2, 10, 50)
    feature_ratios = (1, 4) if quick else (0.5, 2, 8)
    for tuple_ratio in tuple_ratios:
        for feature_ratio in feature_ratios:
            s = make_star(n_rows, 2, tuple_ratio=tuple_ratio, feature_ratio=feature_ratio,
                          n_fact_features=4, random_state=0)
            label = f"star n={n_rows} TR={tuple_ratio} FR={feature_ratio}"
            yield label, {"base": s.base, "joins": s.joins, "target": s.target}


def tpch_case(scale_factor):
    from sklearn_ilargi.datasets._tpch import (
        TPCH_FEATURES,
        TPCH_KEYS,
        load_tpch,
        tpch_description,
    )

    target = "l_extendedprice"
    columns = {t: TPCH_FEATURES[t] + TPCH_KEYS[t] for t in TPCH_FEATURES}
    columns["lineitem"] = columns["lineitem"] + [target]
    start = time.perf_counter()
    tables = load_tpch(scale_factor, tables=list(TPCH_FEATURES), columns=columns)
    print(f"\nTPC-H SF{scale_factor:g} loaded in {time.perf_counter() - start:.1f}s "
          f"({len(tables['lineitem'])} lineitem rows)", flush=True)
    return f"TPC-H SF{scale_factor:g}", tpch_description(tables, target=target)


def markdown(rows):
    lines = [
        "| dataset | estimator | factorized s | materialized s | pandas+sklearn s | "
        "pandas / factorized | materialized / factorized | auto | gap vs sklearn |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['dataset']} | {r['estimator']} | {r['factorized_s']:.3f} | "
            f"{r['materialized_s']:.3f} | {r['pandas_s']:.3f} | "
            f"{r['pandas_over_factorized']:.2f}x | {r['materialized_over_factorized']:.2f}x | "
            f"{r['auto_choice']} | {r['gap_vs_sklearn']:.1e} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------- iterative section
#: Tuple ratio x feature ratio, the cells of the acceptance criteria first.
ITERATIVE_GRID = ((100, 10), (20, 4), (100, 4), (100, 1), (20, 10), (20, 1), (5, 10), (5, 4),
                  (5, 1))
ITERATIVE_ROWS = 1_000_000
FACT_COLUMNS = 5
#: Iterations of K-means, NMF and logistic regression (``tol=0``: all of them, on both sides,
#: unless a side converges exactly).
N_ITERATIONS = 20
N_CLUSTERS = 8
N_COMPONENTS = 5
ITERATIVE_PARAMS = {
    "LogisticRegression": {"C": 1.0, "max_iter": N_ITERATIONS, "tol": 0.0},
    "KMeans": {"n_clusters": N_CLUSTERS, "n_init": 1, "max_iter": N_ITERATIONS, "tol": 0.0},
    "NMF": {"n_components": N_COMPONENTS, "init": "custom", "solver": "cd",
            "max_iter": N_ITERATIONS, "tol": 0.0},
}


def same_start(name, T, seed=0):
    """(parameters, fit arguments) that start both sides of ``name`` at the same place.

    The fit arguments are a function that returns fresh copies: scikit-learn's NMF updates
    the ``W`` it is given in place.
    """
    rng = np.random.default_rng(seed)
    n_rows = T.shape[0]
    if name == "KMeans":
        init = T[rng.choice(n_rows, N_CLUSTERS, replace=False)]
        return {"init": init.toarray() if hasattr(init, "toarray") else init}, dict
    if name == "NMF":
        scale = np.sqrt(abs(T).mean() / N_COMPONENTS)
        W = scale * rng.random((n_rows, N_COMPONENTS))
        H = scale * rng.random((N_COMPONENTS, T.shape[1]))
        return {}, lambda: {"W": W.copy(), "H": H.copy()}
    return {}, dict


def products(name, X, model, y):
    """A function that runs the products of a fit of ``name`` on ``X`` alone: those of one
    iteration, as many times as ``model`` iterated (once for the closed forms)."""
    matrix = TrainingMatrix(X)
    n_rows, n_columns = X.shape
    rng = np.random.default_rng(1)
    if name == "LogisticRegression":  # one evaluation of loss and gradient per iteration
        w, r = rng.standard_normal((n_columns, 1)), rng.standard_normal((n_rows, 1))
        step = lambda: (matrix.matmul(w), matrix.rmatmul(r))
    elif name == "KMeans":  # the distances' cross term, then the centers' sums
        centers_t = np.ascontiguousarray(model.cluster_centers_.T)
        labels = model.labels_
        step = lambda: (matrix.matmul(centers_t), matrix.group_sums(labels, N_CLUSTERS))
    elif name == "NMF":  # X @ H.T for W's sweep, X.T @ W for H's
        Ht = np.ascontiguousarray(model.components_.T)
        W = rng.random((n_rows, N_COMPONENTS))
        step = lambda: (matrix.matmul(Ht), matrix.rmatmul(W))
    elif name in ("Ridge", "LinearRegression"):
        step = lambda: (matrix.gram(), matrix.column_sums(), matrix.rmatmul(y[:, None]))
    elif name == "PCA":
        step = lambda: (matrix.gram(), matrix.column_sums())
    else:  # StandardScaler: column sums of X and of its squares
        step = lambda: (matrix.column_sums(), TrainingMatrix(X ** 2).column_sums())
    n_iter = iterations(model)
    return lambda: [step() for _ in range(n_iter)]


def iterations(model):
    """Iterations of a fitted model: 1 for a closed form."""
    n_iter = getattr(model, "n_iter_", None)
    return 1 if n_iter is None else int(np.max(n_iter))


def iterative_cell(tuple_ratio, feature_ratio, n_rows, estimators, repeats):
    """The iterative section's rows for one star."""
    s = make_star(n_rows, 1, tuple_ratio=tuple_ratio, feature_ratio=feature_ratio,
                  n_fact_features=FACT_COLUMNS, random_state=0)
    description = {"base": s.base, "joins": s.joins, "target": s.target}
    nm, y = from_tables(**description)
    T = nm.materialize()
    print(f"\nTR={tuple_ratio} FR={feature_ratio}: X {T.shape[0]} x {T.shape[1]}",
          flush=True)
    rows = []
    for name in estimators:
        ours, theirs, params, kind, compare, feed = ESTIMATORS[name]
        params = {**params, **ITERATIVE_PARAMS.get(name, {})}
        start, fit_start = same_start(name, T)
        params.update(start)

        def fit_args(X, y):
            X = abs(X) if feed == "abs" else X
            if kind is None:
                return (X,)
            return (X, as_labels(y) if kind == "classify" else y)

        models = {}

        def timed(key, make_model, make_data):
            def run():
                X, target = make_data()
                models[key] = make_model().fit(*fit_args(X, target), **fit_start())
            return run

        fits = {
            "factorized": timed("factorized", lambda: ours(strategy="factorized", **params),
                                lambda: (nm, y)),
            "sklearn": timed("sklearn", lambda: theirs(**params), lambda: (T, y)),
            "ours_plain": timed("ours_plain", lambda: ours(**params), lambda: (T, y)),
            "factorized_with_join": timed(
                "factorized_with_join", lambda: ours(strategy="factorized", **params),
                lambda: from_tables(**description)),
            "sklearn_with_join": timed(
                "sklearn_with_join", lambda: theirs(**params),
                lambda: _pandas_join(description)),
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            seconds = dict(zip(fits, median_times(list(fits.values()), repeats, warmup=0)))
            fed_nm, fed_T = (abs(nm), abs(T)) if feed == "abs" else (nm, T)
            seconds["factorized_products"], seconds["joined_products"] = median_times(
                [products(name, fed_nm, models["factorized"], y),
                 products(name, fed_T, models["sklearn"], y)], repeats, warmup=0)
        n_iter = {side: iterations(models[side]) for side in ("factorized", "sklearn")}
        row = {
            "tuple_ratio": tuple_ratio, "feature_ratio": feature_ratio,
            "shape": list(T.shape), "estimator": name, "n_iter": n_iter, "seconds": seconds,
            "speedup_join_excluded": seconds["sklearn"] / seconds["factorized"],
            "speedup_join_included": (seconds["sklearn_with_join"]
                                      / seconds["factorized_with_join"]),
            "speedup_plain_input": seconds["sklearn"] / seconds["ours_plain"],
            "seconds_per_iteration": {
                "factorized": seconds["factorized"] / n_iter["factorized"],
                "sklearn": seconds["sklearn"] / n_iter["sklearn"]},
            "products_share": {
                "factorized": seconds["factorized_products"] / seconds["factorized"],
                "sklearn": seconds["joined_products"] / seconds["sklearn"]},
            "gap_vs_sklearn": compare(models["factorized"], models["sklearn"],
                                      nm.feature_names, nm.feature_names),
        }
        rows.append(row)
        print(f"  {name:<20} join excluded {row['speedup_join_excluded']:6.2f}x  "
              f"included {row['speedup_join_included']:6.2f}x  "
              f"plain input {row['speedup_plain_input']:5.2f}x  "
              f"iterations {n_iter['factorized']}/{n_iter['sklearn']}  "
              f"products {row['products_share']['factorized']:4.0%} of the fit  "
              f"gap {row['gap_vs_sklearn']:.1e}", flush=True)
    return rows


def _pandas_join(description):
    frame, y = join_with_pandas(**description)
    return frame.to_numpy(dtype=np.float64), y


def iterative_markdown(rows):
    lines = [
        "| TR | FR | estimator | sklearn / factorized, join excluded | join included | "
        "sklearn / ours on plain input | s per iteration (fact. / sklearn) | "
        "products' share (fact. / sklearn) |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        per, share = r["seconds_per_iteration"], r["products_share"]
        lines.append(
            f"| {r['tuple_ratio']} | {r['feature_ratio']} | {r['estimator']} | "
            f"{r['speedup_join_excluded']:.2f}x | {r['speedup_join_included']:.2f}x | "
            f"{r['speedup_plain_input']:.2f}x | {per['factorized']:.4f} / "
            f"{per['sklearn']:.4f} | {share['factorized']:.0%} / {share['sklearn']:.0%} |")
    return "\n".join(lines)


def iterative_results_name(args):
    """The iterative section's results file: ``estimators_iterative.json`` for the whole
    grid, suffixed by the cells and estimators of a restricted run (which then leaves the
    whole grid's file alone), ``estimators_iterative_quick.json`` with ``--quick``."""
    if args.quick:
        return "estimators_iterative_quick.json"
    parts = list(args.cells or [])
    if set(args.estimators) != set(ESTIMATORS):
        parts += [name.lower() for name in args.estimators]
    return "_".join(["estimators_iterative", *parts]) + ".json"


def run_iterative(args):
    """The iterative section (see the module's docstring)."""
    if args.quick:
        cells, n_rows = [(20, 4)], 20_000
    else:
        cells = [tuple(int(v) for v in cell.split("x")) for cell in args.cells] \
            if args.cells else ITERATIVE_GRID
        n_rows = args.rows or ITERATIVE_ROWS
    info = machine()
    print(f"# iterative fits: {n_rows} target rows, {info['cores']} cores, BLAS "
          f"{info['blas']}, median of {args.repeats}", flush=True)
    name = iterative_results_name(args)
    out = os.path.dirname(os.path.abspath(args.output)) if args.output else RESULTS
    rows = []
    for tuple_ratio, feature_ratio in cells:
        rows += iterative_cell(tuple_ratio, feature_ratio, n_rows, args.estimators,
                               args.repeats)
        write_results(Path(out), name, {"machine": info, "rows": n_rows,
                                        "iterations": N_ITERATIONS, "repeats": args.repeats,
                                        "results": rows})
    print("\n" + iterative_markdown(rows))
    print(f"\nwritten to {os.path.join(out, name)}")


# ---------------------------------------------------------------------- plain section
#: Shapes of the plain section: tall and narrow to short and wide, about 400 MB each.
PLAIN_SHAPES = ((1_000_000, 50), (200_000, 200), (50_000, 1000))
#: Density of the CSR inputs of the plain section.
PLAIN_DENSITY = 0.1
#: The estimators timed on CSR input too (StandardScaler without centering, as
#: scikit-learn's refuses to center sparse data). PCA is left out: on plain input of either
#: kind it runs scikit-learn's own fit.
PLAIN_SPARSE = ("Ridge", "LinearRegression", "LogisticRegression", "KMeans", "NMF",
                "StandardScaler")


def plain_data(n_rows, n_columns, sparse, seed=0):
    """(X, y) of the plain section: standard normal features (CSR of ``PLAIN_DENSITY``
    where ``sparse``) and a linear target with noise."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    if sparse:
        X = sp.random_array((n_rows, n_columns), density=PLAIN_DENSITY, format="csr",
                            rng=rng, data_sampler=rng.standard_normal)
        X = sp.csr_matrix(X)
    else:
        X = rng.standard_normal((n_rows, n_columns))
    y = X @ rng.standard_normal(n_columns) + rng.standard_normal(n_rows)
    return X, np.asarray(y).ravel()


def plain_rows(n_rows, n_columns, sparse, estimators, repeats):
    """The plain section's rows for one shape and input kind."""
    X, y = plain_data(n_rows, n_columns, sparse)
    kind = "csr" if sparse else "dense"
    print(f"\n{kind} {n_rows} x {n_columns}", flush=True)
    rows = []
    for name in estimators:
        if sparse and name not in PLAIN_SPARSE:
            continue
        ours, theirs, params, target, compare, feed = ESTIMATORS[name]
        params = {**params, **ITERATIVE_PARAMS.get(name, {})}
        if sparse and name == "StandardScaler":
            params["with_mean"] = False
        data = abs(X) if feed == "abs" else X
        start, fit_start = same_start(name, data)
        params.update(start)
        args = (data,) if target is None else (data, as_labels(y) if target == "classify"
                                                else y)
        models = {}

        def timed(key, make_model):
            def run():
                models[key] = make_model().fit(*args, **fit_start())
            return run

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ours_s, sklearn_s = median_times(
                [timed("ours", lambda: ours(**params)),
                 timed("sklearn", lambda: theirs(**params))], repeats)
        row = {"input": kind, "shape": [n_rows, n_columns], "estimator": name,
               "seconds": {"ours": ours_s, "sklearn": sklearn_s},
               "ours_over_sklearn": ours_s / sklearn_s,
               "n_iter": {side: iterations(models[side]) for side in models},
               "gap_vs_sklearn": compare(models["ours"], models["sklearn"],
                                         range(n_columns), range(n_columns))}
        rows.append(row)
        print(f"  {name:<20} ours {ours_s:8.3f}s  sklearn {sklearn_s:8.3f}s  "
              f"ours / sklearn {row['ours_over_sklearn']:5.2f}  "
              f"iterations {row['n_iter']['ours']}/{row['n_iter']['sklearn']}  "
              f"gap {row['gap_vs_sklearn']:.1e}", flush=True)
    return rows


def plain_markdown(rows):
    lines = ["| input | shape | estimator | ours s | sklearn s | ours / sklearn | gap |",
             "|---|---|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['input']} | {r['shape'][0]} x {r['shape'][1]} | {r['estimator']} | "
            f"{r['seconds']['ours']:.3f} | {r['seconds']['sklearn']:.3f} | "
            f"{r['ours_over_sklearn']:.2f} | {r['gap_vs_sklearn']:.1e} |")
    return "\n".join(lines)


def run_plain(args):
    """The plain section: each estimator against its scikit-learn counterpart on the same
    plain numpy (and CSR) array, with the same parameters and start."""
    if args.quick:
        shapes = [(20_000, 50)]
    elif args.shapes:
        shapes = [tuple(int(v) for v in shape.split("x")) for shape in args.shapes]
    else:
        shapes = PLAIN_SHAPES
    info = machine()
    print(f"# plain input: {info['cores']} cores, BLAS {info['blas']}, interleaved median of "
          f"{args.repeats}", flush=True)
    name = "estimators_plain_quick.json" if args.quick else "estimators_plain.json"
    out = os.path.dirname(os.path.abspath(args.output)) if args.output else RESULTS
    rows = []
    for n_rows, n_columns in shapes:
        for sparse in (False, True):
            rows += plain_rows(n_rows, n_columns, sparse, args.estimators, args.repeats)
            write_results(Path(out), name, {"machine": info, "density": PLAIN_DENSITY,
                                            "iterations": N_ITERATIONS,
                                            "repeats": args.repeats, "results": rows})
    print("\n" + plain_markdown(rows))
    print(f"\nwritten to {os.path.join(out, name)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small grid and TPC-H SF0.1 (with --iterative: one small cell)")
    parser.add_argument("--iterative", action="store_true",
                        help="the iterative section instead (see the module's docstring)")
    parser.add_argument("--plain", action="store_true",
                        help="the plain section instead (see the module's docstring)")
    parser.add_argument("--shapes", nargs="+", default=None, metavar="ROWSxCOLUMNS",
                        help="shapes of the plain section, e.g. 1000000x50 50000x1000")
    parser.add_argument("--cells", nargs="+", default=None, metavar="TRxFR",
                        help="cells of the iterative section, e.g. 100x10 20x4")
    parser.add_argument("--rows", type=int, default=None,
                        help=f"target rows of the iterative section ({ITERATIVE_ROWS})")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tpch-scale", type=float, default=None,
                        help="TPC-H scale factor (default 1, or 0.1 with --quick)")
    parser.add_argument("--tpch-repeats", type=int, default=None,
                        help="repeats on TPC-H (default: --repeats)")
    parser.add_argument("--no-tpch", action="store_true")
    parser.add_argument("--no-synthetic", action="store_true")
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS),
                        choices=list(ESTIMATORS))
    parser.add_argument("--no-auto", action="store_true",
                        help="skip the fit that records what strategy='auto' picks")
    parser.add_argument("--output", default=None,
                        help="the results file (default: estimators.json under "
                             "benchmarks/results; the iterative section writes beside it)")
    args = parser.parse_args()
    if args.iterative:
        return run_iterative(args)
    if args.plain:
        return run_plain(args)
    args.output = args.output or os.path.join(RESULTS, "estimators.json")

    print(f"cores: {os.cpu_count()}, {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}", flush=True)
    rows = []
    header = {"cores": os.cpu_count(), "machine": platform.machine(),
              "python": platform.python_version(), "repeats": args.repeats,
              "tpch_repeats": args.tpch_repeats or args.repeats,
              "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)

    def save(row):  # after every row, so that a long run that dies keeps what it measured
        rows.append(row)
        with open(args.output, "w") as f:
            json.dump({**header, "results": rows}, f, indent=1)

    if not args.no_synthetic:
        for label, description in synthetic_cases(args.quick):
            run_case(label, description, args.estimators, args.repeats,
                     auto=not args.no_auto, on_row=save)
    if not args.no_tpch and generator_path() is None:
        print(f"\nTPC-H skipped: {GENERATOR_MISSING}")
    elif not args.no_tpch:
        scale = args.tpch_scale or (0.1 if args.quick else 1.0)
        label, description = tpch_case(scale)
        run_case(label, description, args.estimators, args.tpch_repeats or args.repeats,
                 auto=not args.no_auto, on_row=save)
    print("\n" + markdown(rows))
    print(f"\nwritten to {args.output}")


if __name__ == "__main__":
    main()
