"""The factorized operations on the GPU against the same operations on the CPU.

Every operation of a NormalizedMatrix runs on random scenarios (inner, left, outer joins,
unions, many-to-many, snowflakes, overlaps; dense and sparse sources; float32 and float64) on
the device copy and on the host, and the two must agree to floating-point tolerance. Needs CuPy
and a CUDA device; skipped otherwise.
"""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from sklearn_ilargi import config_context
from sklearn_ilargi._config import OPTIONS
from sklearn_ilargi.tests._scenarios import build, random_scenario
from sklearn_ilargi.backend import (
    DeviceMemoryWarning,
    call_with_cpu_fallback,
    device_of,
    get_backend,
    gpu_available,
    is_device_out_of_memory,
    like_input,
    to_numpy,
)
from sklearn_ilargi.backend._registry import _gpu_unavailable_reason

if not gpu_available():
    pytest.skip(f"GPU backend unusable: {_gpu_unavailable_reason()}", allow_module_level=True)

import cupy  # noqa: E402  (only once the skip above has not fired)

pytestmark = pytest.mark.gpu

SEEDS = range(8)
TOL = {np.float32: dict(rtol=2e-4, atol=2e-4), np.float64: dict(rtol=1e-9, atol=1e-9)}


def host(a):
    a = to_numpy(a)
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def pair(seed, dtype=np.float64):
    """(CPU matrix, its GPU copy) of one random scenario with at least one row."""
    rng = np.random.default_rng(seed)
    nm = build(random_scenario(rng, n_target=int(rng.integers(1, 60)), dtype=dtype),
               gather_thin=seed % 2 == 1)
    return nm, nm.to("gpu")


def close(gpu_value, cpu_value, dtype=np.float64):
    assert_allclose(host(gpu_value), host(cpu_value), **TOL[dtype])


@pytest.fixture(params=[np.float64, np.float32], ids=["f64", "f32"])
def dtype(request):
    return request.param


SEGMENT_SUM_METHODS = OPTIONS["gpu_segment_sum"].choices


@pytest.fixture(params=SEGMENT_SUM_METHODS)
def segment_sum(request):
    with config_context(gpu_segment_sum=request.param):
        yield request.param


# ---------------------------------------------------------------------- device copies
def test_to_gpu_moves_sources_and_row_maps_and_caches():
    nm, gpu = pair(0)
    assert gpu.device == "gpu" and gpu.backend.name == "gpu"
    assert nm.to("gpu") is gpu
    for block in gpu.blocks:
        assert device_of(block.source) == "gpu"
        if block.row_map.indices is not None:
            assert isinstance(block.row_map.indices, cupy.ndarray)
    back = gpu.to("cpu")
    assert back.device == "cpu"
    close(back.materialize(), nm.materialize())
    assert "_device_copies" not in vars(pickle.loads(pickle.dumps(nm)))


@pytest.mark.parametrize("seed", SEEDS)
def test_materialize(seed, dtype):
    nm, gpu = pair(seed, dtype)
    close(gpu.materialize(), nm.materialize(), dtype)
    sparse = gpu.materialize(sparse=True)
    assert get_backend("gpu").is_sparse(sparse)
    close(sparse, nm.materialize(), dtype)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("width", [None, 1, 3])
def test_matmul_and_rmatmul(seed, width, dtype, segment_sum):
    nm, gpu = pair(seed, dtype)
    rng = np.random.default_rng(100 + seed)
    shape = lambda n: (n,) if width is None else (n, width)  # noqa: E731
    x = rng.standard_normal(shape(nm.shape[1])).astype(dtype)
    y = rng.standard_normal(shape(nm.shape[0])).astype(dtype)
    close(gpu @ cupy.asarray(x), nm @ x, dtype)
    close(gpu @ x, nm @ x, dtype)  # a host operand is moved to the device
    close(gpu.T @ cupy.asarray(y), nm.T @ y, dtype)
    if width is not None:
        close(cupy.asarray(y.T) @ gpu, y.T @ nm, dtype)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_gram_and_sums(seed, weighted, dtype, segment_sum):
    nm, gpu = pair(seed, dtype)
    w = np.random.default_rng(200 + seed).random(nm.shape[0]) if weighted else None
    close(gpu.gram(None if w is None else cupy.asarray(w)), nm.gram(w), dtype)
    close(gpu.T @ gpu, nm.T @ nm, dtype)
    close(gpu.sum(axis=0), nm.sum(axis=0), dtype)
    close(gpu.sum(axis=1), nm.sum(axis=1), dtype)
    close(gpu.mean(axis=0), nm.mean(axis=0), dtype)
    close(gpu.row_norms(squared=True), nm.row_norms(squared=True), dtype)


@pytest.mark.parametrize("seed", SEEDS)
def test_shifted_matrix(seed):
    nm, gpu = pair(seed)
    mu = np.asarray(nm.mean(axis=0))
    centered, centered_gpu = nm - mu, gpu - cupy.asarray(mu)
    x = np.random.default_rng(300 + seed).standard_normal(nm.shape[1])
    close(centered_gpu @ cupy.asarray(x), centered @ x)
    close(centered_gpu.gram(), centered.gram())
    close(centered_gpu.row_norms(squared=True), centered.row_norms(squared=True))
    close(centered_gpu.materialize(), centered.materialize())


@pytest.mark.parametrize("seed", SEEDS)
def test_selection_scaling_and_elementwise(seed):
    nm, gpu = pair(seed)
    rng = np.random.default_rng(400 + seed)
    rows = rng.integers(0, nm.shape[0], 7)
    columns = rng.permutation(nm.shape[1])[: max(1, nm.shape[1] // 2)]
    close(gpu[rows].materialize(), nm[rows].materialize())
    close(gpu[:, columns].materialize(), nm[:, columns].materialize())
    factors = rng.random(nm.shape[1]) + 0.5
    close((gpu * cupy.asarray(factors)).materialize(), (nm * factors).materialize())
    close((gpu * 2.0).materialize(), (nm * 2.0).materialize())
    close((gpu ** 2).materialize(), (nm ** 2).materialize())
    close(abs(gpu).materialize(), abs(nm).materialize())
    close(gpu.apply(np.sin).materialize(), nm.apply(np.sin).materialize())


def test_host_conversion_warns_and_returns_numpy():
    nm, gpu = pair(1)
    from sklearn_ilargi import MaterializationWarning

    with pytest.warns(MaterializationWarning):
        out = np.asarray(gpu)
    assert isinstance(out, np.ndarray)
    close(out, nm.materialize())


# ---------------------------------------------------------------------- segment sums
@pytest.mark.parametrize("seed", SEEDS)
def test_segment_sum_methods_agree(seed):
    nm, gpu = pair(seed)
    y = cupy.asarray(np.random.default_rng(500 + seed).standard_normal((nm.shape[0], 4)))
    results = {}
    for method in SEGMENT_SUM_METHODS:
        with config_context(gpu_segment_sum=method):
            results[method] = host(gpu.T @ y)
    for method, value in results.items():
        assert_allclose(value, results["csr"], rtol=1e-10, atol=1e-10, err_msg=method)


def test_unknown_segment_sum_method_is_refused():
    with pytest.raises(ValueError, match="gpu_segment_sum.*csr"):
        with config_context(gpu_segment_sum="atomics"):
            pass


# ---------------------------------------------------------------------- device and memory
def test_device_queries():
    be = get_backend("gpu")
    assert be.free_memory() > 0
    info = be.device_info()
    assert info["backend"] == "gpu" and info["memory_bytes"] > 0
    be.synchronize()
    be.release_memory()


def test_a_real_out_of_memory_error_is_recognised():
    try:
        cupy.empty(1 << 60, dtype=np.uint8)
    except Exception as exc:  # noqa: BLE001 - the point is which exception it is
        assert is_device_out_of_memory(exc), repr(exc)
    else:
        pytest.fail("allocating an exabyte succeeded")


def test_fallback_after_a_real_out_of_memory_error():
    def on_device():
        return cupy.empty(1 << 60, dtype=np.uint8)

    with pytest.warns(DeviceMemoryWarning):
        assert call_with_cpu_fallback(on_device, lambda: "cpu") == "cpu"


def test_results_come_back_as_numpy_unless_the_input_was_cupy():
    nm, gpu = pair(2)
    value = gpu.sum(axis=0)
    assert isinstance(to_numpy(value), np.ndarray)
    assert isinstance(like_input(value, nm), np.ndarray)
    assert isinstance(like_input(value, gpu), cupy.ndarray)
    assert isinstance(like_input(value, cupy.ones(3)), cupy.ndarray)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert to_numpy(cupy.float64(2.0)) == 2.0
