"""Progress of a solver's iterations, for the ``verbose`` parameter of the estimators."""

import time

from .._config import get_config


def verbosity(verbose):
    """The estimator's ``verbose``, or the ``verbose`` setting where it is 0."""
    return int(verbose) or get_config()["verbose"]


class IterationProgress:
    """Report every iteration of a solver, with an estimate of the time left.

    Silent at verbosity 0. Otherwise a ``tqdm`` progress bar where tqdm is installed (it is
    optional, and imported only then), else one printed line per iteration. The time left
    assumes that every iteration up to ``total`` takes the mean time of those so far: a bound
    from above for a solver that converges before ``total``.

    Use it as a context manager, and call it once per iteration.

    Parameters
    ----------
    verbose : int or bool
        The estimator's ``verbose``; 0 defers to the ``verbose`` setting
        (:func:`sklearn_ilargi.set_config`).
    total : int
        The most iterations the solver may run (its ``max_iter``).
    description : str
        What iterates, e.g. the estimator's name.

    Examples
    --------
    >>> from sklearn_ilargi.utils._progress import IterationProgress
    >>> with IterationProgress(0, total=3, description="solver") as progress:
    ...     for _ in range(3):
    ...         progress(loss=0.5)
    """

    def __init__(self, verbose, total, description):
        self.enabled = verbosity(verbose) > 0
        self.total = int(total)
        self.description = description
        self._done = 0
        self._bar = None
        self._start = None

    def __enter__(self):
        if self.enabled:
            self._start = time.perf_counter()
            tqdm = _tqdm()
            if tqdm is not None:
                self._bar = tqdm(total=self.total, desc=self.description, unit="it")
        return self

    def __call__(self, **values):
        """One more iteration is done; ``values`` (``name=number``) are shown with it."""
        if not self.enabled:
            return
        self._done += 1
        shown = ", ".join(f"{name} {float(value):.6g}" for name, value in values.items())
        if self._bar is not None:
            self._bar.set_postfix_str(shown, refresh=False)
            self._bar.update()
            return
        elapsed = time.perf_counter() - self._start
        left = elapsed / self._done * max(self.total - self._done, 0)
        print(f"{self.description}: iteration {self._done}/{self.total}"
              + (f", {shown}" if shown else "") + f", at most {left:.2g} s left")

    def note(self, message):
        """A line of its own, e.g. why the solver stopped."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.write(message)
        else:
            print(message)

    def __exit__(self, *exc_info):
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        return False


def _tqdm():
    """tqdm's progress bar class, or None where tqdm is not installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm
