"""Limiting BLAS to one thread where its threads cost more than they bring."""

import contextlib
import functools
import threading


@functools.cache
def _controller():
    from threadpoolctl import ThreadpoolController

    # Built once: it inspects every loaded library, which costs far more than a limit.
    return ThreadpoolController()


class _SharedLimit:
    """One process-wide BLAS limit, shared by the threads that ask for it at the same time.

    A threadpoolctl limit is process-wide and restores, on exit, what it found on entry: two
    overlapping limits from two threads (fits in a ``ThreadPoolExecutor``) would restore in the
    wrong order and leave the process at one thread. And where BLAS has one pool for the whole
    process (OpenBLAS with pthreads), threadpoolctl lets only one thread change it, the first
    to try while it lives, and ignores the others. So the thread that sets the limit is the
    one that restores it, when it leaves its outermost context; a thread that enters while
    another holds the limit runs under it and changes nothing. The limit therefore lasts as
    long as its owner holds it: threads still inside after the owner left run without it,
    and the limits in force before are back either way.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._owner = None
        self._depth = 0
        self._limiter = None

    @contextlib.contextmanager
    def held(self):
        me = threading.get_ident()
        with self._lock:
            if self._owner is None:
                self._limiter = _controller().limit(limits=1, user_api="blas")
                self._owner = me
            if self._owner == me:
                self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                if self._owner == me:
                    self._depth -= 1
                    if self._depth == 0:
                        self._limiter.restore_original_limits()
                        self._owner, self._limiter = None, None


_ONE_THREAD = _SharedLimit()


def one_blas_thread(enabled=True):
    """A context in which BLAS runs on one thread (or, with ``enabled=False``, as it is).

    The limit is process-wide, as BLAS's thread pools are: while the thread that set it is
    inside such a context, BLAS runs on one thread in every thread. Nested and concurrent uses
    are safe: the limits in force before come back when that thread leaves (see
    :class:`_SharedLimit`).
    """
    if not enabled:
        return contextlib.nullcontext()
    return _ONE_THREAD.held()
