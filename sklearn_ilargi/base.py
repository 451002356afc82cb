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

import numpy as np

from ._config import carried_settings, settings_to_carry
from .backend import backend_of, call_with_cpu_fallback, device_of, like_input, to_numpy
from .cost import decide, prepare
from .utils import is_normalized
from .utils._sklearn_compat import _get_output_config

#: Fitted arrays that stay numpy whatever the input: the labels of ``y`` and iteration counts.
HOST_ATTRIBUTES = frozenset({"classes_", "n_iter_"})

#: The methods that read the fitted model; each estimator decorates its own (and the ones it
#: inherits from scikit-learn) with :func:`reads_fitted_model`, so that their results follow
#: the device of their input.
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
    Subclasses get this by decorating those methods with :func:`reads_fitted_model`, and the
    body of their ``fit`` with :func:`falls_back_to_cpu`.
    """

    def __getstate__(self):
        # Worker processes (a search's n_jobs) unpickle the estimator: it carries the
        # settings of the process that sent it (see sklearn_ilargi._config.carried_settings).
        # A copy: on Python 3.11+ the state that scikit-learn hands on is the instance's dict.
        return {**super().__getstate__(), "_carried_settings": settings_to_carry()}

    def __sklearn_clone__(self):
        # A clone made in a worker process (a nested search's candidates) carries what the
        # original carried, so that its fits run under the same settings.
        clone = super().__sklearn_clone__()
        if "_carried_settings" in vars(self):
            clone._carried_settings = self._carried_settings
        return clone

    def _dispatch(self, X, profile=None, *, backend):
        """Decide the path of this fit, record it, and return ``X`` prepared for it.

        Parameters
        ----------
        X : NormalizedMatrix, ndarray or sparse matrix
            The validated input.
        profile : sklearn_ilargi.cost.OperationProfile, optional
            The operations the fit will run, for the cost model.
        backend : {"auto", "cpu", "gpu"}
            The backend asked for: the one that :func:`falls_back_to_cpu` hands the fit's
            body (``self.backend``, or "cpu" when the GPU ran out of memory).

        Returns
        -------
        X : NormalizedMatrix, ndarray or sparse matrix
            Factorized or joined, on the chosen device.
        """
        decision = decide(X, profile, strategy=self.strategy, backend=backend)
        self.decision_ = decision
        self.strategy_ = decision.strategy
        self.backend_ = decision.backend
        return prepare(X, decision)


def falls_back_to_cpu(fit_body):
    """Decorate the body of an estimator's fit: if the GPU runs out of memory, run it on the CPU.

    ``fit_body(self, X, ..., *, backend)`` runs with ``backend=self.backend``, which it hands
    to :meth:`FactorizedMixin._dispatch`. If the device runs out of memory, the input drops
    its device copy (``NormalizedMatrix.drop_device_copy``) and the body runs again with
    ``backend="cpu"``, after a :class:`~sklearn_ilargi.backend.DeviceMemoryWarning`: the same
    model. Any other error propagates. The decorated method takes the body's arguments
    without ``backend``.

    The body starts from host copies of the fitted arrays that a previous fit left (for
    ``warm_start`` and ``partial_fit``); after it, the fitted arrays follow the device of ``X``
    (:func:`sklearn_ilargi.backend.like_input`).
    """

    @functools.wraps(fit_body)
    def fit_with_fallback(self, X, *args, **kwargs):
        def run_on(backend):
            return lambda: fit_body(self, X, *args, backend=backend, **kwargs)

        def drop_device_copy():
            if is_normalized(X):
                X.drop_device_copy()

        vars(self).update(_fitted_arrays(self, to_numpy))
        with carried_settings(vars(self).get("_carried_settings")):
            out = call_with_cpu_fallback(
                run_on(self.backend), run_on("cpu"),
                what=f"{type(self).__name__}.{fit_body.__name__.lstrip('_')}",
                cleanup=drop_device_copy,
            )
        vars(self).update(_fitted_arrays(self, lambda a: like_input(a, X)))
        return out

    return fit_with_fallback


def reads_fitted_model(method):
    """Decorate a method ``method(self, X, ...)`` that reads the fitted model.

    Where the fitted arrays or the arguments are on the GPU, it runs on a shallow copy of the
    estimator whose fitted arrays are numpy arrays, with CuPy arguments copied to the host (a
    NormalizedMatrix stays where it is), and its result comes back like ``X``
    (:func:`sklearn_ilargi.backend.like_input`); calls that it makes to other such methods
    return host results. Where everything is on the host, it is ``method`` itself.

    Estimators decorate their own readers, and wrap those they inherit from scikit-learn
    (``score = reads_fitted_model(RegressorMixin.score)``), whose calls to the estimator's
    readers must get host results.

    A ``transform`` whose output ``set_output`` asks to be a container (a DataFrame) keeps
    its host result: scikit-learn's wrapper, which runs after it, builds the container.
    """

    @functools.wraps(method)
    def on_host(self, X, *args, **kwargs):
        if vars(self).get("_fitted_arrays_on_host"):
            return method(self, X, *args, **kwargs)
        on_device = _fitted_arrays(self, to_numpy, only_device=True)
        if not on_device and all(device_of(a) == "cpu" for a in (X, *args, *kwargs.values())):
            return method(self, X, *args, **kwargs)
        view = copy.copy(self)
        vars(view).update(on_device, _fitted_arrays_on_host=True)
        args = [_host_argument(a) for a in (X, *args)]
        kwargs = {key: _host_argument(value) for key, value in kwargs.items()}
        out = method(view, *args, **kwargs)
        return out if _wrapped_in_container(self, method) else like_input(out, X)

    on_host._reads_fitted_model = True
    return on_host


def _wrapped_in_container(estimator, method):
    """Whether scikit-learn's ``set_output`` turns what ``method`` returns into a container."""
    return (method.__name__ in ("transform", "fit_transform")
            and _get_output_config("transform", estimator)["dense"] != "default")


def _host_argument(a):
    """``a`` copied to the host if it is CuPy data, else as it is (a NormalizedMatrix too)."""
    return to_numpy(a) if device_of(a) == "gpu" else a


def _fitted_arrays(estimator, convert, *, only_device=False):
    """``{name: convert(value)}`` for the public fitted arrays not in HOST_ATTRIBUTES (those on
    the GPU only, with ``only_device``)."""
    return {name: convert(value) for name, value in vars(estimator).items()
            if name.endswith("_") and not name.startswith("_") and name not in HOST_ATTRIBUTES
            and ((isinstance(value, np.ndarray) and not only_device)
                 or device_of(value) == "gpu")}


def to_host(a):
    """``a`` as a numpy array (or scipy.sparse matrix), wherever it lives."""
    if isinstance(a, np.ndarray) or np.isscalar(a):
        return a
    return backend_of(a).to_numpy(a)
