"""Fitted arrays and results follow the device of the input, checked with a stand-in for CuPy.

Runs on any machine. ``DeviceArray`` behaves like a ``cupy.ndarray`` where it matters here: its
type lives in a ``cupy`` module, ``.get()`` copies it to the host, and numpy refuses to convert
it implicitly. The stand-in GPU copies numeric host arrays into it, and one NormalizedMatrix
(on the CPU) is declared to be on the GPU, so the estimators fit on the CPU while their results
go where GPU input would send them. Any fitted array read without a host copy fails.
"""

import pickle
import types

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from sklearn.base import is_classifier, is_regressor

import sklearn_ilargi
import sklearn_ilargi.backend._convert as convert
from sklearn_ilargi import NormalizedMatrix
from sklearn_ilargi.backend import device_of, like_input
from sklearn_ilargi.base import HOST_ATTRIBUTES

from sklearn_ilargi.tests._estimators import estimator_classes


class DeviceArray:
    """A stand-in for ``cupy.ndarray``."""

    __module__ = "cupy.stand_in"
    __array_ufunc__ = None

    def __init__(self, host):
        self._host = np.array(host)

    dtype = property(lambda self: self._host.dtype)
    shape = property(lambda self: self._host.shape)
    ndim = property(lambda self: self._host.ndim)

    def get(self):
        return self._host.copy()

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed.")

    def __reduce__(self):
        return _device_array, (self._host,)


def _device_array(host):
    return DeviceArray(host)




def star():
    rng = np.random.default_rng(0)
    fact = rng.random((40, 2))  # non-negative, so that every estimator (NMF too) accepts it
    dim = rng.random((5, 3))
    return NormalizedMatrix.from_matrices([fact, dim], [np.arange(40), rng.integers(0, 5, 40)])


@pytest.fixture
def gpu_input(monkeypatch):
    """A NormalizedMatrix that ``like_input`` takes for GPU input, with a stand-in GPU."""
    X = star()
    real_device_of, real_get_backend = convert.device_of, convert.get_backend
    stand_in = types.SimpleNamespace(from_numpy=DeviceArray)
    monkeypatch.setattr(convert, "device_of",
                        lambda a: "gpu" if a is X else real_device_of(a))
    monkeypatch.setattr(convert, "get_backend",
                        lambda name: stand_in if name == "gpu" else real_get_backend(name))
    return X


def targets(cls):
    rng = np.random.default_rng(1)
    if is_classifier(cls()):
        return (rng.integers(0, 2, 40),)
    if is_regressor(cls()):
        return (rng.standard_normal(40),)
    return ()


def make(cls, **params):
    estimator = cls(strategy="factorized", backend="cpu", **params)
    if "random_state" in estimator.get_params():
        estimator.set_params(random_state=0)
    return estimator


def host(a):
    if isinstance(a, DeviceArray):
        return a.get()
    if isinstance(a, NormalizedMatrix):
        return a.materialize()
    return a


def fitted_arrays(estimator):
    return {name: value for name, value in vars(estimator).items()
            if name.endswith("_") and not name.startswith("_")
            and isinstance(value, (np.ndarray, DeviceArray))}


def assert_on_device(value, name):
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        raise AssertionError(f"{name} is a numpy array")


def assert_on_host(value, name):
    assert not isinstance(value, DeviceArray), f"{name} is a device array"


CLASSES = estimator_classes()
READERS = ("predict", "predict_proba", "predict_log_proba", "decision_function", "transform",
           "score_samples", "score")


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_gpu_input_gives_device_arrays(gpu_input, cls):
    on_device = make(cls).fit(gpu_input, *targets(cls))
    reference = make(cls).fit(star(), *targets(cls))
    arrays = fitted_arrays(on_device)
    assert arrays.keys() == fitted_arrays(reference).keys()
    assert any(isinstance(v, DeviceArray) and v.dtype.kind == "f" for v in arrays.values())
    for name, value in arrays.items():
        if name in HOST_ATTRIBUTES or value.dtype.kind not in "biuf":
            assert isinstance(value, np.ndarray), name
        else:
            assert isinstance(value, DeviceArray), name
        assert_allclose(host(value), getattr(reference, name), err_msg=name)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_results_follow_the_input_after_a_gpu_fit(gpu_input, cls):
    estimator = make(cls).fit(gpu_input, *targets(cls))
    reference = make(cls).fit(star(), *targets(cls))
    attributes = dict(vars(estimator))
    for method in READERS:
        if not hasattr(estimator, method):
            continue
        args = targets(cls) if method == "score" else ()
        expected = getattr(reference, method)(star(), *args)
        on_gpu = getattr(estimator, method)(gpu_input, *args)
        on_cpu = getattr(estimator, method)(star(), *args)
        assert_on_device(on_gpu, method)
        assert_on_host(on_cpu, method)
        assert_allclose(host(on_gpu), host(expected), err_msg=method)
        assert_allclose(host(on_cpu), host(expected), err_msg=method)
    assert vars(estimator) == attributes
    if hasattr(estimator, "inverse_transform"):
        Z = reference.transform(star())
        Z = Z if isinstance(Z, NormalizedMatrix) else np.asarray(Z)
        assert_allclose(host(estimator.inverse_transform(Z)),
                        host(reference.inverse_transform(Z)))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_cupy_arrays_are_read_on_the_host_and_results_return_to_the_device(gpu_input, cls):
    estimator = make(cls).fit(gpu_input, *targets(cls))
    dense = star().materialize()
    for method in READERS:
        if hasattr(estimator, method):
            args = [DeviceArray(y) for y in targets(cls)] if method == "score" else []
            out = getattr(estimator, method)(DeviceArray(dense), *args)
            expected = getattr(estimator, method)(dense, *targets(cls)[:len(args)])
            assert_on_device(out, method)
            assert_allclose(host(out), host(expected), err_msg=method)
    if hasattr(estimator, "inverse_transform"):
        Z = estimator.transform(gpu_input)
        assert isinstance(Z, (DeviceArray, NormalizedMatrix))
        out = estimator.inverse_transform(Z)
        expected = estimator.inverse_transform(Z if isinstance(Z, NormalizedMatrix) else Z.get())
        assert_on_device(out, "inverse_transform")
        assert_allclose(host(out), host(expected))


@pytest.mark.parametrize(
    "cls, method",
    [(cls, method) for cls in CLASSES for method in ("fit_transform", "fit_predict")
     if hasattr(cls, method)],
    ids=lambda p: getattr(p, "__name__", p),
)
def test_fit_and_return_results_on_the_device(gpu_input, cls, method):
    estimator, reference = make(cls), make(cls)
    out = getattr(estimator, method)(gpu_input, *targets(cls))
    expected = getattr(reference, method)(star(), *targets(cls))
    assert_on_device(out, method)
    assert_allclose(host(out), host(expected))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_host_fit_after_a_gpu_fit_gives_numpy_arrays(gpu_input, cls):
    estimator = make(cls).fit(gpu_input, *targets(cls))
    estimator.fit(star(), *targets(cls))
    for name, value in fitted_arrays(estimator).items():
        assert isinstance(value, np.ndarray), name


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_pickled_gpu_fit_predicts_the_same(gpu_input, cls):
    estimator = make(cls).fit(gpu_input, *targets(cls))
    loaded = pickle.loads(pickle.dumps(estimator))
    assert fitted_arrays(loaded).keys() == fitted_arrays(estimator).keys()
    for name, value in fitted_arrays(loaded).items():
        assert type(value) is type(getattr(estimator, name)), name
    method = next(m for m in ("predict", "transform") if hasattr(estimator, m))
    assert_allclose(host(getattr(loaded, method)(star())),
                    host(getattr(estimator, method)(star())))


def test_partial_fit_continues_from_device_statistics(gpu_input):
    scaler = make(sklearn_ilargi.FactorizedStandardScaler)
    scaler.partial_fit(gpu_input)
    scaler.partial_fit(gpu_input)
    reference = make(sklearn_ilargi.FactorizedStandardScaler)
    reference.partial_fit(star())
    reference.partial_fit(star())
    assert isinstance(scaler.mean_, DeviceArray)
    assert_allclose(scaler.mean_.get(), reference.mean_)
    assert_allclose(scaler.var_.get(), reference.var_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_warm_start_continues_from_device_coefficients(gpu_input):
    y = targets(sklearn_ilargi.FactorizedLogisticRegression)
    model = make(sklearn_ilargi.FactorizedLogisticRegression, warm_start=True, max_iter=3)
    reference = make(sklearn_ilargi.FactorizedLogisticRegression, warm_start=True, max_iter=3)
    model.fit(gpu_input, *y).fit(gpu_input, *y)
    reference.fit(star(), *y).fit(star(), *y)
    assert isinstance(model.coef_, DeviceArray)
    assert_allclose(model.coef_.get(), reference.coef_)


def test_like_input_copies_numeric_host_values_to_the_device(gpu_input):
    values = like_input({"a": np.ones(2), "names": np.array(["x"]), "n": 3}, gpu_input)
    assert isinstance(values["a"], DeviceArray)
    assert isinstance(values["names"], np.ndarray) and values["n"] == 3
    device = DeviceArray(np.ones(2))
    assert like_input(device, gpu_input) is device
    assert isinstance(like_input([np.eye(2)], gpu_input)[0], DeviceArray)
    assert isinstance(like_input(sp.csr_matrix(np.eye(2)), gpu_input), DeviceArray)
    assert isinstance(like_input(device, star()), np.ndarray)


def test_a_dataframe_with_device_or_blocks_columns_is_host_data():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"device": ["gpu", "gpu"], "blocks": [1.0, 2.0]})
    assert device_of(frame) == "cpu"
    assert like_input(np.ones(2), frame).__class__ is np.ndarray


def test_set_output_containers_are_built_on_the_host(gpu_input):
    """A DataFrame is host data: ``set_output``'s wrapper gets the host result to build it."""
    pd = pytest.importorskip("pandas")
    scaler = make(sklearn_ilargi.FactorizedStandardScaler).fit(gpu_input)
    scaler.set_output(transform="pandas")
    out = scaler.transform(gpu_input)
    assert isinstance(out, pd.DataFrame)
    assert_allclose(out.to_numpy(), make(sklearn_ilargi.FactorizedStandardScaler).fit(
        star()).transform(star()).materialize())
