"""What every sklearn-ilargi estimator shares: choosing and preparing the path of a fit.

An estimator that mixes in :class:`FactorizedMixin` has the parameters ``strategy`` and
``backend`` and calls :meth:`FactorizedMixin._dispatch` once per ``fit``, after validating
``X``. That call goes through the one dispatcher (:func:`sklearn_ilargi.cost.decide` then
:func:`sklearn_ilargi.cost.prepare`), records what it chose and hands back ``X`` as the chosen
path wants it (still factorized, joined, or moved to the GPU).
"""

import functools

import numpy as np

from .backend import backend_of, call_with_cpu_fallback
from .cost import decide, prepare


class FactorizedMixin:
    """Strategy and backend dispatch for estimators over a NormalizedMatrix or plain input.

    The estimator must store ``strategy`` and ``backend`` parameters. After ``fit`` it has:

    Attributes
    ----------
    decision_ : sklearn_ilargi.cost.Decision
        What the dispatcher chose and why (``decision_.explain()``).
    strategy_ : {"factorized", "materialized"}
        Whether the fit ran on the sources or on the joined matrix. Plain numpy or
        scipy.sparse input is always "materialized" (it is already one matrix).
    backend_ : {"cpu", "gpu"}
        The device the heavy work ran on.
    """

    def _dispatch(self, X, profile=None):
        """Decide the path of this fit, record it, and return ``X`` prepared for it.

        Parameters
        ----------
        X : NormalizedMatrix, ndarray or sparse matrix
            The validated input.
        profile : sklearn_ilargi.cost.OperationProfile, optional
            The operations the fit will run, for the cost model.

        Returns
        -------
        X : NormalizedMatrix, ndarray or sparse matrix
            Factorized or joined, on the chosen device.
        """
        backend = getattr(self, "_backend_after_device_failure", self.backend)
        decision = decide(X, profile, strategy=self.strategy, backend=backend)
        self.decision_ = decision
        self.strategy_ = decision.strategy
        self.backend_ = decision.backend
        return prepare(X, decision)


def falls_back_to_cpu(fit):
    """Decorate an estimator's ``fit``: if the GPU runs out of memory, fit again on the CPU.

    The CPU fit warns with :class:`~sklearn_ilargi.backend.DeviceMemoryWarning` and gives the
    same model; any other error propagates. The input's cached device copy is dropped first.
    """

    @functools.wraps(fit)
    def fit_with_fallback(self, X, *args, **kwargs):
        def on_cpu():
            self._backend_after_device_failure = "cpu"
            try:
                return fit(self, X, *args, **kwargs)
            finally:
                del self._backend_after_device_failure

        def drop_device_copy():
            if hasattr(X, "blocks"):  # a NormalizedMatrix caches its device copy
                vars(X).pop("_device_copies", None)

        return call_with_cpu_fallback(
            lambda: fit(self, X, *args, **kwargs), on_cpu,
            what=f"{type(self).__name__}.{fit.__name__}", cleanup=drop_device_copy,
        )

    return fit_with_fallback


def to_host(a):
    """``a`` as a numpy array (or scipy.sparse matrix), wherever it lives."""
    if isinstance(a, np.ndarray) or np.isscalar(a):
        return a
    return backend_of(a).to_numpy(a)
