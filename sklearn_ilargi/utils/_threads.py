"""Limiting BLAS to one thread where its threads cost more than they bring."""

import contextlib
import functools


@functools.cache
def _controller():
    from threadpoolctl import ThreadpoolController

    # Built once: inspecting the loaded libraries takes about 0.4 ms, a limit then 10 us.
    return ThreadpoolController()


def one_blas_thread(enabled=True):
    """A context in which BLAS runs on one thread (or, with ``enabled=False``, as it is)."""
    if not enabled:
        return contextlib.nullcontext()
    return _controller().limit(limits=1, user_api="blas")
