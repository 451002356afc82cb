"""Choosing a backend, with and without CuPy: errors, the quiet CPU default, the OOM fallback.

Runs on any machine: where CuPy is absent (or hidden by the ``no_cupy`` fixture) the GPU must be
refused with a message naming CuPy, ``backend="auto"`` must stay on the CPU, and importing the
package must never import CuPy.
"""

import copy
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from sklearn.base import is_classifier, is_regressor

import sklearn_ilargi.normalized._matrix as matrix_module
from sklearn_ilargi import NormalizedMatrix, config_context
from sklearn_ilargi.backend import (
    DeviceMemoryWarning,
    available_backends,
    backend_of,
    call_with_cpu_fallback,
    device_of,
    get_backend,
    gpu_available,
    is_device_out_of_memory,
    like_input,
    to_numpy,
)
from sklearn_ilargi.backend._registry import _gpu_unavailable_reason
from sklearn_ilargi.cost import decide, prepare

from sklearn_ilargi.tests._estimators import estimator_classes


@pytest.fixture
def no_cupy(monkeypatch):
    """Make ``import cupy`` fail, as on a machine without it."""
    _gpu_unavailable_reason.cache_clear()
    monkeypatch.setitem(sys.modules, "cupy", None)
    yield
    monkeypatch.undo()
    _gpu_unavailable_reason.cache_clear()


@pytest.fixture
def star():
    rng = np.random.default_rng(0)
    fact = rng.random((30, 2))  # non-negative, so that every estimator (NMF too) accepts it
    dim = rng.random((4, 3))
    return NormalizedMatrix.from_matrices([fact, dim], [np.arange(30), rng.integers(0, 4, 30)])




def fit_arguments(estimator, X):
    rng = np.random.default_rng(1)
    if is_classifier(estimator):
        return (X, rng.integers(0, 2, X.shape[0]))
    if is_regressor(estimator):
        return (X, rng.standard_normal(X.shape[0]))
    return (X,)


# ---------------------------------------------------------------------- import and registry
def test_importing_the_package_never_imports_cupy():
    code = ("import sys, sklearn_ilargi, sklearn_ilargi.backend, sklearn_ilargi.cost; "
            "assert 'cupy' not in sys.modules, 'cupy was imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cpu_backend_is_always_there():
    be = get_backend("cpu")
    assert be.name == "cpu" and be.xp is np
    assert available_backends()[0] == "cpu"


def test_unknown_backend_names_the_choices():
    with pytest.raises(ValueError, match="cpu.*gpu"):
        get_backend("tpu")


def test_backend_of_host_data_is_cpu():
    assert backend_of(np.ones(3)).name == "cpu"
    assert backend_of(sp.csr_matrix(np.eye(2))).name == "cpu"


def test_gpu_without_cupy_names_cupy(no_cupy):
    assert not gpu_available()
    assert available_backends() == ["cpu"]
    with pytest.raises(RuntimeError, match="CuPy is not installed"):
        get_backend("gpu")


def test_gpu_reason_is_given_when_unavailable():
    if gpu_available():
        assert _gpu_unavailable_reason() is None
    else:
        assert "CuPy" in _gpu_unavailable_reason()


# ---------------------------------------------------------------------- decide and prepare
def test_decide_gpu_without_cupy_raises(no_cupy, star):
    with pytest.raises(RuntimeError, match="CuPy"):
        decide(star, backend="gpu")
    with pytest.raises(RuntimeError, match="CuPy"):
        decide(np.ones((3, 2)), backend="gpu")


def test_set_config_gpu_without_cupy_raises(no_cupy, star):
    with config_context(backend="gpu"), pytest.raises(RuntimeError, match="CuPy"):
        decide(star)


def test_auto_is_quietly_cpu_without_a_gpu(no_cupy, star):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert decide(star, backend="auto").backend == "cpu"
        assert decide(np.ones((3, 2)), backend="auto").backend == "cpu"
    about_gpu = [w for w in caught if "gpu" in str(w.message).lower()
                 or "cupy" in str(w.message).lower()]
    assert about_gpu == []


@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_estimator_with_gpu_backend_without_cupy_raises(no_cupy, star, cls):
    estimator = cls(backend="gpu")
    with pytest.raises(RuntimeError, match="CuPy"):
        estimator.fit(*fit_arguments(estimator, star))


@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_estimator_with_auto_backend_runs_on_cpu(no_cupy, star, cls):
    estimator = cls(backend="auto").fit(*fit_arguments(cls(), star))
    if hasattr(estimator, "backend_"):
        assert estimator.backend_ == "cpu"


def test_prepare_on_cpu_keeps_host_data(star):
    factorized = decide(star, strategy="factorized", backend="cpu")
    assert prepare(star, factorized) is star
    materialized = decide(star, strategy="materialized", backend="cpu")
    assert_allclose(prepare(star, materialized), star.materialize())
    plain = np.ones((3, 2))
    assert prepare(plain, decide(plain, backend="cpu")) is plain


# ---------------------------------------------------------------------- device copies
class _StandInGPU:
    """The CPU module under the name "gpu": lets the caching of ``to`` run without a GPU."""

    def __init__(self):
        self._cpu = get_backend("cpu")
        self.transfers = 0

    def __getattr__(self, attr):
        return getattr(self._cpu, attr)

    @property
    def name(self):
        return "gpu"

    def from_numpy(self, a):
        self.transfers += 1
        return a


@pytest.fixture
def stand_in_gpu(monkeypatch):
    gpu = _StandInGPU()
    real = matrix_module.get_backend
    monkeypatch.setattr(matrix_module, "get_backend",
                        lambda name: gpu if name == "gpu" else real(name))
    return gpu


def test_to_same_device_is_identity(star):
    assert star.to("cpu") is star


def test_device_copy_is_made_once_and_cached(stand_in_gpu, star):
    first = star.to("gpu")
    transfers = stand_in_gpu.transfers
    assert transfers > 0 and first.device == "gpu"
    assert star.to("gpu") is first
    assert stand_in_gpu.transfers == transfers
    uncached = star.to("gpu", cache=False)
    assert uncached is not first
    assert_allclose(np.asarray(uncached.materialize()), star.materialize())


def test_pickling_and_copying_drop_the_device_copy(stand_in_gpu, star):
    star.to("gpu")
    assert "_device_copies" in vars(star)
    for clone in (pickle.loads(pickle.dumps(star)), copy.copy(star), copy.deepcopy(star)):
        assert "_device_copies" not in vars(clone)
        assert_allclose(clone.materialize(), star.materialize())


# ---------------------------------------------------------------------- results to the host
def test_to_numpy_passes_host_values_through():
    a = np.arange(3)
    assert to_numpy(a) is a
    assert to_numpy(2.5) == 2.5 and to_numpy(None) is None
    assert to_numpy([a, 1])[0] is a
    assert to_numpy({"x": a})["x"] is a
    s = sp.csr_matrix(np.eye(2))
    assert to_numpy(s) is s


def test_device_of_and_like_input(star):
    assert device_of(np.ones(2)) == "cpu" and device_of(star) == "cpu"
    a = np.ones(2)
    assert like_input(a, star) is a


# ---------------------------------------------------------------------- out of memory
def _cupy_like(name, module):
    return type(name, (Exception,), {"__module__": module})


OutOfMemoryError = _cupy_like("OutOfMemoryError", "cupy.cuda.memory")
CUBLASError = _cupy_like("CUBLASError", "cupy_backends.cuda.libs.cublas")
CUDARuntimeError = _cupy_like("CUDARuntimeError", "cupy_backends.cuda.api.runtime")


@pytest.mark.parametrize("exc, expected", [
    (OutOfMemoryError("Out of memory allocating 8 bytes"), True),
    (CUBLASError("CUBLAS_STATUS_ALLOC_FAILED"), True),
    (CUDARuntimeError("cudaErrorMemoryAllocation: out of memory"), True),
    (CUDARuntimeError("cudaErrorIllegalAddress"), False),
    (MemoryError("out of memory"), False),
    (ValueError("out of memory"), False),
])
def test_is_device_out_of_memory(exc, expected):
    assert is_device_out_of_memory(exc) is expected


def test_fallback_warns_and_returns_the_cpu_result():
    cleaned = []

    def on_device():
        raise OutOfMemoryError("Out of memory allocating 1 bytes")

    with pytest.warns(DeviceMemoryWarning, match="ran out of GPU memory"):
        result = call_with_cpu_fallback(on_device, lambda: "cpu", cleanup=lambda: cleaned.append(1))
    assert result == "cpu" and cleaned == [1]


def test_fallback_lets_other_errors_through():
    def on_device():
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        call_with_cpu_fallback(on_device, lambda: "cpu")


def test_fallback_not_taken_when_the_device_succeeds():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert call_with_cpu_fallback(lambda: "gpu", lambda: "cpu") == "gpu"


@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_fit_out_of_gpu_memory_reruns_on_cpu(monkeypatch, star, cls):
    """Every estimator: a device out-of-memory error means a warning and the CPU model."""
    import sklearn_ilargi.base as base

    real_decide, real_prepare = base.decide, base.prepare

    def decide_gpu(X, profile=None, *, strategy="auto", backend="auto"):
        decision = real_decide(X, profile, strategy=strategy, backend="cpu")
        decision.backend = "cpu" if backend == "cpu" else "gpu"
        return decision

    def prepare_or_fail(X, decision):
        if decision.backend == "gpu":
            raise OutOfMemoryError("Out of memory allocating 1 bytes")
        return real_prepare(X, decision)

    seeded = {"random_state": 0} if "random_state" in cls().get_params() else {}
    args = fit_arguments(cls(), star)
    reference = cls(strategy="factorized", backend="cpu", **seeded).fit(*args)
    monkeypatch.setattr(base, "decide", decide_gpu)
    monkeypatch.setattr(base, "prepare", prepare_or_fail)
    vars(star)["_device_copies"] = {"gpu": object()}
    estimator = cls(strategy="factorized", **seeded)
    with pytest.warns(DeviceMemoryWarning, match=f"{cls.__name__}.*ran out of GPU memory"):
        estimator.fit(*args)
    assert estimator.backend_ == "cpu"
    assert "_device_copies" not in vars(star)
    assert not hasattr(estimator, "_backend_after_device_failure")
    for name in ("coef_", "cluster_centers_", "components_", "mean_"):
        if hasattr(reference, name):
            assert_allclose(getattr(estimator, name), getattr(reference, name))
