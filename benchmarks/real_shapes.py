"""Every estimator on wide one-hot stars and on TPC-H: factorized vs the CSR join vs scikit-learn.

Over ``make_onehot_star`` (the issue's acceptance shape by default: 500,000 events, two
entities of 50,000 and 20,000 one-hot ids with 20 categories each; ``--scale`` shrinks the
events and ids alike), each of the seven estimators is fitted three ways:

- ``factorized``: ours with ``strategy="factorized"`` on the NormalizedMatrix;
- ``materialized``: ours with ``strategy="materialized"`` (the fit builds the CSR join);
- ``sklearn``: scikit-learn's counterpart on the CSR join, built beforehand.

Each fit runs in a child process forked for it (the data already built), so that one fit's
memory does not hide in another's. Its peak memory is the child's peak resident memory above
what it had when it started (Linux ``VmHWM``, reset at the start through
``/proc/self/clear_refs``), plus the bytes of the input that fit reads (the NormalizedMatrix's
sources for ours, the CSR join for scikit-learn's): what a process that loaded only that input
would hold at its peak. The acceptance is that figure under 8 GB (``--limit-gb``). A child may
not map more than ``--cap-gb`` above what it started with (``RLIMIT_AS``), so that a fit that
would exhaust the shared machine fails with a ``MemoryError`` instead, reported as such.

Times are medians of ``--repeats`` interleaved runs (fork and the return of the fitted model
included). Each fitted model is compared with scikit-learn's and the agreement written into
the results:

- linear and ridge regression: predictions on ``N_CHECK`` rows, the largest difference
  relative to the largest value;
- logistic regression: the objective both minimize (``C`` times the sum of the log-losses
  plus half the squared norm of ``coef_``, on the CSR join), ours less scikit-learn's,
  relative to scikit-learn's: at or below the tolerance when ours went at least as far down
  as scikit-learn's. L-BFGS stops on a gradient tolerance (scikit-learn's on the objective
  divided by ``C`` times the number of rows), not on a distance to the optimum: along the
  flat directions of a wide one-hot design, two runs that both stopped there can still
  differ in their coefficients and probabilities by far more than their objectives do;
- the scaler (``with_mean=False``: scikit-learn refuses to center a sparse matrix): ``scale_``;
- PCA (``svd_solver="arpack"``, the one both run on sparse input): ``explained_variance_``;
- K-means from the same initial centers: ``inertia_``. The centers are rows of the join
  plus a little uniform noise: a one-hot row is often exactly as far from several rows of
  the join, and such a tie is broken by each side's rounding, after which the runs part;
- NMF from the same initial ``W`` and ``H`` (``init="custom"``): ``reconstruction_err_``.

Each estimator's tolerance is the last item of its ``ESTIMATORS`` entry: 1e-6 relative for the
closed forms (the least squares run with ``tol=1e-10`` on both sides, so that LSQR and
conjugate gradients, which scikit-learn runs on sparse input, solve them to that), the scaler,
PCA, K-means and NMF (the same iterations from the same start), and the logistic regression's
objective (L-BFGS to ``tol=1e-6`` on both sides).

``--tpch`` adds the TPC-H lineitem snowflake at SF1 (``--tpch-scale``), read from its Parquet
files with ``pandas.read_parquet``'s defaults (decimals become ``Decimal`` objects), as
pyarrow Tables, and with ``dtype_backend="pyarrow"`` (pandas with Arrow dtypes; decimals stay
Arrow decimals): ``from_tables`` alone on each read (the ratio of the defaults' to the Arrow
read, interleaved and with each read's builds in a row, and whether all give the same matrix,
bit for bit), the pandas
read's ``float`` pass over its ``Decimal`` objects
alone (what the pandas read costs beyond the Arrow read at the least: ``float(Decimal)`` formats
each value as a string and parses it, one object at a time, holding the GIL), and
``from_tables`` + ``FactorizedRidge`` against ``pandas.merge`` + ``pandas.get_dummies`` +
scikit-learn's ``Ridge`` on the pandas read (``--no-tpch-pipelines`` leaves these out).

    python benchmarks/real_shapes.py [--scale 0.1] [--repeats 1] [--estimators Ridge PCA]
                                     [--tpch] [--data-home DIR] [--out benchmarks/results]
    python benchmarks/real_shapes.py --estimators --tpch     # TPC-H alone
    python benchmarks/real_shapes.py --estimators --tpch --no-tpch-pipelines  # from_tables only
"""

import argparse
import gc
import multiprocessing
import pickle
import resource
import time
import traceback
import warnings

import numpy as np
import pandas as pd
from scipy.special import logsumexp
from sklearn.cluster import KMeans
from sklearn.decomposition import NMF, PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler

from _timing import arguments, machine, median_times, write_results
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
from sklearn_ilargi.datasets import join_with_pandas, make_onehot_star

#: The issue's acceptance shape: events, ids of each entity, categories of every entity.
N_ROWS, N_IDS, N_CATEGORIES = 500_000, (50_000, 20_000), (20,)
N_CHECK = 20_000  # rows whose predictions are compared
GB = 1e9


def _score_gap(method):
    """Largest |difference| of ``method(rows)`` relative to its largest |value|."""

    def gap(ours, theirs, X, T, rows, y):
        a = getattr(ours, method)(X[rows])
        b = getattr(theirs, method)(T[rows])
        return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))

    return gap


def _attribute_gap(attribute):
    """Largest |difference| of a fitted attribute relative to its largest |value|."""

    def gap(ours, theirs, X, T, rows, y):
        a, b = np.asarray(getattr(ours, attribute)), np.asarray(getattr(theirs, attribute))
        return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))

    return gap


def _logistic_objective(model, T, y):
    """``C`` times the sum of the log-losses plus half of ``||coef_||^2``, on the join."""
    z = model.decision_function(T)
    if z.ndim == 1:
        sign = np.where(y == model.classes_[1], 1.0, -1.0)
        loss = np.logaddexp(0.0, -sign * z).sum()
    else:
        picked = z[np.arange(len(y)), np.searchsorted(model.classes_, y)]
        loss = (logsumexp(z, axis=1) - picked).sum()
    return model.C * float(loss) + 0.5 * float(np.sum(np.asarray(model.coef_) ** 2))


def _objective_gap(ours, theirs, X, T, rows, y):
    """Our objective less scikit-learn's, relative to scikit-learn's (negative: ours lower)."""
    mine, reference = _logistic_objective(ours, T, y), _logistic_objective(theirs, T, y)
    return (mine - reference) / abs(reference)


# name -> (ours, scikit-learn's, shared parameters, target, agreement, tolerance)
ESTIMATORS = {
    "LinearRegression": (FactorizedLinearRegression, LinearRegression, {"tol": 1e-10}, "y",
                         _score_gap("predict"), 1e-6),
    "Ridge": (FactorizedRidge, Ridge, {"alpha": 1.0, "tol": 1e-10}, "y",
              _score_gap("predict"), 1e-6),
    "LogisticRegression": (FactorizedLogisticRegression, LogisticRegression,
                           {"C": 1.0, "tol": 1e-6, "max_iter": 500}, "y_class",
                           _objective_gap, 1e-6),
    "StandardScaler": (FactorizedStandardScaler, StandardScaler, {"with_mean": False}, None,
                       _attribute_gap("scale_"), 1e-6),
    "PCA": (FactorizedPCA, PCA, {"n_components": 5, "svd_solver": "arpack",
                                 "random_state": 0}, None,
            _attribute_gap("explained_variance_"), 1e-6),
    "KMeans": (FactorizedKMeans, KMeans, {"n_clusters": 8, "n_init": 1, "max_iter": 20,
                                          "tol": 0.0}, None, _attribute_gap("inertia_"), 1e-6),
    "NMF": (FactorizedNMF, NMF, {"n_components": 5, "init": "custom", "max_iter": 50,
                                 "tol": 0.0}, None,
            _attribute_gap("reconstruction_err_"), 1e-6),
}


# ---------------------------------------------------------------------- one fit in a child
def _status(field):
    """A field of ``/proc/self/status`` in bytes (``VmRSS``, ``VmHWM``, ``VmSize``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def _child(connection, fit, cap_bytes):
    """Run ``fit()`` and send back (seconds, peak bytes above the start, model or error)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _status("VmSize") + cap_bytes
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 else min(cap, hard), hard))
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    before = _status("VmRSS")
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = fit()
        outcome = {"model": pickle.dumps(model)}
    except MemoryError as error:
        outcome = {"error": f"MemoryError: {error}"}
    except Exception as error:  # reported in the results, not raised
        outcome = {"error": f"{type(error).__name__}: {error}",
                   "traceback": traceback.format_exc()}
    outcome.update(seconds=time.perf_counter() - start, fit_peak_bytes=_status("VmHWM") - before)
    connection.send(outcome)
    connection.close()


def in_child(fit, cap_bytes):
    """Run ``fit()`` in a forked child; its outcome (see :func:`_child`)."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(send, fit, cap_bytes))
    process.start()
    send.close()
    try:
        outcome = receive.recv()
    except EOFError:  # killed: by the kernel's out-of-memory killer, most likely
        outcome = {"error": "the child process died", "seconds": np.nan,
                   "fit_peak_bytes": np.nan}
    process.join()
    outcome["exitcode"] = process.exitcode
    return outcome


# ---------------------------------------------------------------------- the star
def star(scale, random_state=0):
    """The acceptance star at ``scale``: (X, CSR join, targets by name)."""
    n_rows = max(int(N_ROWS * scale), 1000)
    n_ids = tuple(max(int(n * scale), 10) for n in N_IDS)
    X, y, y_class = make_onehot_star(n_rows, n_ids, n_categories=N_CATEGORIES,
                                     random_state=random_state, return_X_y=True)
    return X, X.materialize(sparse=True), {"y": y, "y_class": y_class}


def _starting_point(name, X, T):
    """What both sides start from: fit arguments and extra parameters (same centers, W, H)."""
    rng = np.random.default_rng(0)
    if name == "KMeans":  # rows of the join, moved off the ties one-hot rows would make
        k = ESTIMATORS[name][2]["n_clusters"]
        rows = rng.choice(X.shape[0], k, replace=False)
        return {}, {"init": T[rows].toarray() + 0.01 * rng.random((k, X.shape[1]))}
    if name == "NMF":
        k = ESTIMATORS[name][2]["n_components"]
        scale = np.sqrt(T.mean() / k)
        return ({"W": scale * rng.random((X.shape[0], k)),
                 "H": scale * rng.random((k, X.shape[1]))}, {})
    return {}, {}


def fits(name, X, T, targets):
    """Per side, a function fitting it once and returning the model."""
    ours, theirs, params, target, *_ = ESTIMATORS[name]
    arguments_, extra = _starting_point(name, X, T)
    y = () if target is None else (targets[target],)
    params = dict(params, **extra)
    return {
        "factorized": lambda: ours(strategy="factorized", **params).fit(X, *y, **arguments_),
        "materialized": lambda: ours(strategy="materialized", **params).fit(X, *y,
                                                                          **arguments_),
        "sklearn": lambda: theirs(**params).fit(T, *y, **arguments_),
    }


def input_bytes(side, X, T):
    """Bytes of what a side's fit reads: the sources, or the CSR join."""
    if side == "sklearn":
        return int(T.data.nbytes + T.indices.nbytes + T.indptr.nbytes)
    return int(X.nbytes)


def measure(name, X, T, targets, repeats, cap_bytes, limit_bytes):
    """Times, peaks and agreement of the three sides of one estimator."""
    functions = fits(name, X, T, targets)
    outcomes = {side: [] for side in functions}

    def run(side):
        return lambda: outcomes[side].append(in_child(functions[side], cap_bytes))

    times = median_times([run(side) for side in functions], repeats, warmup=0)
    rows = np.random.default_rng(1).choice(X.shape[0], min(N_CHECK, X.shape[0]),
                                           replace=False)
    rows.sort()
    result = {}
    models = {side: pickle.loads(o[-1]["model"]) for side, o in outcomes.items()
              if "model" in o[-1]}
    gap, tolerance = ESTIMATORS[name][4], ESTIMATORS[name][5]
    for side, seconds in zip(functions, times):
        last = outcomes[side][-1]
        peak = max(o["fit_peak_bytes"] for o in outcomes[side]) + input_bytes(side, X, T)
        entry = {"seconds": seconds, "peak_bytes": peak, "fit_peak_bytes": peak
                 - input_bytes(side, X, T), "under_limit": bool(peak < limit_bytes)}
        if "error" in last:
            entry.update(error=last["error"], under_limit=False)
        if side in models and hasattr(models[side], "decision_"):
            entry["solver"] = models[side].decision_.solver
        if side != "sklearn" and side in models and "sklearn" in models:
            y = targets.get(ESTIMATORS[name][3])
            entry["agreement"] = gap(models[side], models["sklearn"], X, T, rows, y)
            entry["agrees"] = bool(entry["agreement"] <= tolerance)
        result[side] = entry
    result["tolerance"] = tolerance
    return result


# ---------------------------------------------------------------------- TPC-H
def _read_tpch(reader, scale_factor, data_home=None):
    """The snowflake's tables, only the columns it uses, read with pandas' defaults
    (``"pandas"``), with pandas' Arrow dtypes (``"pandas-arrow"``) or as Arrow Tables."""
    import os

    import pyarrow.parquet as pq

    from sklearn_ilargi.datasets._tpch import TPCH_FEATURES, TPCH_KEYS, tpch_path

    folder = tpch_path(scale_factor, data_home)
    tables = {}
    for name in TPCH_FEATURES:
        columns = TPCH_FEATURES[name] + TPCH_KEYS[name] + (
            ["l_extendedprice"] if name == "lineitem" else [])
        path = os.path.join(folder, f"{name}.parquet")
        if reader == "arrow":
            tables[name] = pq.read_table(path, columns=columns)
        else:
            tables[name] = pd.read_parquet(path, columns=columns, **(
                {"dtype_backend": "pyarrow"} if reader == "pandas-arrow" else {}))
    return tables


def _pandas_pipeline(tables):
    """What a pandas user writes: decimals to floats, ``pandas.merge``, ``get_dummies``,
    scikit-learn's Ridge."""
    from sklearn_ilargi.datasets._tpch import tpch_description

    floats = {}
    for name, table in tables.items():
        table = table.copy(deep=False)
        for column in table.columns:
            if table[column].dtype == object and pd.api.types.infer_dtype(
                    table[column]) == "decimal":
                table[column] = table[column].astype(np.float64)
        floats[name] = table
    frame, y = join_with_pandas(**tpch_description(floats))
    return Ridge(alpha=1.0).fit(frame.to_numpy(dtype=np.float64), y)


def _decimal_float_pass(tables):
    """What ``from_tables`` does to the pandas read's ``Decimal`` columns alone: their one
    float pass, column by column (the part of the pandas read's time that no change outside
    ``float(Decimal)`` can remove)."""
    from sklearn_ilargi.tables._input import NUMERIC, is_decimal, numeric_values

    columns = [table[c] for table in tables.values() for c in table.columns
               if is_decimal(table[c])]

    def run():
        for column in columns:
            numeric_values(column, NUMERIC, 0.0, "a decimal column")
    return run, sum(len(c) for c in columns)


def tpch(scale_factor, repeats, data_home=None, pipelines=True):
    """``from_tables`` on the two reads (and the pandas read's Decimal float pass alone), and
    the pipelines from tables to a fitted Ridge."""
    from sklearn_ilargi.datasets._tpch import GENERATOR_MISSING, generator_path, \
        tpch_description

    if generator_path() is None:
        return {"skipped": GENERATOR_MISSING}
    reads = {reader: _read_tpch(reader, scale_factor, data_home)
             for reader in ("pandas", "arrow", "pandas-arrow")}
    builds = {reader: (lambda t=tables: from_tables(**tpch_description(t)))
              for reader, tables in reads.items()}
    float_pass, n_decimals = _decimal_float_pass(reads["pandas"])
    *build_s, float_pass_s = median_times(list(builds.values()) + [float_pass], repeats)
    build_s = dict(zip(builds, build_s))
    # Each read's builds also in a row: interleaved, a build often starts on memory that the
    # other read's build just gave back to the system, and pays its page faults again.
    in_a_row_s = {reader: median_times([build], repeats)[0]
                  for reader, build in builds.items()}
    Xa, ya = builds["arrow"]()
    Ta = Xa.materialize(sparse=True)
    same = True
    for reader in ("pandas", "pandas-arrow"):
        Xp, yp = builds[reader]()
        Tp = Xp.materialize(sparse=True)
        same &= bool(list(Xp.feature_names) == list(Xa.feature_names)
                     and Tp.shape == Ta.shape and (Tp != Ta).nnz == 0
                     and np.array_equal(yp, ya))
        del Xp, Tp
    del Ta
    result = {"scale_factor": scale_factor, "shape": list(Xa.shape),
              "from_tables_s": build_s,
              "pandas_read_over_arrow_read": build_s["pandas"] / build_s["arrow"],
              "from_tables_in_a_row_s": in_a_row_s,
              "in_a_row_pandas_read_over_arrow_read":
                  in_a_row_s["pandas"] / in_a_row_s["arrow"],
              "same_matrix": same, "decimal_objects": n_decimals,
              "decimal_float_pass_s": float_pass_s,
              "pandas_read_less_float_pass_over_arrow_read":
                  (build_s["pandas"] - float_pass_s) / build_s["arrow"]}
    if not pipelines:
        return result

    def ours(reader):
        return lambda: FactorizedRidge(alpha=1.0).fit(*builds[reader]())

    fits = {"from_tables + FactorizedRidge (pandas read)": ours("pandas"),
            "from_tables + FactorizedRidge (Arrow read)": ours("arrow"),
            "pandas.merge + get_dummies + Ridge (pandas read)":
                lambda: _pandas_pipeline(reads["pandas"])}
    result["pipelines_s"] = dict(zip(fits, median_times(list(fits.values()), repeats)))
    return result


# ---------------------------------------------------------------------- report
def markdown(star_result, tpch_result, limit_bytes):
    return "\n\n".join(([_star_markdown(star_result, limit_bytes)] if star_result else [])
                       + ([_tpch_markdown(tpch_result)] if tpch_result else []))


def _star_markdown(star_result, limit_bytes):
    lines = [f"star {star_result['shape'][0]} x {star_result['shape'][1]} "
             f"(join nnz {star_result['join_nnz']}); times over the factorized fit's "
             f"(above 1: factorized is faster); peak GB per fit (the input included); "
             "agreement with scikit-learn relative (logistic regression: of the objective, "
             "ours less scikit-learn's)", "",
             "| estimator | factorized s | materialized | sklearn | peak GB f / m / s | "
             "agreement f / m (tol) | solver f / m | acceptance |",
             "|---|---:|---:|---:|---|---|---|---|"]
    for name, r in star_result["estimators"].items():
        f, m, s = r["factorized"], r["materialized"], r["sklearn"]
        ok = all(side.get("under_limit") and side.get("agrees", True) and "error" not in side
                 for side in (f, m)) and "agreement" in f and "agreement" in m
        errors = "; ".join(f"{k}: {v['error'][:60]}" for k, v in
                           (("f", f), ("m", m), ("s", s)) if "error" in v)
        lines.append(
            f"| {name} | {f['seconds']:.3g} | {m['seconds'] / f['seconds']:.2f}x | "
            f"{s['seconds'] / f['seconds']:.2f}x | "
            f"{f['peak_bytes'] / GB:.2f} / {m['peak_bytes'] / GB:.2f} / "
            f"{s['peak_bytes'] / GB:.2f} | "
            f"{f.get('agreement', float('nan')):.1e} / {m.get('agreement', float('nan')):.1e} "
            f"({r['tolerance']:.0e}) | {f.get('solver', '')} / {m.get('solver', '')} | "
            f"{'yes' if ok else 'NO'} {errors} |")
    lines.append(f"\nacceptance: both of ours under {limit_bytes / GB:g} GB and within "
                 "tolerance of scikit-learn")
    return "\n".join(lines)


def _tpch_markdown(t):
    if "skipped" in t:
        return f"TPC-H skipped: {t['skipped']}"
    lines = [f"TPC-H SF{t['scale_factor']:g} ({t['shape'][0]} x {t['shape'][1]}): "
             f"from_tables on the pandas read {t['from_tables_s']['pandas']:.2f} s, on "
             f"the Arrow read {t['from_tables_s']['arrow']:.2f} s: ratio "
             f"{t['pandas_read_over_arrow_read']:.2f}; on pandas' Arrow dtypes "
             f"{t['from_tables_s']['pandas-arrow']:.2f} s; same matrix: {t['same_matrix']}",
             f"each read's builds in a row: pandas {t['from_tables_in_a_row_s']['pandas']:.2f}"
             f" s, Arrow {t['from_tables_in_a_row_s']['arrow']:.2f} s, pandas' Arrow dtypes "
             f"{t['from_tables_in_a_row_s']['pandas-arrow']:.2f} s: ratio "
             f"{t['in_a_row_pandas_read_over_arrow_read']:.2f}",
             f"of which the float pass over its {t['decimal_objects']} Decimal objects "
             f"{t['decimal_float_pass_s']:.2f} s; without it the ratio would be "
             f"{t['pandas_read_less_float_pass_over_arrow_read']:.2f}"]
    if "pipelines_s" in t:
        lines += ["", "| pipeline | s |", "|---|---:|"]
        lines += [f"| {k} | {v:.2f} |" for k, v in t["pipelines_s"].items()]
    return "\n".join(lines)


def main():
    parser = arguments(__doc__, repeats=1)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="fraction of the acceptance star's events and ids")
    parser.add_argument("--estimators", nargs="*", default=list(ESTIMATORS),
                        choices=list(ESTIMATORS))
    parser.add_argument("--limit-gb", type=float, default=8.0)
    parser.add_argument("--cap-gb", type=float, default=12.0)
    parser.add_argument("--tpch", action="store_true")
    parser.add_argument("--tpch-scale", type=float, default=1.0)
    parser.add_argument("--tpch-pipelines", action=argparse.BooleanOptionalAction,
                        default=True, help="also time the pipelines from tables to a Ridge")
    parser.add_argument("--data-home", default=None,
                        help="TPC-H cache folder (default: the datasets' own)")
    parser.add_argument("--name", default="real_shapes.json")
    args = parser.parse_args()
    info = machine()
    print(f"# real shapes: {info['cores']} cores, BLAS {info['blas']}, "
          f"median of {args.repeats}", flush=True)
    limit, cap = args.limit_gb * GB, int(args.cap_gb * GB)
    star_result = None
    if args.estimators:
        X, T, targets = star(args.scale)
        star_result = {"scale": args.scale, "shape": list(X.shape), "join_nnz": int(T.nnz),
                       "sources_bytes": int(X.nbytes), "estimators": {}}
        for name in args.estimators:  # written as they come: a full run takes long
            star_result["estimators"][name] = measure(name, X, T, targets, args.repeats,
                                                      cap, limit)
            print(name, star_result["estimators"][name], flush=True)
            write_results(args.out, args.name, {"machine": info, "star": star_result})
        del X, T, targets
    tpch_result = tpch(args.tpch_scale, args.repeats, args.data_home,
                       args.tpch_pipelines) if args.tpch else None
    print()
    print(markdown(star_result, tpch_result, limit))
    write_results(args.out, args.name,
                  {"machine": info, "repeats": args.repeats, "limit_gb": args.limit_gb,
                   "peak_memory": "child VmHWM above its start + the bytes of its input",
                   "star": star_result, "tpch": tpch_result})


if __name__ == "__main__":
    main()
