"""The BLAS limit of small fits: shared safely by threads, the old limits back afterwards."""

import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from sklearn_ilargi import FactorizedLogisticRegression, NormalizedMatrix
from sklearn_ilargi.backend import get_backend
from sklearn_ilargi.utils import _threads, one_blas_thread

threadpoolctl = pytest.importorskip("threadpoolctl")
#: Seconds a thread of a test waits for another one at most (the tests fail, not hang).
WAIT = 10


def blas_threads():
    return [info["num_threads"] for info in threadpoolctl.threadpool_info()
            if info["user_api"] == "blas"]


@pytest.fixture
def limitable_blas():
    """The BLAS thread counts before the test; skips where BLAS cannot be limited."""
    before = blas_threads()
    if not before:
        pytest.skip("threadpoolctl finds no BLAS library")
    with one_blas_thread():
        if any(n != 1 for n in blas_threads()):
            pytest.skip("this BLAS ignores threadpoolctl's limits (or another thread has "
                        "taken control of them)")
    assert blas_threads() == before
    return before


class StandInLimits:
    """Stands for threadpoolctl's controller of one process-wide thread count, whose limits
    restore on exit what they found on entry.

    With ``one_controlling_thread``, as threadpoolctl treats OpenBLAS with pthreads, the
    first thread to change the count controls it while it lives, and changes from any other
    thread are ignored.
    """

    def __init__(self, threads, one_controlling_thread):
        self.threads = threads
        self.one_controlling_thread = one_controlling_thread
        self.controller = None

    def _set(self, threads):
        me = threading.current_thread()
        if self.controller is None or not self.controller.is_alive():
            self.controller = me
        if self.controller is me or not self.one_controlling_thread:
            self.threads = threads

    def limit(self, limits, user_api):
        found = self.threads
        self._set(limits)
        stand_in = self

        class Limit:
            def restore_original_limits(self):
                stand_in._set(found)

            def __enter__(self):
                return self

            def __exit__(self, *exc_info):
                self.restore_original_limits()

        return Limit()


@pytest.mark.parametrize("one_controlling_thread", [False, True])
@pytest.mark.parametrize("first_out", ["a", "b"])
def test_overlapping_holders_leave_the_limits_as_they_were(monkeypatch, one_controlling_thread,
                                                           first_out):
    """A enters, B enters, one leaves, then the other: BLAS had one thread while both were
    inside, and the old limits are back at the end."""
    limits = StandInLimits(threads=4, one_controlling_thread=one_controlling_thread)
    monkeypatch.setattr(_threads, "_controller", lambda: limits)
    inside, may_leave, left = ({name: threading.Event() for name in "ab"} for _ in range(3))
    end = threading.Event()

    def holder(name):
        with one_blas_thread():
            inside[name].set()
            may_leave[name].wait(WAIT)
        left[name].set()
        end.wait(WAIT)  # lives on, as a pool's threads do

    threads = {name: threading.Thread(target=holder, args=(name,)) for name in "ab"}
    for name in "ab":
        threads[name].start()
        inside[name].wait(WAIT)
    both_inside = limits.threads
    for name in sorted("ab", key=lambda name: name != first_out):
        may_leave[name].set()
        left[name].wait(WAIT)
    after = limits.threads
    end.set()
    for thread in threads.values():
        thread.join(WAIT)
    assert both_inside == 1 and after == 4


def test_nested_holders_in_one_thread(monkeypatch):
    limits = StandInLimits(threads=4, one_controlling_thread=True)
    monkeypatch.setattr(_threads, "_controller", lambda: limits)
    with one_blas_thread():
        with one_blas_thread():
            assert limits.threads == 1
        assert limits.threads == 1
    assert limits.threads == 4
    with one_blas_thread(enabled=False):
        assert limits.threads == 4


def small_fits_in_threads():
    rng = np.random.default_rng(0)
    fact, dim = rng.random((300, 2)), rng.random((20, 4))
    X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(300), rng.integers(0, 20, 300)])
    y = (fact[:, 0] > 0.5).astype(int)

    def fit(seed):
        model = FactorizedLogisticRegression(strategy="factorized", max_iter=30)
        return model.fit(X, np.roll(y, seed)).coef_

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(fit, range(8)))


def test_concurrent_small_fits_leave_the_limits_as_they_were(limitable_blas):
    small_fits_in_threads()
    assert blas_threads() == limitable_blas


def test_concurrent_thread_maps_leave_the_limits_as_they_were(limitable_blas):
    cpu = get_backend("cpu")
    a = np.random.default_rng(1).random((64, 64))

    def products(_):
        return cpu.map_in_threads(lambda part: part @ a, [a, a, a])

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(products, range(16)))
    assert blas_threads() == limitable_blas


def test_in_a_fresh_process_threads_leave_the_limits_as_they_were(limitable_blas):
    """Here the main thread has limited BLAS already, which (threadpoolctl's rule for a BLAS
    pool of the whole process) makes other threads' limits void; a fresh process lets the
    fits' threads limit and restore for real."""
    script = textwrap.dedent("""
        import threadpoolctl
        from sklearn_ilargi.utils.tests.test_threads import blas_threads, small_fits_in_threads

        before = blas_threads()
        small_fits_in_threads()
        assert blas_threads() == before, (before, blas_threads())
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
