"""Array primitives per device.

The factorized operations are written once against the small set of functions that each
backend module exposes (``gather_rows``, ``scatter_add_rows``, ``dot``, ...). ``cpu`` is numpy
plus scipy.sparse; ``gpu`` is CuPy plus cupyx.scipy.sparse and is imported only when asked for.
"""

from ._convert import device_of, like_input, to_numpy
from ._fallback import DeviceMemoryWarning, call_with_cpu_fallback, is_device_out_of_memory
from ._registry import available_backends, backend_of, get_backend, gpu_available

__all__ = [
    "DeviceMemoryWarning",
    "available_backends",
    "backend_of",
    "call_with_cpu_fallback",
    "device_of",
    "get_backend",
    "gpu_available",
    "is_device_out_of_memory",
    "like_input",
    "to_numpy",
]
