"""The ways one fit can run, and which of them fit in memory."""

from typing import NamedTuple

from ..backend import gpu_available
from ._memory import format_bytes

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


def infeasibility(candidate, peak_memory, *, host_available, device_available, mat_bytes,
                  resident_bytes=0.0, headroom=MEMORY_HEADROOM):
    """Why ``candidate`` cannot run, or ``None`` when it can.

    A path may plan to take ``headroom`` of the memory available: by default
    :data:`MEMORY_HEADROOM`, a margin for the error of the estimates; 1 asks whether the
    estimate fits in all of it.

    Parameters
    ----------
    candidate : Candidate
    peak_memory : float
        Peak bytes the path needs on its device
        (:func:`sklearn_ilargi.cost._memory.peak_bytes`).
    host_available, device_available : float
        Bytes free now on the host and on the GPU.
    mat_bytes : float
        Bytes of the materialized matrix (built on the host even for the GPU).
    resident_bytes : float
        Bytes of the sources, already held on the host (not needed a second time there).
    headroom : float, default=MEMORY_HEADROOM
        The share of the memory available that the path may take.

    Returns
    -------
    str or None
    """
    if candidate.strategy == "materialized" and mat_bytes > headroom * host_available:
        return (f"the materialized matrix needs {format_bytes(mat_bytes)}, "
                f"{_allowance(host_available, headroom, 'available on the host')}")
    if candidate.backend == "gpu" and peak_memory > headroom * device_available:
        return (f"the path needs {format_bytes(peak_memory)} at its peak on the GPU, "
                f"{_allowance(device_available, headroom, 'free there')}")
    extra = peak_memory - resident_bytes
    if candidate.backend == "cpu" and extra > headroom * host_available:
        return (f"the path needs {format_bytes(extra)} more at its peak, "
                f"{_allowance(host_available, headroom, 'available on the host')}")
    return None


def _allowance(available, headroom, where):
    if headroom >= 1:
        return f"more than the {format_bytes(available)} {where}"
    return (f"more than the {format_bytes(headroom * available)} it may take "
            f"({headroom:.0%} of the {format_bytes(available)} {where})")
