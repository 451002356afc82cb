"""Factorized vs materialized on the GPU, and the GPU vs the CPU, over a star schema.

A fact table of ``--rows`` x 5 joins one dimension; the grid varies the tuple ratio (fact rows
per dimension row) and the feature ratio (dimension columns per fact column), as in
``benchmarks/ops.py``. For every cell and every operation (``T @ w``, ``T @ W`` with 16
columns, ``T.T @ y``, ``T.T @ T``) it times four paths: CPU and GPU, each factorized and
materialized, plus what a path pays once: building ``T`` on either device, moving the sources
to the device, and the three ways of computing segment sums on the GPU (cached CSR of ``I.T``,
atomic scatter-add, bincount). Every timing is also written as a flat record with the cell's
features, as calibration data for the cost model.

Results go to ``gpu_benchmark.json`` in ``--out`` (default ``$OUT``, else
``benchmarks/results``), rewritten after every cell so an interrupted run keeps what it
measured; a markdown table of ratios is printed. Without a usable GPU only the CPU paths run.

    python benchmarks/gpu.py [--rows 1000000] [--repeats 3] [--budget 150] [--out DIR]
"""

import argparse
import json
import os
import time
import traceback
from pathlib import Path

import numpy as np

from _timing import machine, median_times
from sklearn_ilargi import NormalizedMatrix, config_context
from sklearn_ilargi._config import OPTIONS
from sklearn_ilargi.backend import get_backend, gpu_available
from sklearn_ilargi.backend._registry import _gpu_unavailable_reason

TUPLE_RATIOS = (1, 5, 20, 100)
FEATURE_RATIOS = (0.5, 2, 10)
FACT_COLUMNS = 5
WIDE = 16
OPERATIONS = ("T @ w", f"T @ W{WIDE}", "T.T @ y", "T.T @ T")
RESULT_FILE = "gpu_benchmark.json"


def star(n_rows, tuple_ratio, feature_ratio, seed=0):
    rng = np.random.default_rng(seed)
    n_dim = max(1, n_rows // tuple_ratio)
    dim_columns = max(1, int(FACT_COLUMNS * feature_ratio + 0.5))
    fact = rng.standard_normal((n_rows, FACT_COLUMNS))
    dim = rng.standard_normal((n_dim, dim_columns))
    foreign_key = rng.integers(0, n_dim, n_rows)
    return NormalizedMatrix.from_matrices([fact, dim], [np.arange(n_rows), foreign_key])


def synced(be, function):
    """``function`` followed by a wait for the device, so that timings are of finished work."""

    def run():
        out = function()
        be.synchronize()
        return out

    return run


def operands(be, nm):
    rng = np.random.default_rng(1)
    n, c = nm.shape
    host = {
        "T @ w": rng.standard_normal(c),
        f"T @ W{WIDE}": rng.standard_normal((c, WIDE)),
        "T.T @ y": rng.standard_normal(n),
    }
    return {name: be.from_numpy(value) for name, value in host.items()}


def operation_pairs(nm, T, args):
    """Per operation, (factorized, materialized) callables on one device."""
    return {
        "T @ w": (lambda: nm @ args["T @ w"], lambda: T @ args["T @ w"]),
        f"T @ W{WIDE}": (lambda: nm @ args[f"T @ W{WIDE}"], lambda: T @ args[f"T @ W{WIDE}"]),
        "T.T @ y": (lambda: nm.T @ args["T.T @ y"], lambda: T.T @ args["T.T @ y"]),
        "T.T @ T": (lambda: nm.T @ nm, lambda: T.T @ T),
    }


def time_device(device, nm_host, repeats):
    """{operation: {"factorized": s, "materialized": s}} and one-off costs on ``device``."""
    be = get_backend(device)
    once = {}
    start = time.perf_counter()
    nm = nm_host.to(device, cache=False)
    be.synchronize()
    once["transfer_sources"] = time.perf_counter() - start if device != "cpu" else 0.0
    (once["materialize"],) = median_times([synced(be, nm.materialize)], repeats=1, warmup=1)
    T = nm.materialize()
    be.synchronize()
    args = operands(be, nm)
    ops = {}
    for name, (factorized, materialized) in operation_pairs(nm, T, args).items():
        t_fact, t_mat = median_times([synced(be, factorized), synced(be, materialized)], repeats)
        ops[name] = {"factorized": t_fact, "materialized": t_mat}
    del T
    be.release_memory()
    return ops, once


def time_segment_sums(nm_host, repeats):
    """Seconds of ``I.T @ Y`` (Y with WIDE columns) per GPU method; the first call builds."""
    be = get_backend("gpu")
    out = {}
    rng = np.random.default_rng(2)
    y = be.from_numpy(rng.standard_normal((nm_host.shape[0], WIDE)))
    for method in OPTIONS["gpu_segment_sum"].choices:
        nm = nm_host.to("gpu", cache=False)  # fresh row maps: nothing cached yet
        row_map = next(b.row_map for b in nm.blocks if b.row_map.indices is not None)
        with config_context(gpu_segment_sum=method):
            start = time.perf_counter()
            be.scatter_add_rows(y, row_map)
            be.synchronize()
            first = time.perf_counter() - start
            (steady,) = median_times([synced(be, lambda: be.scatter_add_rows(y, row_map))],
                                     repeats, warmup=0)
        out[method] = {"first_call": first, "steady": steady}
    be.release_memory()
    return out


def records_of(cell, nm, devices):
    """Flat rows for the cost model: features of the cell, the path, the operation, seconds."""
    n, c = nm.shape
    n_dim = max(1, cell["rows"] // cell["tuple_ratio"])
    features = {"n_rows": n, "n_columns": c, "n_dim_rows": n_dim,
                "fact_columns": FACT_COLUMNS, "dim_columns": c - FACT_COLUMNS,
                "tuple_ratio": cell["tuple_ratio"], "feature_ratio": cell["feature_ratio"]}
    rows = []
    for device, result in devices.items():
        for op, paths in result["ops"].items():
            for strategy, seconds in paths.items():
                rows.append({**features, "backend": device, "strategy": strategy,
                             "operation": op, "seconds": seconds})
        for name, seconds in result["once"].items():
            rows.append({**features, "backend": device, "strategy": "materialized"
                         if name == "materialize" else "factorized", "operation": name,
                         "seconds": seconds})
    for method, times in cell.get("segment_sums", {}).items():
        for when, seconds in times.items():
            rows.append({**features, "backend": "gpu", "strategy": "factorized",
                         "operation": f"I.T @ Y{WIDE} [{method}, {when.replace('_', ' ')}]",
                         "seconds": seconds})
    return rows


def ratios(cell):
    """The figures the table shows, per operation."""
    out = {}
    cpu, gpu = cell["devices"].get("cpu"), cell["devices"].get("gpu")
    for op in OPERATIONS:
        row = {}
        if cpu:
            row["cpu mat/fact"] = cpu["ops"][op]["materialized"] / cpu["ops"][op]["factorized"]
        if gpu:
            row["gpu mat/fact"] = gpu["ops"][op]["materialized"] / gpu["ops"][op]["factorized"]
        if cpu and gpu:
            row["cpu fact/gpu fact"] = (cpu["ops"][op]["factorized"]
                                        / gpu["ops"][op]["factorized"])
            best_cpu = min(cpu["ops"][op].values())
            row["best cpu/best gpu"] = best_cpu / min(gpu["ops"][op].values())
        out[op] = row
    return out


def markdown(cells):
    lines = []
    for op in OPERATIONS:
        keys = [k for k in ("cpu mat/fact", "gpu mat/fact", "cpu fact/gpu fact",
                            "best cpu/best gpu") if any(k in c["ratios"][op] for c in cells)]
        lines += [f"\n**{op}** (above 1: the second path is faster)", "",
                  "| tuple ratio | feature ratio | " + " | ".join(keys) + " |",
                  "|---:|---:|" + "---:|" * len(keys)]
        for cell in cells:
            values = " | ".join(f"{cell['ratios'][op][k]:.2f}x" for k in keys)
            lines.append(f"| {cell['tuple_ratio']} | {cell['feature_ratio']} | {values} |")
    return "\n".join(lines)


def device_infos(devices):
    infos = {}
    for device in devices:
        try:
            infos[device] = get_backend(device).device_info()
        except Exception as exc:  # a query that fails must not end the benchmark
            infos[device] = {"error": repr(exc)}
    return infos


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=float, default=150.0,
                        help="seconds after which no new grid cell starts")
    parser.add_argument("--out", default=os.environ.get("OUT") or "benchmarks/results")
    parser.add_argument("--no-cpu", action="store_true", help="time the GPU paths only")
    args = parser.parse_args(argv)

    devices = [] if args.no_cpu else ["cpu"]
    if gpu_available():
        devices.append("gpu")
    else:
        print(f"no GPU: {_gpu_unavailable_reason()}; timing the CPU paths only")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RESULT_FILE
    result = {"meta": {"machine": machine(), "devices": device_infos(devices),
                       "rows": args.rows, "repeats": args.repeats, "budget_s": args.budget,
                       "fact_columns": FACT_COLUMNS, "complete": False},
              "cells": [], "records": [], "errors": []}
    start = time.perf_counter()
    for tuple_ratio in TUPLE_RATIOS:
        for feature_ratio in FEATURE_RATIOS:
            if time.perf_counter() - start > args.budget:
                result["errors"].append(f"budget of {args.budget:.0f} s reached; grid cut")
                break
            cell = {"rows": args.rows, "tuple_ratio": tuple_ratio,
                    "feature_ratio": feature_ratio, "devices": {}}
            nm = star(args.rows, tuple_ratio, feature_ratio)
            for device in devices:
                try:
                    ops, once = time_device(device, nm, args.repeats)
                    cell["devices"][device] = {"ops": ops, "once": once}
                    if device == "gpu":
                        cell["segment_sums"] = time_segment_sums(nm, args.repeats)
                except Exception as exc:  # e.g. out of memory at a large cell: keep going
                    result["errors"].append(
                        f"{device} at tuple ratio {tuple_ratio}, feature ratio "
                        f"{feature_ratio}: {exc!r}\n{traceback.format_exc(limit=3)}")
            if not cell["devices"]:
                continue
            cell["ratios"] = ratios(cell)
            result["cells"].append(cell)
            result["records"] += records_of(cell, nm, cell["devices"])
            result["meta"]["seconds"] = time.perf_counter() - start
            path.write_text(json.dumps(result, indent=1))
            print(f"tuple ratio {tuple_ratio:>4}, feature ratio {feature_ratio:>4}: "
                  f"{time.perf_counter() - start:6.1f} s", flush=True)
        else:
            continue
        break
    result["meta"]["complete"] = not result["errors"]
    result["meta"]["seconds"] = time.perf_counter() - start
    path.write_text(json.dumps(result, indent=1))
    print(f"{args.rows} rows, {machine()['cores']} cores, devices: "
          f"{', '.join(devices)}; results in {path}")
    if result["cells"]:
        print(markdown(result["cells"]))
    for error in result["errors"]:
        print("error:", error.splitlines()[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
