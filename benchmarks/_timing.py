"""What the benchmarks share: medians of interleaved repeats, the machine, the command line
and the results file."""

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np


def median_times(functions, repeats=5, warmup=1):
    """Median wall time (s) of each function, running them in turn, each round in an order
    of its own (drawn from a fixed seed).

    Interleaving keeps a ratio fair on a shared, noisy machine: drift hits every function
    alike. Drawing each round's order spreads what one function leaves to the next (a large
    join freed, caches filled with other data) over all of them, which decides fits of
    milliseconds.
    """
    for _ in range(warmup):
        for f in functions:
            f()
    times = [[] for _ in functions]
    rng = np.random.default_rng(0)
    for _ in range(repeats):
        for i in rng.permutation(len(functions)):
            start = time.perf_counter()
            functions[i]()
            times[i].append(time.perf_counter() - start)
    return [float(np.median(t)) for t in times]


def machine():
    """Cores, BLAS threads and versions, for the header of every benchmark."""
    from threadpoolctl import threadpool_info

    blas = [f"{i['internal_api']} ({i['num_threads']} threads)" for i in threadpool_info()
            if i.get("user_api") == "blas"]
    return {
        "cores": os.cpu_count(),
        "blas": blas,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
    }


def arguments(doc, repeats):
    """A command line described by the first line of ``doc``, with ``--repeats`` and ``--out``
    (the folder of the JSON results); a benchmark adds its own options."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    return parser


def write_results(out, name, payload):
    """Write ``payload`` as JSON to ``out / name``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(json.dumps(payload, indent=1))
