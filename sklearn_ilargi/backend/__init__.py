"""Array primitives per device.

The factorized operations are written once against the small set of functions that each
backend module exposes (``gather_rows``, ``scatter_add_rows``, ``dot``, ...). ``cpu`` is numpy
plus scipy.sparse; ``gpu`` is CuPy plus cupyx.scipy.sparse and is imported only when asked for.
"""

from ._registry import available_backends, backend_of, get_backend, gpu_available

__all__ = ["available_backends", "backend_of", "get_backend", "gpu_available"]
