"""Side-by-side timing shared by the benchmarks: medians of interleaved repeats."""

import os
import platform
import time

import numpy as np


def median_times(functions, repeats=5, warmup=1):
    """Median wall time (s) of each function, running them in turn A B A B ...

    Interleaving keeps a ratio fair on a shared, noisy machine: drift hits both sides alike.
    """
    for _ in range(warmup):
        for f in functions:
            f()
    times = [[] for _ in functions]
    for _ in range(repeats):
        for f, bucket in zip(functions, times):
            start = time.perf_counter()
            f()
            bucket.append(time.perf_counter() - start)
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
