"""What the machine offers a fit: cores, BLAS threads, memory bandwidth, free memory, GPU.

The slow probes (BLAS thread pools, a memory-bandwidth measurement, GPU properties) run once
per process; the bandwidth is also kept in the per-user cache folder (``hardware.json``, see
:func:`cache_dir`) so that a new process reads it back instead of measuring again. A cache file
that does not hold a positive bandwidth of this machine is measured over and rewritten.
"""

import json
import math
import numbers
import os
import platform
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from .._config import get_config
from ..backend import gpu_available

_PROBE_BYTES = 16 * 2**20
_HARDWARE_FILE = "hardware.json"


def cache_dir():
    """The per-user cache folder.

    ``$SKLEARN_ILARGI_CACHE``, else ``sklearn_ilargi`` under ``$XDG_CACHE_HOME`` or ``~/.cache``.
    It holds ``hardware.json`` (the measured memory bandwidth) and what calibration writes:
    ``cost_model.cbm`` with its exported trees, and ``measurements.csv.gz``.

    Returns
    -------
    pathlib.Path
        Not created here.
    """
    environ = os.environ
    return _cache_dir(environ.get("SKLEARN_ILARGI_CACHE"), environ.get("XDG_CACHE_HOME"),
                      environ.get("HOME"))


@lru_cache(maxsize=8)
def _cache_dir(explicit, xdg_cache_home, home):
    """:func:`cache_dir` for these values of its environment variables (``home`` is what
    ``~`` expands to)."""
    del home  # part of the cache key only
    if explicit:
        return Path(explicit)
    base = xdg_cache_home or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sklearn_ilargi"


def n_cores():
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _blas_threads():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return n_cores()
    threads = [info.get("num_threads", 1) for info in threadpool_info()
               if info.get("user_api") == "blas"]
    return max(threads) if threads else 1


def measure_bandwidth(n_bytes=_PROBE_BYTES, repeats=3):
    """Memory bandwidth in GB/s, from the fastest of a few copies of an ``n_bytes`` array."""
    src = np.ones(n_bytes // 8)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - start)
    return 2 * n_bytes / max(best, 1e-9) / 1e9  # one read and one write per byte


def _machine_key():
    return f"{platform.node()}|{platform.machine()}|{n_cores()}"


def _stored_bandwidth(path, key):
    """The bandwidth that ``path`` keeps for the machine ``key``; None where the file is
    missing, is not such a record (damaged, or edited by hand) or is another machine's."""
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    if not isinstance(stored, dict) or stored.get("machine") != key:
        return None
    bandwidth = stored.get("bandwidth_gbs")
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, numbers.Real):
        return None
    return float(bandwidth) if 0 < bandwidth < math.inf else None


def _cached_bandwidth():
    """The bandwidth kept in the cache folder, else measured now and kept there."""
    path = cache_dir() / _HARDWARE_FILE
    key = _machine_key()
    bandwidth = _stored_bandwidth(path, key)
    if bandwidth is not None:
        return bandwidth
    bandwidth = measure_bandwidth()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed: a process reading meanwhile sees the old or the new file.
        written = path.with_name(f"{path.name}.{os.getpid()}")
        written.write_text(json.dumps({"machine": key, "bandwidth_gbs": bandwidth}))
        os.replace(written, path)
    except OSError:
        pass  # a read-only home only costs a new measurement next time
    return bandwidth


def _gpu_properties():
    empty = {"gpu_name": "", "gpu_memory": 0.0, "gpu_sms": 0.0, "gpu_bandwidth_gbs": 0.0}
    if not gpu_available():
        return empty
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    except Exception:  # a broken driver means no GPU candidate, not a failed fit
        return empty
    name = props.get("name", b"")
    # Double data rate: two transfers per clock (kHz) over a bus of memoryBusWidth bits.
    bandwidth = 2 * props.get("memoryClockRate", 0) * 1e3 * props.get("memoryBusWidth", 0) / 8
    return {
        "gpu_name": name.decode() if isinstance(name, bytes) else str(name),
        "gpu_memory": float(props.get("totalGlobalMem", 0)),
        "gpu_sms": float(props.get("multiProcessorCount", 0)),
        "gpu_bandwidth_gbs": bandwidth / 1e9,
    }


@lru_cache(maxsize=1)
def hardware_info():
    """The machine's features, probed once per process.

    Returns
    -------
    dict
        ``cores``, ``blas_threads``, ``bandwidth_gbs``, ``memory`` (total bytes), and
        ``gpu_name``, ``gpu_memory`` (bytes), ``gpu_sms``, ``gpu_bandwidth_gbs`` (empty or 0
        without a usable GPU).
    """
    info = {
        "cores": float(n_cores()),
        "blas_threads": float(_blas_threads()),
        "bandwidth_gbs": float(_cached_bandwidth()),
        "memory": float(total_memory()),
    }
    info.update(_gpu_properties())
    return info


def total_memory():
    """Physical memory in bytes (0 where the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def available_memory():
    """Memory in bytes that a fit can still take now (read on every call: it changes).

    What the operating system reports, at most the ``memory_limit`` setting where it is set.
    Linux's ``MemAvailable`` counts the page cache that can be dropped; elsewhere the free
    pages, else the total.
    """
    limit = get_config()["memory_limit"]
    reported = _reported_available_memory()
    return reported if limit is None else min(limit, reported)


def _reported_available_memory():
    try:
        with open("/proc/meminfo", "rb") as meminfo:  # read whole: one call per fit
            text = b"\n" + meminfo.read()
        start = text.index(b"\nMemAvailable:") + len(b"\nMemAvailable:")
        return int(text[start:text.index(b"\n", start)].split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return total_memory()


def gpu_free_memory():
    """Free device memory in bytes now (0 without a usable GPU)."""
    if not gpu_available():
        return 0
    try:
        import cupy

        free, _ = cupy.cuda.runtime.memGetInfo()
    except Exception:
        return 0
    return int(free)
