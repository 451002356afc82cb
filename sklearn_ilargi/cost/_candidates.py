"""The ways one fit can run, and which of them fit in memory."""

from typing import NamedTuple

from ..backend import gpu_available

#: Share of the currently available memory that one path may plan to take.
MEMORY_HEADROOM = 0.8
STRATEGIES = ("factorized", "materialized")


class Candidate(NamedTuple):
    """One way to run a fit: on ``backend`` ("cpu", "gpu"), ``strategy`` ("factorized", ...)."""

    backend: str
    strategy: str

    def __str__(self):
        return f"{self.backend}/{self.strategy}"


def candidates(strategy="auto", backend="auto", *, gpu=None):
    """The candidates a fit may choose from, after what the user forced.

    Parameters
    ----------
    strategy : {"auto", "factorized", "materialized"}
    backend : {"auto", "cpu", "gpu"}
    gpu : bool, optional
        Whether a GPU is usable; probed when not given.

    Returns
    -------
    list of Candidate
        CPU first, factorized first.
    """
    gpu = gpu_available() if gpu is None else gpu
    if backend == "auto":
        backends = ("cpu", "gpu") if gpu else ("cpu",)
    else:
        backends = (backend,)
    strategies = STRATEGIES if strategy == "auto" else (strategy,)
    return [Candidate(b, s) for b in backends for s in strategies]


def infeasibility(candidate, path_memory, *, host_available, device_available, mat_bytes,
                  resident_bytes=0.0):
    """Why ``candidate`` cannot run, or ``None`` when it can.

    Parameters
    ----------
    candidate : Candidate
    path_memory : float
        Peak bytes the path needs on its device (``path_memory`` feature).
    host_available, device_available : float
        Bytes free now on the host and on the GPU.
    mat_bytes : float
        Bytes of the materialized matrix (built on the host even for the GPU).
    resident_bytes : float
        Bytes of the sources, already held on the host (not needed a second time there).

    Returns
    -------
    str or None
    """
    if candidate.strategy == "materialized" and mat_bytes > MEMORY_HEADROOM * host_available:
        return (f"the materialized matrix needs {_gb(mat_bytes)} but the host has "
                f"{_gb(host_available)} available")
    if candidate.backend == "gpu" and path_memory > MEMORY_HEADROOM * device_available:
        return (f"the path needs {_gb(path_memory)} on the GPU, which has "
                f"{_gb(device_available)} free")
    extra = path_memory - resident_bytes
    if candidate.backend == "cpu" and extra > MEMORY_HEADROOM * host_available:
        return (f"the path needs {_gb(extra)} more but the host has "
                f"{_gb(host_available)} available")
    return None


def _gb(n_bytes):
    return f"{n_bytes / 2**30:.2f} GiB"
