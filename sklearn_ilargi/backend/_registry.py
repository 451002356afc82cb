"""Find the backend module for a name or for an array."""

import importlib
from functools import lru_cache

_MODULES = {"cpu": "._numpy", "gpu": "._cupy"}


def get_backend(name):
    """Return the backend module called ``name`` ("cpu" or "gpu").

    Parameters
    ----------
    name : {"cpu", "gpu"}
        The backend: numpy and scipy.sparse, or CuPy and cupyx.scipy.sparse.

    Returns
    -------
    module
        The module of array primitives (``gather_rows``, ``scatter_add_rows``, ``dot``, ...)
        that the factorized operations run on.

    Raises
    ------
    ValueError
        For an unknown name.
    RuntimeError
        For "gpu" when CuPy or a CUDA device is missing; the message says which.

    See Also
    --------
    backend_of : The backend of an array.

    Examples
    --------
    >>> from sklearn_ilargi.backend import get_backend
    >>> get_backend("cpu").__name__
    'sklearn_ilargi.backend._numpy'
    >>> get_backend("tpu")
    Traceback (most recent call last):
        ...
    ValueError: Unknown backend 'tpu'; expected one of ['cpu', 'gpu'].
    """
    if name not in _MODULES:
        raise ValueError(f"Unknown backend {name!r}; expected one of {sorted(_MODULES)}.")
    if name == "gpu":
        reason = _gpu_unavailable_reason()
        if reason:
            raise RuntimeError(f"backend='gpu' is not usable here: {reason}.")
    return importlib.import_module(_MODULES[name], __package__)


def backend_of(array):
    """Return the backend module whose arrays ``array`` is (CuPy arrays -> gpu, else cpu).

    Parameters
    ----------
    array : object
        An array or sparse matrix; anything that is not CuPy's counts as host data.

    Returns
    -------
    module
        ``get_backend("gpu")`` for CuPy data, else ``get_backend("cpu")``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi.backend import backend_of, get_backend
    >>> backend_of(np.ones(3)) is get_backend("cpu")
    True
    """
    module = type(array).__module__
    if module.startswith(("cupy", "cupyx")):
        return get_backend("gpu")
    return get_backend("cpu")


def gpu_available():
    """Whether CuPy imports and sees at least one CUDA device.

    Checked once per process.

    Returns
    -------
    bool
        True when ``backend="gpu"`` can run here.

    Examples
    --------
    >>> from sklearn_ilargi.backend import gpu_available
    >>> isinstance(gpu_available(), bool)
    True
    """
    return _gpu_unavailable_reason() is None


def available_backends():
    """Names of the backends usable on this machine, CPU first.

    Returns
    -------
    list of str
        ``["cpu"]``, or ``["cpu", "gpu"]`` where :func:`gpu_available`.

    Examples
    --------
    >>> from sklearn_ilargi.backend import available_backends
    >>> available_backends()[0]
    'cpu'
    """
    return ["cpu", "gpu"] if gpu_available() else ["cpu"]


@lru_cache(maxsize=1)
def _gpu_unavailable_reason():
    """Why the GPU backend cannot run here, or None when it can (checked once per process)."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install 'sklearn-ilargi[gpu]')"
    except Exception as exc:  # a CuPy wheel that does not match the CUDA libraries
        return f"CuPy is installed but failed to import ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDA driver missing or broken
        return f"CuPy found no usable CUDA device ({exc})"
    if count == 0:
        return "CuPy found no CUDA device"
    try:
        cupy.empty(1)
    except Exception as exc:  # a device that is present but cannot allocate (driver too old)
        return f"CuPy cannot allocate on the CUDA device ({type(exc).__name__}: {exc})"
    return None
