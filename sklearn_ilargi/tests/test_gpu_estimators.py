"""Every exported estimator fitted on the GPU against the same fit on the CPU.

For each estimator class that ``sklearn_ilargi`` exports with a ``backend`` parameter, and for
both strategies, the fit with ``backend="gpu"`` must give the fitted attributes of the fit with
``backend="cpu"`` (closed forms to ~1e-8, iterative solvers to their tolerance). Fitted arrays
and results are numpy arrays for host input and CuPy arrays for input on the GPU (a
NormalizedMatrix moved with ``.to("gpu")``). Needs CuPy and a CUDA device; skipped otherwise.
"""

import numbers

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from sklearn.base import clone, is_classifier, is_regressor

from sklearn_ilargi import NormalizedMatrix
from sklearn_ilargi.backend import gpu_available, to_numpy
from sklearn_ilargi.backend._registry import _gpu_unavailable_reason

from sklearn_ilargi.tests._estimators import estimator_classes
from sklearn_ilargi.tests._scenarios import sources_as_given

if not gpu_available():
    pytest.skip(f"GPU backend unusable: {_gpu_unavailable_reason()}", allow_module_level=True)

import cupy  # noqa: E402

pytestmark = pytest.mark.gpu

# Fitted attributes that describe the run rather than the model.
RUN_ATTRIBUTES = {"decision_", "backend_", "strategy_", "n_iter_"}




CLASSES = estimator_classes()


def scenario(seed=0, *, sparse=False, missing=True, positive=False):
    """A star with a left join: fact (2 columns) + two dimensions, one with misses; with
    ``sparse``, the first dimension is kept CSR (half full, it would be stored dense)."""
    rng = np.random.default_rng(seed)
    n = 200
    draw = (lambda shape: rng.random(shape)) if positive else rng.standard_normal
    fact = draw((n, 2))
    dim1 = draw((12, 3))
    dim2 = draw((7, 2))
    if sparse:
        dim1[rng.random(dim1.shape) < 0.5] = 0
        dim1 = sp.csr_matrix(dim1)
    map1 = rng.integers(0, 12, n)
    map2 = rng.integers(0, 7, n)
    if missing:
        map2[rng.random(n) < 0.2] = -1
    with sources_as_given(dense_storage_density=2.0):
        X = NormalizedMatrix.from_matrices([fact, dim1, dim2], [np.arange(n), map1, map2])
    assert any(sp.issparse(b.source) for b in X.blocks) == sparse
    return X


def fit_arguments(estimator, X, seed=0):
    """``fit`` arguments: a target that depends on ``X`` for supervised estimators."""
    rng = np.random.default_rng(seed)
    if not (is_classifier(estimator) or is_regressor(estimator)):
        return (X,)
    dense = X.materialize() if isinstance(X, NormalizedMatrix) else np.asarray(X)
    dense = dense.toarray() if sp.issparse(dense) else dense
    score = dense @ rng.standard_normal(dense.shape[1]) + 0.1 * rng.standard_normal(len(dense))
    if is_classifier(estimator):
        return (X, (score > np.median(score)).astype(int))
    return (X, score)


def positive_only(cls):
    """Whether the estimator takes non-negative input only (NMF, say)."""
    return cls().__sklearn_tags__().input_tags.positive_only


def host(a):
    """A result as a dense numpy array (joining a NormalizedMatrix that ``transform`` kept)."""
    if isinstance(a, NormalizedMatrix):
        a = a.materialize()
    a = to_numpy(a)
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def make(cls, **params):
    estimator = cls()
    for name, value in (("random_state", 0),):
        if name in estimator.get_params():
            estimator.set_params(**{name: value})
    return estimator.set_params(**params)


def fitted_attributes(estimator):
    return {name: value for name, value in vars(estimator).items()
            if name.endswith("_") and not name.startswith("_") and name not in RUN_ATTRIBUTES}


def assert_same_model(gpu_est, cpu_est):
    gpu_attrs, cpu_attrs = fitted_attributes(gpu_est), fitted_attributes(cpu_est)
    assert gpu_attrs.keys() == cpu_attrs.keys()
    for name, cpu_value in cpu_attrs.items():
        gpu_value = gpu_attrs[name]
        if isinstance(cpu_value, np.ndarray) and cpu_value.dtype.kind in "biuf":
            assert isinstance(gpu_value, np.ndarray), f"{name} is {type(gpu_value)}"
            if cpu_value.dtype.kind in "biu":
                np.testing.assert_array_equal(gpu_value, cpu_value, err_msg=name)
            else:
                assert_allclose(gpu_value, cpu_value, rtol=1e-5, atol=1e-7, err_msg=name)
        elif isinstance(cpu_value, numbers.Real) and not isinstance(cpu_value, bool):
            assert not type(gpu_value).__module__.startswith("cupy"), name
            assert_allclose(float(gpu_value), float(cpu_value), rtol=1e-5, atol=1e-7,
                            err_msg=name)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_gpu_fit_matches_cpu_fit(cls, strategy, sparse):
    X = scenario(sparse=sparse, positive=positive_only(cls))
    cpu = make(cls, backend="cpu", strategy=strategy)
    gpu = make(cls, backend="gpu", strategy=strategy)
    args = fit_arguments(cpu, X)
    cpu.fit(*args)
    gpu.fit(*args)
    if strategy == "factorized" and hasattr(gpu, "backend_"):
        assert gpu.backend_ == "gpu"
    assert_same_model(gpu, cpu)
    for method in ("predict", "transform", "decision_function", "predict_proba"):
        if hasattr(cpu, method):
            assert_allclose(host(getattr(gpu, method)(X)), host(getattr(cpu, method)(X)),
                            rtol=1e-5, atol=1e-7, err_msg=method)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_gpu_fit_on_a_selection_of_rows_matches_cpu_fit(cls):
    """A selection's sources are taller than it: the CPU compacts them, the GPU reads them as
    they are (and K-means sums its moved samples from a selection either way)."""
    rows = np.random.default_rng(6).choice(200, 150, replace=False)
    X = scenario(seed=6, positive=positive_only(cls))[rows]
    cpu = make(cls, backend="cpu", strategy="factorized")
    gpu = make(cls, backend="gpu", strategy="factorized")
    args = fit_arguments(cpu, X)
    assert_same_model(gpu.fit(*args), cpu.fit(*args))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_gpu_fit_on_plain_numpy_input(cls):
    X = scenario(missing=False, positive=positive_only(cls)).materialize()
    cpu = make(cls, backend="cpu")
    gpu = make(cls, backend="gpu")
    args = fit_arguments(cpu, X)
    assert_same_model(gpu.fit(*args), cpu.fit(*args))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_repeated_gpu_fits_transfer_once(cls):
    X = scenario(seed=3, positive=positive_only(cls))
    estimator = make(cls, backend="gpu", strategy="factorized")
    args = fit_arguments(estimator, X)
    estimator.fit(*args)
    device_copy = X.to("gpu")
    clone(estimator).fit(*args)
    assert X.to("gpu") is device_copy


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_gpu_input_keeps_fitted_arrays_on_the_gpu(cls):
    X = scenario(seed=4, positive=positive_only(cls))
    estimator = make(cls, backend="gpu", strategy="factorized")
    args = fit_arguments(estimator, X)
    estimator.fit(X.to("gpu"), *args[1:])
    arrays = [v for v in fitted_attributes(estimator).values()
              if isinstance(v, (np.ndarray, cupy.ndarray)) and v.dtype.kind == "f"]
    assert arrays and all(isinstance(v, cupy.ndarray) for v in arrays)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_results_follow_the_input_after_a_gpu_input_fit(cls):
    X = scenario(seed=5, positive=positive_only(cls))
    gpu = make(cls, backend="gpu", strategy="factorized")
    cpu = make(cls, backend="cpu", strategy="factorized")
    args = fit_arguments(cpu, X)
    gpu.fit(X.to("gpu"), *args[1:])
    cpu.fit(*args)
    for method in ("predict", "transform", "decision_function", "predict_proba"):
        if hasattr(cpu, method):
            expected = host(getattr(cpu, method)(X))
            on_gpu = getattr(gpu, method)(X.to("gpu"))
            on_cpu = getattr(gpu, method)(X)
            assert not isinstance(on_gpu, np.ndarray), method
            assert not isinstance(on_cpu, cupy.ndarray), method
            assert_allclose(host(on_gpu), expected, rtol=1e-5, atol=1e-7, err_msg=method)
            assert_allclose(host(on_cpu), expected, rtol=1e-5, atol=1e-7, err_msg=method)
