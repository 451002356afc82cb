"""What every sklearn-ilargi estimator shares: choosing and preparing the path of a fit.

An estimator that mixes in :class:`FactorizedMixin` has the parameters ``strategy`` and
``backend`` and calls :meth:`FactorizedMixin._dispatch` once per ``fit``, after validating
``X``. That call goes through the one dispatcher (:func:`sklearn_ilargi.cost.decide` then
:func:`sklearn_ilargi.cost.prepare`), records what it chose and hands back ``X`` as the chosen
path wants it (still factorized, joined, or moved to the GPU).

Fitted arrays and results follow the device of the input: numpy for host input, CuPy for
input on the GPU (see :func:`sklearn_ilargi.backend.like_input`). The estimators compute on
host copies of their fitted arrays either way.
"""

import copy
import functools
import inspect

import numpy as np

from .backend import backend_of, call_with_cpu_fallback, device_of, like_input, to_numpy
from .cost import decide, prepare

#: Fitted arrays that stay numpy whatever the input: the labels of ``y`` and iteration counts.
HOST_ATTRIBUTES = frozenset({"classes_", "n_iter_"})

#: The methods that read the fitted model; their results follow the device of their input.
MODEL_READERS = ("predict", "predict_proba", "predict_log_proba", "decision_function", "score",
                 "score_samples", "transform", "inverse_transform")


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

    Notes
    -----
    After a fit on GPU input (a NormalizedMatrix on the GPU or with CuPy sources), every
    public fitted array of numbers is a CuPy array (``coef_``, ``cluster_centers_``,
    ``labels_``, ``mean_``, ...), except those in :data:`HOST_ATTRIBUTES`; after a fit on host
    input they are numpy arrays. The methods named in :data:`MODEL_READERS` run on host copies
    of these arrays and return their results like their input: numpy for host input, CuPy for
    GPU input (a NormalizedMatrix on the GPU, or a CuPy array, which they copy to the host).
    Subclasses get this by inheritance (:meth:`__init_subclass__` wraps those methods with
    :func:`reads_fitted_model`), and their ``fit`` through :func:`falls_back_to_cpu`.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in MODEL_READERS:
            method = inspect.getattr_static(cls, name, None)
            if inspect.isfunction(method) and not hasattr(method, "_reads_fitted_model"):
                setattr(cls, name, reads_fitted_model(method))

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

    ``fit`` starts from host copies of the fitted arrays that a previous fit left (for
    ``warm_start`` and ``partial_fit``); after it, the fitted arrays follow the device of ``X``
    (:func:`sklearn_ilargi.backend.like_input`).
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

        vars(self).update(_fitted_arrays(self, to_numpy))
        out = call_with_cpu_fallback(
            lambda: fit(self, X, *args, **kwargs), on_cpu,
            what=f"{type(self).__name__}.{fit.__name__}", cleanup=drop_device_copy,
        )
        vars(self).update(_fitted_arrays(self, lambda a: like_input(a, X)))
        return out

    return fit_with_fallback


def reads_fitted_model(method):
    """Decorate a method ``method(self, X, ...)`` that reads the fitted model.

    It runs on a shallow copy of the estimator whose fitted arrays are numpy arrays, with CuPy
    arguments copied to the host (a NormalizedMatrix stays where it is), and its result comes
    back like ``X`` (:func:`sklearn_ilargi.backend.like_input`). Calls that it makes to other
    such methods return host results.
    """

    @functools.wraps(method)
    def on_host(self, X, *args, **kwargs):
        if vars(self).get("_fitted_arrays_on_host"):
            return method(self, X, *args, **kwargs)
        view = copy.copy(self)
        vars(view).update(_fitted_arrays(self, to_numpy), _fitted_arrays_on_host=True)
        args = [_host_argument(a) for a in (X, *args)]
        kwargs = {key: _host_argument(value) for key, value in kwargs.items()}
        return like_input(method(view, *args, **kwargs), X)

    on_host._reads_fitted_model = True
    return on_host


def _host_argument(a):
    """``a`` copied to the host if it is CuPy data, else as it is (a NormalizedMatrix too)."""
    return to_numpy(a) if device_of(a) == "gpu" else a


def _fitted_arrays(estimator, convert):
    """``{name: convert(value)}`` for the public fitted arrays not in HOST_ATTRIBUTES."""
    return {name: convert(value) for name, value in vars(estimator).items()
            if name.endswith("_") and not name.startswith("_") and name not in HOST_ATTRIBUTES
            and (isinstance(value, np.ndarray) or device_of(value) == "gpu")}


def to_host(a):
    """``a`` as a numpy array (or scipy.sparse matrix), wherever it lives."""
    if isinstance(a, np.ndarray) or np.isscalar(a):
        return a
    return backend_of(a).to_numpy(a)
