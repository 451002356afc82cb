"""Where the memory of a Dask ridge fit goes: TPC-H from Parquet, per worker and per stage.

The same tables, joins and fit as ``distributed.py``'s ``factorized_ridge`` step, on a
``LocalCluster`` of ``--workers`` single-threaded processes. It prints each worker's resident
memory after each stage (``from_tables``, ``persist``, the fit) and its peak during it, then
what the persisted partitions hold on each worker: the row maps, the sources stored per
partition (one-column dimensions gathered onto the partition's rows), and the helpers that
the products derived from the row maps and kept on them (by kind). Run it at two scales to
see how each part grows; nothing asserts, and nothing is written.

    python benchmarks/dask_memory.py --scale 0.1 --parts 4
    python benchmarks/dask_memory.py --scale 1 --parts 8
"""

import argparse
import sys
import threading
import time
from collections import Counter
from pathlib import Path

# This script's folder goes last on the path, as in distributed.py (whose name is Dask's).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]


def _load_distributed_benchmark():
    import importlib.util

    spec = importlib.util.spec_from_file_location("tpch_distributed", _HERE / "distributed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _resident():
    import gc

    import psutil

    gc.collect()
    return psutil.Process().memory_info().rss


def _nbytes(value):
    import numpy as np
    import scipy.sparse as sp

    if isinstance(value, np.ndarray):
        return value.nbytes
    if sp.issparse(value):
        return sum(getattr(value, a).nbytes for a in ("data", "indices", "indptr", "row", "col")
                   if hasattr(value, a))
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return 0


def _count_row_map(row_map, held, seen, within):
    """Add a row map's indices and kept helpers to ``held``; a helper that is a row map
    itself (a slice of rows) is followed, its own helpers counted as ``within`` it."""
    from sklearn_ilargi.normalized._row_map import RowMap

    if id(row_map) in seen:
        return
    seen.add(id(row_map))
    if row_map.indices is not None and not within:  # a slice's indices are a view
        held["row maps"] += row_map.indices.nbytes
    for key, helper in row_map._cache.items():
        kind = key[0] if isinstance(key, tuple) else key
        if isinstance(helper, RowMap):
            _count_row_map(helper, held, seen, f"{kind!r} > ")
        else:
            held[f"kept helper {within}{kind!r}"] += _nbytes(helper)


def _held_by_partitions(dask_worker):
    """MiB that the partitions on this worker hold: row maps, per-partition sources, and
    each kind of helper kept on the row maps."""
    from sklearn_ilargi.normalized._matrix import NormalizedMatrix

    held, seen = Counter(), set()
    for value in dask_worker.data.values():
        if not isinstance(value, NormalizedMatrix):
            continue
        for block in value.blocks:
            if id(block.source) not in seen and block.source.shape[0] == value.shape[0]:
                seen.add(id(block.source))
                held["sources of the partition's rows"] += _nbytes(block.source)
            _count_row_map(block.row_map, held, seen, "")
    return {kind: round(size / 2**20, 1) for kind, size in held.items() if size}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="6GB", help="per worker")
    parser.add_argument("--data", type=Path, default=Path("/tmp/ilargi_data/tpch_parts"))
    options = parser.parse_args()
    import psutil
    from distributed import Client, LocalCluster, wait

    from sklearn_ilargi import FactorizedRidge, from_tables

    bench = _load_distributed_benchmark()
    folder = options.data / f"sf{options.scale:g}_p{options.parts}"
    bench.generate(folder, options.scale, options.parts)
    dims = bench.dimensions(folder)
    with LocalCluster(n_workers=options.workers, threads_per_worker=1,
                      memory_limit=options.memory_limit, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        pids = list(client.run(lambda: psutil.Process().pid).values())
        peaks, stop = dict.fromkeys(pids, 0), threading.Event()

        def poll():
            while not stop.is_set():
                for pid in pids:
                    try:
                        peaks[pid] = max(peaks[pid], psutil.Process(pid).memory_info().rss)
                    except psutil.Error:
                        pass
                time.sleep(0.02)

        def report(stage):
            now = list(client.run(_resident).values())
            print(f"{stage:<12} now " + ", ".join(f"{v / 2**20:6.0f}" for v in now)
                  + " MiB; peak during it " + ", ".join(f"{peaks[p] / 2**20:6.0f}" for p in pids)
                  + " MiB", flush=True)
            for pid in pids:
                peaks[pid] = 0

        threading.Thread(target=poll, daemon=True).start()
        report("start")
        X, y = from_tables(bench.lineitem(folder), bench.joins(dims), target=bench.TARGET)
        report("from_tables")
        X = X.persist()
        wait(X.partitions)
        report("persist")
        FactorizedRidge(alpha=1.0).fit(X, y)
        report("fit")
        stop.set()
        for worker, held in client.run(_held_by_partitions).items():
            print(worker, held)


if __name__ == "__main__":
    main()
