"""Building the training matrix from tables: ``from_tables`` vs ``pandas.merge`` + ``get_dummies``.

Each measurement runs in a fresh process: it loads the tables (not timed), then builds the
training data one way and reports the wall time and the peak resident memory above what the
loaded tables already hold (Linux ``VmHWM``, reset after loading). Both ways start from the
same pandas DataFrames and produce model-ready features and a target:

- ``from_tables``: a NormalizedMatrix (keys matched, no feature copied into a join result);
- ``pandas``: the same joins with ``pandas.merge`` (only the needed columns, in the same order),
  dates as days, then ``pandas.get_dummies`` on the string columns (a dense DataFrame).

Ratios are pandas / from_tables, medians over repeats, all measured in one run. Nothing asserts.

``--readers`` times ``from_tables`` alone on the TPC-H lineitem snowflake read from Parquet three
ways: with ``pandas.read_parquet``'s defaults (decimals become ``Decimal`` objects, dates
``datetime.date`` objects), as pyarrow Tables, and by path (``from_tables`` reads the columns it
needs), wall and CPU time. The read itself is not timed (it is reported apart). Each way is
also checked to give the same matrix and target, bit for bit (a SHA-256 of the joined rows,
columns in the order of their names, taken outside the timed part). Ratios are each way /
Arrow, of the wall times.

    python benchmarks/tables.py                 # TPC-H SF1 and synthetic stars
    python benchmarks/tables.py --quick         # small sizes, a smoke run
    python benchmarks/tables.py --readers       # TPC-H SF1 read three ways (--quick: SF0.1)
"""

import argparse
import gc
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import pandas as pd

CASES = {
    "tpch": {"scale_factor": 1.0},
    "star_onehot": {"n_rows": 1_000_000, "n_dimensions": 4, "tuple_ratio": 20.0,
                    "feature_ratio": 2.0, "n_fact_features": 4, "n_categories": 30},
    "star_numeric": {"n_rows": 2_000_000, "n_dimensions": 4, "tuple_ratio": 50.0,
                     "feature_ratio": 4.0, "n_fact_features": 4, "n_categories": 0},
}
QUICK = {
    "tpch": {"scale_factor": 0.05},
    "star_onehot": dict(CASES["star_onehot"], n_rows=100_000),
    "star_numeric": dict(CASES["star_numeric"], n_rows=200_000),
}


# ---------------------------------------------------------------------- the two ways
def build_with_pandas(base, joins, features, target):
    """What a pandas user writes: merge the needed columns, encode dates and strings."""
    from sklearn_ilargi.tables._input import CATEGORICAL, DATE, column_kind

    tables = [base] + [j.table for j in joins]
    keys = set()
    for j in joins:
        keys.update([j.on] if isinstance(j.on, str) else (j.on or []))
        for side in (j.left_on, j.right_on):
            keys.update([side] if isinstance(side, str) else (side or []))
    frames = []
    for t in tables:
        wanted = [c for c in t.columns if c in keys or c == target
                  or (features is None or c in features)]
        frames.append(t[wanted])
    joined = frames[0]
    for j, frame in zip(joins, frames[1:]):
        if j.on is not None:
            joined = joined.merge(frame, on=j.on, how=j.how)
        else:
            joined = joined.merge(frame, left_on=j.left_on, right_on=j.right_on, how=j.how)
    y = joined.pop(target).to_numpy()
    joined = joined.drop(columns=[c for c in joined.columns if c in keys])
    categorical = []
    for c in joined.columns:
        kind = column_kind(joined[c])
        if kind == DATE:
            joined[c] = (joined[c] - pd.Timestamp(0)) / pd.Timedelta(days=1)
        elif kind == CATEGORICAL:
            categorical.append(c)
    X = pd.get_dummies(joined, columns=categorical, dtype=np.float64)
    return X, y


def build_with_ilargi(base, joins, features, target):
    from sklearn_ilargi import from_tables

    return from_tables(base, joins, target=target, features=features)


# ---------------------------------------------------------------------- one measurement
def _load(case, params, data_home):
    if case == "tpch":
        from sklearn_ilargi.datasets._tpch import (
            TPCH_FEATURES, TPCH_KEYS, load_tpch, tpch_description)

        columns = {t: TPCH_FEATURES[t] + TPCH_KEYS[t] for t in TPCH_FEATURES}
        columns["lineitem"] = columns["lineitem"] + ["l_extendedprice"]
        tables = load_tpch(params["scale_factor"], data_home, tables=list(TPCH_FEATURES),
                           columns=columns)
        d = tpch_description(tables)
        return d["base"], d["joins"], d["features"], d["target"]
    from sklearn_ilargi.datasets import make_star

    s = make_star(random_state=0, **params)
    return s.base, s.joins, None, s.target


def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return None


def _reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def worker(case, method, params, data_home):
    if case == "tpch_readers":
        return reader_worker(method, params, data_home)
    base, joins, features, target = _load(case, params, data_home)
    build = build_with_ilargi if method == "from_tables" else build_with_pandas
    gc.collect()
    exact_peak = _reset_peak()
    before = _status("VmRSS")
    start = time.perf_counter()
    X, y = build(base, joins, features, target)
    seconds = time.perf_counter() - start
    peak = _status("VmHWM") - before if exact_peak else None
    shape = list(X.shape)
    held = X.nbytes if hasattr(X, "blocks") else int(X.memory_usage(index=False).sum())
    return {"seconds": seconds, "peak_bytes": peak, "shape": shape, "result_bytes": held}


def measure(case, method, params, data_home):
    command = [sys.executable, __file__, "--worker", case, method, json.dumps(params)]
    if data_home:
        command += ["--data-home", data_home]
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------- TPC-H read three ways
READERS = ("pandas_defaults", "arrow", "path")
READER_SCALE = {False: 1.0, True: 0.1}  # by --quick


def _read_tpch(reader, scale_factor, data_home):
    """The snowflake's tables (only the columns it uses) read one way, and how long it took."""
    import pyarrow.parquet as pq

    from sklearn_ilargi.datasets._tpch import TPCH_FEATURES, TPCH_KEYS, tpch_path

    folder = tpch_path(scale_factor, data_home)
    start = time.perf_counter()
    tables = {}
    for name in TPCH_FEATURES:
        columns = TPCH_FEATURES[name] + TPCH_KEYS[name] + (
            ["l_extendedprice"] if name == "lineitem" else [])
        path = os.path.join(folder, f"{name}.parquet")
        if reader == "pandas_defaults":
            tables[name] = pd.read_parquet(path, columns=columns)
        elif reader == "arrow":
            tables[name] = pq.read_table(path, columns=columns)
        else:
            tables[name] = path
    return tables, time.perf_counter() - start


def _digest(X, y, step=1 << 18):
    """SHA-256 of the joined matrix, dense, a block of rows at a time, and of the target.

    Columns are taken in the order of their names: a table given by path has its columns in
    the file's order, a table read with ``columns=`` in that order.
    """
    digest = hashlib.sha256(" ".join(sorted(X.feature_names)).encode())
    X = X[:, sorted(X.feature_names)]
    for lo in range(0, X.shape[0], step):
        rows = X[lo:lo + step].materialize(sparse=False)
        digest.update(np.ascontiguousarray(rows, dtype=np.float64).tobytes())
    digest.update(np.ascontiguousarray(y, dtype=np.float64).tobytes())
    return digest.hexdigest()


def reader_worker(reader, params, data_home):
    from sklearn_ilargi import from_tables
    from sklearn_ilargi.datasets._tpch import tpch_description

    tables, read_seconds = _read_tpch(reader, params["scale_factor"], data_home)
    gc.collect()
    exact_peak = _reset_peak()
    before = _status("VmRSS")
    start, cpu_start = time.perf_counter(), time.process_time()
    X, y = from_tables(**tpch_description(tables))
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    peak = _status("VmHWM") - before if exact_peak else None
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "read_seconds": read_seconds,
            "peak_bytes": peak, "shape": list(X.shape),
            "digest": _digest(X, y) if params.get("digest") else None}


def readers_main(args):
    """``from_tables`` on TPC-H read three ways, interleaved repeats, ratios to Arrow."""
    from sklearn_ilargi.datasets._tpch import GENERATOR_MISSING, generator_path, tpch_path

    params = {"scale_factor": READER_SCALE[args.quick]}
    if generator_path() is None:
        print(f"TPC-H skipped: {GENERATOR_MISSING}")
        return
    tpch_path(params["scale_factor"], args.data_home)  # generated once, outside the runs
    runs = {reader: [] for reader in READERS}
    for repeat in range(args.repeats):
        for reader in READERS:  # interleaved, so drifting machine load hits every way
            runs[reader].append(measure("tpch_readers", reader,
                                        dict(params, digest=repeat == 0), args.data_home))
        print(f"done repeat {repeat + 1}", file=sys.stderr)
    rows = {}
    for reader, rs in runs.items():
        rows[reader] = {
            "seconds": statistics.median(r["seconds"] for r in rs),
            "cpu_seconds": statistics.median(r["cpu_seconds"] for r in rs),
            "read_seconds": statistics.median(r["read_seconds"] for r in rs),
            "peak_bytes": statistics.median(r["peak_bytes"] or 0 for r in rs),
            "shape": rs[0]["shape"], "digest": rs[0]["digest"],
            "all_seconds": [r["seconds"] for r in rs],
        }
    arrow = rows["arrow"]
    for row in rows.values():
        row["ratio_to_arrow"] = row["seconds"] / arrow["seconds"]
        row["same_matrix_as_arrow"] = row["digest"] == arrow["digest"]
    report = {"benchmark": "tables_readers", "cpu_count": os.cpu_count(),
              "repeats": args.repeats, "machine": platform.machine(),
              "python": platform.python_version(), "pandas": pd.__version__,
              "params": params, "readers": rows}
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(folder, exist_ok=True)
    name = "tables_readers_quick.json" if args.quick else "tables_readers.json"
    with open(os.path.join(folder, name), "w") as f:
        json.dump(report, f, indent=2)
    print(f"\nfrom_tables on TPC-H SF{params['scale_factor']:g} read three ways "
          f"({os.cpu_count()} cores, median of {args.repeats}; ratio = way / arrow)\n")
    print("| read as | read s (not timed) | from_tables s | ratio to arrow | CPU s "
          "| peak MiB | same matrix |")
    print("|---|---|---|---|---|---|---|")
    for reader, r in rows.items():
        print(f"| {reader} | {r['read_seconds']:.2f} | {r['seconds']:.2f} | "
              f"{r['ratio_to_arrow']:.2f} | {r['cpu_seconds']:.2f} | "
              f"{r['peak_bytes'] / 2.0 ** 20:.0f} | {r['same_matrix_as_arrow']} |")


# ---------------------------------------------------------------------- driver
def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--readers", action="store_true",
                        help="time from_tables on TPC-H read three ways instead")
    parser.add_argument("--worker", nargs=3, metavar=("CASE", "METHOD", "PARAMS"))
    args = parser.parse_args()
    if args.worker:
        case, method, params = args.worker
        print(json.dumps(worker(case, method, json.loads(params), args.data_home)))
        return
    if args.readers:
        readers_main(args)
        return
    sizes = QUICK if args.quick else CASES
    if "tpch" in args.cases:  # generate once, outside the timed runs
        from sklearn_ilargi.datasets._tpch import GENERATOR_MISSING, generator_path, tpch_path

        if generator_path() is None:
            print(f"TPC-H skipped: {GENERATOR_MISSING}")
            args.cases = [case for case in args.cases if case != "tpch"]
        else:
            tpch_path(sizes["tpch"]["scale_factor"], args.data_home)
    results = []
    for case in args.cases:
        runs = {"from_tables": [], "pandas": []}
        for _ in range(args.repeats):
            for method in runs:  # interleaved, so drifting machine load hits both
                runs[method].append(measure(case, method, sizes[case], args.data_home))
        row = {"case": case, "params": sizes[case]}
        for method, rs in runs.items():
            row[method] = {
                "seconds": statistics.median(r["seconds"] for r in rs),
                "peak_bytes": statistics.median(r["peak_bytes"] or 0 for r in rs),
                "result_bytes": rs[0]["result_bytes"],
                "shape": rs[0]["shape"],
                "all_seconds": [r["seconds"] for r in rs],
            }
        row["time_ratio"] = row["pandas"]["seconds"] / row["from_tables"]["seconds"]
        row["memory_ratio"] = row["pandas"]["peak_bytes"] / max(row["from_tables"]["peak_bytes"], 1)
        results.append(row)
        print(f"done {case}", file=sys.stderr)
    report = {"benchmark": "tables", "cpu_count": os.cpu_count(), "repeats": args.repeats,
              "machine": platform.machine(), "python": platform.python_version(),
              "pandas": pd.__version__, "quick": args.quick, "results": results}
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    os.makedirs(folder, exist_ok=True)
    name = "tables_quick.json" if args.quick else "tables.json"
    with open(os.path.join(folder, name), "w") as f:
        json.dump(report, f, indent=2)
    mib = 2.0 ** 20
    print(f"\nfrom_tables vs pandas.merge + get_dummies ({os.cpu_count()} cores, median of "
          f"{args.repeats}; ratio = pandas / from_tables)\n")
    print("| case | shape | from_tables s | pandas s | time ratio | from_tables peak MiB "
          "| pandas peak MiB | memory ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        f, p = r["from_tables"], r["pandas"]
        print(f"| {r['case']} | {f['shape'][0]} x {f['shape'][1]} | {f['seconds']:.2f} | "
              f"{p['seconds']:.2f} | {r['time_ratio']:.2f} | {f['peak_bytes'] / mib:.0f} | "
              f"{p['peak_bytes'] / mib:.0f} | {r['memory_ratio']:.1f} |")


if __name__ == "__main__":
    main()
