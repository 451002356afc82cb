"""The device plumbing that every estimator shares: readers, the CPU fallback, dispatch."""

import inspect
import types

import numpy as np
import pytest
from sklearn.base import BaseEstimator

import sklearn_ilargi.base as base
from sklearn_ilargi import FactorizedRidge, NormalizedMatrix
from sklearn_ilargi.backend import DeviceMemoryWarning
from sklearn_ilargi.base import MODEL_READERS, FactorizedMixin, falls_back_to_cpu

from sklearn_ilargi.tests._estimators import estimator_classes


def _cupy_like_error(message):
    error = type("OutOfMemoryError", (Exception,), {"__module__": "cupy.cuda.memory"})
    return error(message)


@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_every_reader_reads_the_fitted_model_on_the_host(cls):
    """Each reader, the estimator's own or inherited from scikit-learn, is decorated where
    the estimator defines or names it."""
    for name in MODEL_READERS:
        method = inspect.getattr_static(cls, name, None)
        if method is not None:
            assert getattr(method, "_reads_fitted_model", False), f"{cls.__name__}.{name}"


class _Recorder(FactorizedMixin, BaseEstimator):
    """An estimator whose fit records the backend its body is handed, failing on the GPU."""

    def __init__(self, backend="auto", strategy="auto"):
        self.backend = backend
        self.strategy = strategy

    def fit(self, X):
        return self._fit(X)

    @falls_back_to_cpu
    def _fit(self, X, *, backend):
        self.seen_ = [*getattr(self, "seen_", []), backend]
        if backend != "cpu":
            raise _cupy_like_error("Out of memory allocating 8 bytes")
        return self


def test_the_fallback_hands_the_cpu_backend_to_the_body():
    X = NormalizedMatrix.from_matrices([np.ones((3, 1))], [np.arange(3)])
    vars(X)["_device_copies"] = {"gpu": object()}  # what X.to("gpu") keeps
    estimator = _Recorder(backend="gpu")
    with pytest.warns(DeviceMemoryWarning, match=r"_Recorder\.fit ran out of GPU memory"):
        estimator.fit(X)
    assert estimator.seen_ == ["gpu", "cpu"]
    assert "_device_copies" not in vars(X)
    assert estimator.get_params()["backend"] == "gpu"
    assert set(vars(estimator)) == {"backend", "strategy", "seen_"}


def test_dispatch_needs_the_backend_of_the_fit():
    estimator = FactorizedRidge()
    X = np.ones((4, 2))
    with pytest.raises(TypeError, match="backend"):
        estimator._dispatch(X)
    assert estimator._dispatch(X, backend="cpu") is X
    assert estimator.backend_ == "cpu"


def test_host_reads_run_on_the_estimator_itself(monkeypatch):
    """With the model and the input on the host, a reader needs no host view of the model."""
    rng = np.random.default_rng(0)
    X, y = rng.random((20, 3)), rng.random(20)
    model = FactorizedRidge(backend="cpu").fit(X, y)
    expected = model.predict(X)

    def no_copy(_):
        raise AssertionError("a host read copied the estimator")

    monkeypatch.setattr(base, "copy", types.SimpleNamespace(copy=no_copy))
    np.testing.assert_array_equal(model.predict(X), expected)
    assert model.score(X, y) == pytest.approx(1 - ((y - expected) ** 2).sum()
                                              / ((y - y.mean()) ** 2).sum())
