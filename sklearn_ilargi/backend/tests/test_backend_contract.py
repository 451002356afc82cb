"""The backend contract: every primitive against its definition, on every usable backend.

Each check builds the indicator matrix ``I`` of a row map explicitly (on the host) and compares
the primitive with the matrix expression it stands for. The same checks run on "cpu" and, where
CuPy and a CUDA device are usable, on "gpu" (skipped otherwise, with the reason).
"""

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

import sklearn_ilargi.backend._dense as dense_module
import sklearn_ilargi.backend._numpy as cpu_module
from sklearn_ilargi import config_context
from sklearn_ilargi._config import OPTIONS
from sklearn_ilargi.backend import get_backend, gpu_available, to_numpy
from sklearn_ilargi.backend._registry import _gpu_unavailable_reason
from sklearn_ilargi.normalized._row_map import RowMap

GPU_SKIP = pytest.mark.skipif(
    not gpu_available(), reason=f"GPU backend unusable: {_gpu_unavailable_reason()}"
)
BACKENDS = [
    pytest.param("cpu", id="cpu"),
    pytest.param("gpu", id="gpu", marks=[pytest.mark.gpu, GPU_SKIP]),
]
RTOL = {np.float32: 1e-5, np.float64: 1e-12}

# Row maps (n_source, indices or None for the identity), covering the cases that matter:
# identity, repeated rows, misses, a source no target row uses, every row missing, empty.
ROW_MAPS = {
    "identity": (5, None),
    "repeats": (3, [0, 2, 2, 1, 0, 2]),
    "misses": (4, [3, -1, 0, 0, -1, 3, 1]),
    "unused_rows": (6, [1, 1, -1, 4]),
    "all_missing": (2, [-1, -1, -1]),
    "no_source_rows": (0, [-1, -1]),
    "empty": (3, []),
}


@pytest.fixture(params=BACKENDS)
def be(request):
    return get_backend(request.param)


def make_row_map(be, n_source, indices, *, on_device=False):
    if indices is None:
        return RowMap.identity(n_source)
    indices = np.asarray(indices, dtype=np.int32)
    return RowMap(be.from_numpy(indices) if on_device else indices, n_source)


def indicator(n_source, indices):
    """``I`` as a dense host matrix."""
    if indices is None:
        return np.eye(n_source)
    indices = np.asarray(indices, dtype=np.int64)
    out = np.zeros((len(indices), n_source))
    rows = np.flatnonzero(indices >= 0)
    out[rows, indices[rows]] = 1
    return out


def host(a):
    a = to_numpy(a)
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def operand(n_rows, width, *, dtype=np.float64, sparse=False, seed=0):
    """A host operand: 1-D when ``width`` is None, else 2-D (CSR with ``sparse``)."""
    gen = np.random.default_rng(seed)
    shape = (n_rows,) if width is None else (n_rows, width)
    values = gen.standard_normal(shape).astype(dtype)
    if sparse:
        values[gen.random(shape) < 0.5] = 0
        return sp.csr_matrix(values)
    return values


# ---------------------------------------------------------------------- the contract itself
def _public_functions_of_source(path):
    tree = ast.parse(Path(path).read_text())
    names = {node.name for node in tree.body
             if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")}
    assigned = {target.id for node in tree.body if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    return names | _names_taken_from_dense(tree), assigned


def _names_taken_from_dense(tree):
    """The public names that a module's source imports from ``._dense``."""
    return {alias.asname or alias.name for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module == "_dense"
            for alias in node.names if not alias.name.startswith("_")}


def _cpu_primitives():
    """The CPU backend's public functions: its own and those it takes from ``_dense``."""
    return {name: obj for name, obj in vars(cpu_module).items()
            if inspect.isfunction(obj) and not name.startswith("_")
            and obj.__module__ in (cpu_module.__name__, dense_module.__name__)}


def test_gpu_module_mirrors_every_cpu_primitive():
    """Checked from the source, so it runs without CuPy."""
    cpu_names = set(_cpu_primitives())
    gpu_path = Path(cpu_module.__file__).with_name("_cupy.py")
    gpu_names, gpu_assigned = _public_functions_of_source(gpu_path)
    assert cpu_names - gpu_names == set()
    assert {"name", "xp"} <= gpu_assigned
    assert gpu_names - cpu_names == set()


def test_both_backends_take_the_same_functions_from_dense():
    """A primitive with no sparse case is ``_dense``'s own on both backends; every other
    function of ``_dense`` is the dense case of a primitive that both backends define."""
    taken = {name for name, obj in _cpu_primitives().items()
             if obj.__module__ == dense_module.__name__}
    assert all(getattr(cpu_module, name) is getattr(dense_module, name) for name in taken)
    gpu_tree = ast.parse(Path(cpu_module.__file__).with_name("_cupy.py").read_text())
    assert _names_taken_from_dense(gpu_tree) == taken
    dense_names = {name for name, obj in vars(dense_module).items()
                   if inspect.isfunction(obj) and obj.__module__ == dense_module.__name__
                   and not name.startswith("_")}
    assert dense_names <= set(_cpu_primitives())


def test_gpu_module_signatures_match():
    gpu_path = Path(cpu_module.__file__).with_name("_cupy.py")
    tree = ast.parse(gpu_path.read_text())
    for node in tree.body:
        if (isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
                and hasattr(cpu_module, node.name)):
            cpu_params = list(inspect.signature(getattr(cpu_module, node.name)).parameters)
            gpu_params = [a.arg for a in node.args.args + node.args.kwonlyargs]
            assert gpu_params == cpu_params, node.name


def test_backend_name(be):
    assert be.name in ("cpu", "gpu")
    assert hasattr(be.xp, "zeros") and hasattr(be.xp, "result_type")


# ---------------------------------------------------------------------- transfers
def test_round_trip_dense_and_sparse(be):
    dense = operand(4, 3)
    assert_allclose(host(be.from_numpy(dense)), dense)
    sparse = operand(4, 3, sparse=True)
    moved = be.from_numpy(sparse)
    assert be.is_sparse(moved)
    back = be.to_numpy(moved)
    assert sp.issparse(back)
    assert_allclose(back.toarray(), sparse.toarray())
    assert be.from_numpy(moved) is moved  # already this backend's


def test_asarray_to_dense_as_csr(be):
    values = operand(3, 4)
    assert_allclose(host(be.asarray(values, dtype=np.float32)), values.astype(np.float32))
    assert be.asarray(values, dtype=np.float32).dtype == np.float32
    sparse = be.from_numpy(operand(3, 4, sparse=True))
    assert_allclose(host(be.to_dense(sparse)), host(sparse))
    csr = be.as_csr(be.from_numpy(values), np.float64)
    assert be.is_sparse(csr)
    assert_allclose(host(csr), values)
    empty = be.as_csr((2, 5), np.float32)
    assert empty.shape == (2, 5) and empty.dtype == np.float32 and empty.nnz == 0


def test_all_finite(be):
    values = operand(3, 2)
    assert be.all_finite(be.from_numpy(values))
    values[1, 1] = np.nan
    assert not be.all_finite(be.from_numpy(values))
    sparse = sp.csr_matrix(np.array([[0.0, np.inf], [1.0, 0.0]]))
    assert not be.all_finite(be.from_numpy(sparse))


# ---------------------------------------------------------------------- gathers and scatters
@pytest.mark.parametrize("case", sorted(ROW_MAPS))
@pytest.mark.parametrize("width", [None, 3])
@pytest.mark.parametrize("on_device", [False, True])
def test_gather_rows_is_indicator_product(be, case, width, on_device):
    n_source, indices = ROW_MAPS[case]
    row_map = make_row_map(be, n_source, indices, on_device=on_device)
    z = operand(n_source, width)
    expected = indicator(n_source, indices) @ z
    assert_allclose(host(be.gather_rows(be.from_numpy(z), row_map)), expected)
    buffer = be.xp.full(expected.shape, np.nan)  # a reused buffer: every row is written
    got = be.gather_rows(be.from_numpy(z), row_map, out=buffer)
    assert got is buffer
    assert_allclose(host(got), expected)


@pytest.mark.parametrize("case", sorted(ROW_MAPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gather_columns_is_transposed_indicator_product(be, case, dtype):
    n_source, indices = ROW_MAPS[case]
    row_map = make_row_map(be, n_source, indices)
    zt = operand(3, n_source, dtype=dtype)
    expected = (indicator(n_source, indices) @ zt.T).T
    got = be.gather_columns(be.from_numpy(zt), row_map)
    assert got.shape == expected.shape and got.dtype == dtype
    assert_allclose(host(got), expected)
    buffer = be.xp.full(expected.shape, np.nan, dtype=dtype)  # every column is written
    got = be.gather_columns(be.from_numpy(zt), row_map, out=buffer)
    assert got is buffer
    assert_allclose(host(got), expected)


@pytest.mark.parametrize("case", sorted(ROW_MAPS))
@pytest.mark.parametrize("width", [None, 1, 4])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatter_add_rows_is_transposed_indicator_product(be, case, width, weighted, dtype):
    n_source, indices = ROW_MAPS[case]
    ind = indicator(n_source, indices)
    n_target = ind.shape[0]
    y = operand(n_target, width, dtype=dtype)
    w = np.random.default_rng(1).random(n_target).astype(dtype) if weighted else None
    expected = ind.T @ (y if w is None else (y.T * w).T)
    for method in _segment_sum_methods(be):
        with config_context(gpu_segment_sum=method):
            row_map = make_row_map(be, n_source, indices)
            got = be.scatter_add_rows(be.from_numpy(y), row_map,
                                      None if w is None else be.from_numpy(w))
            assert got.shape == expected.shape, method
            assert_allclose(host(got), expected, rtol=RTOL[dtype], atol=1e-5, err_msg=method)


@pytest.mark.parametrize("case", sorted(ROW_MAPS))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("stored", ["many", "one"])  # a dense result (bincount), or sparse
def test_scatter_add_rows_of_a_sparse_operand(be, case, weighted, stored):
    n_source, indices = ROW_MAPS[case]
    ind = indicator(n_source, indices)
    y = operand(ind.shape[0], 3, sparse=True)
    if stored == "one":
        y = sp.csr_matrix(([2.5], ([ind.shape[0] - 1], [1])), shape=y.shape) if y.shape[0] \
            else y
    w = np.random.default_rng(2).random(ind.shape[0]) if weighted else None
    expected = ind.T @ (y.toarray() if w is None else y.toarray() * w[:, None])
    got = be.scatter_add_rows(be.from_numpy(y), make_row_map(be, n_source, indices),
                              None if w is None else be.from_numpy(w))
    assert_allclose(host(got), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", sorted(ROW_MAPS))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_counts(be, case, weighted, dtype):
    n_source, indices = ROW_MAPS[case]
    ind = indicator(n_source, indices)
    w = np.random.default_rng(3).random(ind.shape[0]) if weighted else None
    expected = ind.T @ (np.ones(ind.shape[0]) if w is None else w)
    row_map = make_row_map(be, n_source, indices)
    for _ in range(2):  # the second call may come from a cache
        got = be.counts(row_map, None if w is None else be.from_numpy(w), dtype)
        assert got.dtype == dtype
        assert_allclose(host(got), expected, rtol=RTOL[dtype])


def test_slices_of_a_map_view_its_positions():
    """The maps of slices of rows (a product's slices) read their np.intp positions from the
    whole map's, not a copy each; a slice outliving its map, or pickled, still gathers."""
    import pickle

    be = get_backend("cpu")
    z = np.arange(20.0).reshape(10, 2)
    row_map = RowMap(np.array([3, -1, 9, 0, 0, 5, -1, 2], dtype=np.int32), 10)
    expected = np.where(row_map.indices[:, None] >= 0, z[row_map.indices], 0.0)
    rows = row_map.rows_between(2, 6)
    assert_array_equal(be.gather_rows(z, rows), expected[2:6])
    assert np.shares_memory(cpu_module._positions(rows), cpu_module._positions(row_map))
    assert not rows._cache
    assert_array_equal(be.gather_rows(z, pickle.loads(pickle.dumps(rows))), expected[2:6])
    del row_map
    assert rows.sliced_from() is None
    assert_array_equal(be.gather_rows(z, rows), expected[2:6])


def test_counts_are_kept_only_where_smaller_than_the_map():
    """A row partition's map over a larger dimension does not keep its counts (as many as
    the dimension's rows, once per partition); a map over a smaller source does."""
    be = get_backend("cpu")
    rng = np.random.default_rng(4)
    for n_source, n_target, kept in ((1000, 50, False), (50, 1000, True)):
        row_map = RowMap(rng.integers(-1, n_source, n_target).astype(np.int32), n_source)
        got = be.counts(row_map)
        assert_array_equal(got, np.bincount(row_map.indices[row_map.indices >= 0],
                                            minlength=n_source))
        assert any(key[0] == "counts" for key in row_map._cache
                   if isinstance(key, tuple)) == kept


@pytest.mark.parametrize("pair", [("identity", "identity"), ("repeats", "repeats"),
                                  ("misses", "misses"), ("repeats", "misses"),
                                  ("misses", "repeats"), ("identity", "unused_rows"),
                                  ("all_missing", "all_missing")])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dense", [False, True])
def test_cooccurrence(be, pair, weighted, dense):
    n_target = {"identity": 5, "repeats": 6, "misses": 7, "unused_rows": 4, "all_missing": 3}
    gen = np.random.default_rng(4)
    maps = []
    for case in pair:
        n_source, indices = ROW_MAPS[case]
        if indices is None:
            indices = list(range(n_source))
        maps.append((n_source, list(indices)))
    # Both maps must cover the same target rows: resample the second onto the first's length.
    n = len(maps[0][1])
    n_b, ind_b = maps[1]
    ind_b = [ind_b[i % len(ind_b)] if ind_b else -1 for i in range(n)] if n else []
    maps[1] = (n_b, ind_b)
    assert n == n_target[pair[0]]
    w = gen.random(n) if weighted else None
    ia, ib = indicator(*maps[0]), indicator(*maps[1])
    expected = ia.T @ (ib if w is None else ib * w[:, None])
    got = be.cooccurrence(make_row_map(be, *maps[0]), make_row_map(be, *maps[1]),
                          None if w is None else be.from_numpy(w), np.float64, dense=dense)
    assert be.is_sparse(got) != dense
    assert got.shape == expected.shape and got.dtype == np.float64
    assert_allclose(host(got), expected, rtol=1e-12)


@pytest.mark.parametrize("case", sorted(ROW_MAPS))
@pytest.mark.parametrize("n_groups", [1, 3, 40])
@pytest.mark.parametrize("weighted", [False, True])
def test_group_counts(be, case, n_groups, weighted):
    n_source, indices = ROW_MAPS[case]
    n = n_source if indices is None else len(indices)
    gen = np.random.default_rng(n_groups)
    labels = gen.integers(0, n_groups, n).astype(np.int32)
    w = gen.random(n) if weighted else None
    one_hot = np.eye(n_groups)[labels].reshape(n, n_groups)
    expected = indicator(n_source, indices).T @ (one_hot if w is None else one_hot * w[:, None])
    got = be.group_counts(make_row_map(be, n_source, indices), be.from_numpy(labels), n_groups,
                          None if w is None else be.from_numpy(w), np.float64)
    assert got.shape == expected.shape
    assert_allclose(host(got), expected, rtol=1e-12)


@pytest.mark.parametrize("case", sorted(ROW_MAPS))
@pytest.mark.parametrize("rows_per_gather", [1, 2, OPTIONS["rows_per_gather"].default])
def test_add_gathered_rows_in_any_slices(be, case, rows_per_gather):
    n_source, indices = ROW_MAPS[case]
    ind = indicator(n_source, indices)
    z = operand(n_source, 3)
    start = operand(ind.shape[0], 3, seed=1)
    out = be.from_numpy(start.copy())
    with config_context(rows_per_gather=rows_per_gather):
        be.add_gathered_rows(out, be.from_numpy(z), make_row_map(be, n_source, indices))
    assert_allclose(host(out), start + ind @ z)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_hot(be, weighted, dtype):
    labels = np.array([2, 0, 0, 1, 2], dtype=np.int32)
    w = np.array([0.5, 1.0, 2.0, 0.0, 3.0]) if weighted else None
    got = be.one_hot(be.from_numpy(labels), 4, None if w is None else be.from_numpy(w), dtype)
    assert be.is_sparse(got) and got.dtype == dtype and got.shape == (5, 4)
    expected = np.eye(4)[labels] * (1.0 if w is None else w[:, None])
    assert_allclose(host(got), expected)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", ["C", "F", "1-D"])
def test_label_sums(be, weighted, dtype, order):
    rng = np.random.default_rng(0)
    labels = np.array([2, 0, 0, 1, 2, 4], dtype=np.int32)  # group 3 is empty
    y = rng.standard_normal((6, 3)).astype(dtype) + 1e6
    y = y[:, 0].copy() if order == "1-D" else np.asarray(y, order=order)
    w = np.array([0.5, 1.0, 2.0, 0.0, 3.0, 1.5]) if weighted else None
    got = be.label_sums(be.from_numpy(y), be.from_numpy(labels), 5,
                        None if w is None else be.from_numpy(w))
    one_hot = np.eye(5)[labels] * (1.0 if w is None else w[:, None])
    assert got.shape == (5,) + y.shape[1:] and got.dtype == dtype
    assert_allclose(host(got), one_hot.T @ y.astype(np.float64), rtol=1e-6 if dtype ==
                    np.float32 else 1e-13)


@pytest.mark.parametrize("missing", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", ["C", "F", "1-D"])
def test_scatters_sum_in_float64_in_the_order_of_the_rows(missing, weighted, dtype, order):
    """The CPU's scatters by row map and by label add each column's (weighted) values in
    float64, in the order of the target rows, as ``np.bincount`` does: the same bits, also
    for float32 operands, whose long sums are rounded once."""
    be = get_backend("cpu")
    rng = np.random.default_rng(1)
    n_source, n_target = 5, 3000
    indices = rng.integers(-1 if missing else 0, n_source, n_target)
    y = (rng.standard_normal((n_target, 3)) * 1e3 + 1e6).astype(dtype)
    y = y[:, 0].copy() if order == "1-D" else np.asarray(y, order=order)
    w = rng.random(n_target) if weighted else None
    labels = rng.integers(0, 4, n_target)
    columns = y[:, None] if y.ndim == 1 else y
    present = indices >= 0

    def bincounts(keys, length, rows=slice(None)):
        sums = [np.bincount(keys, (c if w is None else c * w)[rows], length) for c in columns.T]
        return np.column_stack(sums).astype(np.result_type(dtype, np.float32)).reshape(
            (length,) + y.shape[1:])

    with config_context(column_scatter_max_columns=3):
        scattered = be.scatter_add_rows(y, make_row_map(be, n_source, indices), w)
    assert_array_equal(scattered, bincounts(indices[present], n_source, present))
    assert_array_equal(be.label_sums(y, labels, 4, w), bincounts(labels, 4))


@pytest.mark.parametrize("case", ["repeats", "misses", "unused_rows"])
@pytest.mark.parametrize("weighted", [False, True])
def test_column_scatters_on_threads_equal_one_thread(case, weighted):
    """Long enough (``parallel_slice_rows``), the columns of a scatter run on threads: the
    same sums, bit for bit, as one after the other."""
    be = get_backend("cpu")
    n_source, indices = ROW_MAPS[case]
    rng = np.random.default_rng(0)
    n_target = len(indices)
    y = np.asfortranarray(rng.standard_normal((n_target, 4)) + 1e6)
    w = rng.random(n_target) if weighted else None
    labels = rng.integers(0, 3, n_target)
    results = []
    for rows in (10**9, 0):
        with config_context(parallel_slice_rows=rows):
            results.append((be.scatter_add_rows(y, make_row_map(be, n_source, indices), w),
                            be.label_sums(y, labels, 3, w)))
    for one_thread, threaded in zip(*results):
        assert_array_equal(threaded, one_thread)
    expected = indicator(n_source, indices).T @ (y if w is None else y * w[:, None])
    assert_allclose(results[1][0], expected, rtol=1e-12)


@pytest.mark.parametrize("case", ["repeats", "misses", "unused_rows"])
@pytest.mark.parametrize("settings", [dict(column_scatter_max_columns=0, group_cells_per_row=0),
                                      dict(column_scatter_max_columns=100,
                                           group_cells_per_row=10**6)],
                         ids=["products, sparse counts", "columns, dense counts"])
def test_thresholds_choose_the_path_not_the_result(be, case, settings):
    """Either side of ``column_scatter_max_columns`` and ``group_cells_per_row``: the same sums."""
    n_source, indices = ROW_MAPS[case]
    ind = indicator(n_source, indices)
    y = operand(ind.shape[0], 4)
    labels = np.arange(ind.shape[0], dtype=np.int32) % 3
    row_map = make_row_map(be, n_source, indices)
    with config_context(**settings):
        sums = be.scatter_add_rows(be.from_numpy(y), row_map)
        groups = be.group_counts(row_map, be.from_numpy(labels), 3, None, np.float64)
    assert_allclose(host(sums), ind.T @ y, rtol=1e-12)
    assert be.is_sparse(groups) == (settings["group_cells_per_row"] == 0)
    assert_allclose(host(groups), ind.T @ np.eye(3)[labels], rtol=1e-12)


def test_cooccurrence_of_identity_maps(be):
    a, b = RowMap.identity(4), RowMap.identity(4)
    assert_allclose(host(be.cooccurrence(a, b)), np.eye(4))


@pytest.mark.parametrize("case", sorted(ROW_MAPS))
@pytest.mark.parametrize("sparse", [False, True])
def test_gather_sparse_rows(be, case, sparse):
    n_source, indices = ROW_MAPS[case]
    s = operand(n_source, 3, sparse=sparse)
    dense = s.toarray() if sparse else s
    got = be.gather_sparse_rows(be.from_numpy(s), make_row_map(be, n_source, indices))
    assert be.is_sparse(got)
    assert_allclose(host(got), indicator(n_source, indices) @ dense)


# ---------------------------------------------------------------------- products and sums
MIXES = [("dense", "dense"), ("sparse", "dense"), ("dense", "sparse"), ("sparse", "sparse")]


@pytest.mark.parametrize("kinds", MIXES, ids=lambda k: "@".join(k))
@pytest.mark.parametrize("dtypes", [(np.float64, np.float64), (np.float32, np.float32),
                                    (np.float32, np.float64)], ids=str)
def test_dot_every_mix(be, kinds, dtypes):
    a = operand(5, 4, dtype=dtypes[0], sparse=kinds[0] == "sparse", seed=5)
    b = operand(4, 3, dtype=dtypes[1], sparse=kinds[1] == "sparse", seed=6)
    expected = host(a).astype(np.float64) @ host(b).astype(np.float64)
    got = be.dot(be.from_numpy(a), be.from_numpy(b))
    assert not be.is_sparse(got)
    assert got.dtype == np.result_type(*dtypes)
    assert_allclose(host(got), expected, rtol=1e-5 if np.float32 in dtypes else 1e-12)


@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("rows", [0, 1, 4])
def test_dot_of_a_dense_operand_of_any_layout_and_a_one_hot(be, layout, rows):
    """The transpose of a column-major source times a one-hot: the same sums either way."""
    a = np.asarray(operand(rows, 50, seed=18), order=layout)
    labels = np.arange(50) % 3
    one_hot = sp.csr_matrix((np.ones(50), labels, np.arange(51)), shape=(50, 3))
    got = be.dot(be.from_numpy(a), be.from_numpy(one_hot))
    assert got.shape == (rows, 3) and not be.is_sparse(got)
    assert_allclose(host(got), a @ one_hot.toarray(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_dot_with_vectors_and_transposes(be, sparse):
    s = operand(6, 3, sparse=sparse, seed=7)
    dense = host(s)
    v, u = operand(3, None, seed=8), operand(6, None, seed=9)
    ds = be.from_numpy(s)
    assert_allclose(host(be.dot(ds, be.from_numpy(v))), dense @ v)
    assert_allclose(host(be.dot(ds.T, be.from_numpy(u))), dense.T @ u)
    assert_allclose(host(be.dot(be.from_numpy(u[None, :]), ds)), u[None, :] @ dense)
    assert_allclose(host(be.dot(ds.T, ds)), dense.T @ dense)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_weighted_gram_and_column_sums(be, sparse, weighted):
    s = operand(7, 3, sparse=sparse, seed=10)
    dense = host(s)
    w = np.random.default_rng(11).random(7) if weighted else None
    ds, dw = be.from_numpy(s), None if w is None else be.from_numpy(w)
    ww = np.ones(7) if w is None else w
    assert_allclose(host(be.weighted_gram(ds, dw)), dense.T @ (dense * ww[:, None]),
                    rtol=1e-12)
    assert_allclose(host(be.column_sums(ds, dw)), dense.T @ ww, rtol=1e-12)


@pytest.mark.parametrize("layout", ["C", "F", "rows of F"])
@pytest.mark.parametrize("width", [1, 3, 6])
@pytest.mark.parametrize("weights", [None, "positive", "signed"])
@pytest.mark.parametrize("dots_max_columns", [0, 10**6])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_weighted_gram_of_every_layout(be, layout, width, weights, dots_max_columns, dtype):
    """Row- or column-major, or a slice of rows of a column-major array (contiguous columns
    that are no contiguous array), by BLAS or by a dot product per pair of columns."""
    gen = np.random.default_rng(width)
    values = gen.standard_normal((20, width)).astype(dtype)
    s = {"C": values, "F": np.asfortranarray(values),
         "rows of F": np.asfortranarray(np.vstack([values, values]))[5:25]}[layout]
    w = None if weights is None else gen.random(20) - (0.5 if weights == "signed" else 0)
    ww = np.ones(20) if w is None else w
    dense = np.asarray(s, dtype=np.float64)
    with config_context(gram_column_dots_max_columns=dots_max_columns):
        got = host(be.weighted_gram(be.from_numpy(s), None if w is None else be.from_numpy(w)))
    assert got.shape == (width, width)
    assert_allclose(got, dense.T @ (dense * ww[:, None]), rtol=RTOL[dtype], atol=RTOL[dtype])


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "duplicates"])
@pytest.mark.parametrize("weights", [None, "positive", "signed"])
@pytest.mark.parametrize("densify_ratio", [0.0, 1e9])
@pytest.mark.parametrize("slice_values", [1, 7, 1 << 20])
@pytest.mark.parametrize("parallel_rows", [1, 1 << 30])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sparse_weighted_gram_by_dense_slices(be, fmt, weights, densify_ratio, slice_values,
                                              parallel_rows, dtype):
    """By scipy's sparse product or summed over dense copies of slices of rows (one row, a
    few, all at once; in one range of rows per thread, or one range): the gram of the matrix
    itself, duplicate entries summed."""
    gen = np.random.default_rng(3)
    s = sp.random_array((23, 5), density=0.4, format="coo", rng=gen, dtype=dtype)
    if fmt == "duplicates":  # row 0 holds column 2 twice, and an explicit zero
        csr = s.tocsr()
        s = sp.csr_matrix((np.concatenate([[1.5, -0.5, 0.0], csr.data]).astype(dtype),
                           np.concatenate([[2, 2, 4], csr.indices]),
                           np.concatenate([[0], csr.indptr[1:] + 3])), shape=s.shape)
    else:
        s = s.asformat(fmt)
    dense = s.toarray().astype(np.float64)
    w = None if weights is None else gen.random(23) - (0.5 if weights == "signed" else 0)
    ww = np.ones(23) if w is None else w
    with config_context(sparse_gram_densify_ratio=densify_ratio,
                        sparse_gram_slice_values=slice_values,
                        parallel_slice_rows=parallel_rows):
        got = host(be.weighted_gram(be.from_numpy(s), None if w is None else be.from_numpy(w)))
    assert got.shape == (5, 5)
    assert_allclose(got, dense.T @ (dense * ww[:, None]), rtol=RTOL[dtype], atol=RTOL[dtype])
    if w is None:
        assert_array_equal(got, got.T)


@pytest.mark.parametrize("n_rows", [0, 1, 23])
@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("working_memory", [1e-9, 1e-3, 64.0])
@pytest.mark.parametrize("parallel_rows", [1, 1 << 30])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sum_of_centered_slices_is_the_term_of_the_centered_rows(be, n_rows, layout,
                                                                 working_memory,
                                                                 parallel_rows, dtype):
    """A slice of as many rows as there are columns, a few, or all at once; in one range of
    rows per thread, or one range: the gram of the centered matrix and its product with
    the rows of a second operand (each slice told which rows it holds), next to a mean of
    1e6, and ``s`` left as it was."""
    gen = np.random.default_rng(n_rows)
    values = (gen.standard_normal((n_rows, 4)) + 1e6).astype(dtype)
    s = values if layout == "C" else np.asfortranarray(values)
    mean = values.mean(axis=0, dtype=np.float64).astype(dtype) if n_rows else np.ones(4, dtype)
    R = gen.standard_normal((n_rows, 2))
    ds, dR = be.from_numpy(s), be.from_numpy(R)

    def term(start, stop, centered):
        assert centered.shape == (stop - start, 4)
        return be.xp.concatenate([centered.T @ centered, centered.T @ dR[start:stop]], axis=1)

    with config_context(slice_working_memory=working_memory,
                        parallel_slice_rows=parallel_rows):
        got = host(be.sum_of_centered_slices(ds, be.from_numpy(mean), term))
    C = values.astype(np.float64) - mean
    assert_allclose(got, np.hstack([C.T @ C, C.T @ R]), rtol=RTOL[dtype],
                    atol=RTOL[dtype] * max(n_rows, 1))
    assert_array_equal(host(ds), values)


def test_sparse_gram_densifies_slices_only_where_dense_enough():
    """Dense copies of slices where they multiply at most ``sparse_gram_densify_ratio`` times
    what the sparse product multiplies (about the ratio times the density), never at 0."""
    gen = np.random.default_rng(4)
    half = sp.csr_matrix(sp.random_array((200, 40), density=0.5, rng=gen))
    sparse = sp.csr_matrix(sp.random_array((200, 40), density=0.01, rng=gen))
    with config_context(sparse_gram_densify_ratio=16.0):
        assert cpu_module._densified_slices_pay(half)
        assert not cpu_module._densified_slices_pay(sparse)
        assert not cpu_module._densified_slices_pay(sp.csr_matrix((200, 40)))
    with config_context(sparse_gram_densify_ratio=0.0):
        assert not cpu_module._densified_slices_pay(half)


def test_one_thread_limits_blas_inside_only(be):
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    with be.one_thread():
        if be.name == "cpu":
            assert all(n == 1 for n in blas_threads())
    with be.one_thread(False):
        assert blas_threads() == before
    assert blas_threads() == before


@pytest.mark.parametrize("sparse", [False, True])
def test_row_sums_and_squares(be, sparse):
    s = operand(5, 4, sparse=sparse, seed=12)
    dense = host(s)
    ds = be.from_numpy(s)
    assert_allclose(host(be.row_sums(ds)), dense.sum(axis=1), rtol=1e-12)
    assert_allclose(host(be.row_sums_of_squares(ds)), (dense * dense).sum(axis=1), rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("width", [None, 2])
def test_scale_rows(be, sparse, width):
    if sparse and width is None:
        pytest.skip("a sparse operand is 2-D")
    y = operand(5, width, sparse=sparse, seed=13)
    w = np.random.default_rng(14).random(5)
    got = be.scale_rows(be.from_numpy(y), be.from_numpy(w))
    expected = (host(y).T * w).T
    assert_allclose(host(got), expected)
    assert be.scale_rows(be.from_numpy(y), None) is not None


@pytest.mark.parametrize("sparse", [False, True])
def test_column_operations(be, sparse):
    s = operand(4, 5, sparse=sparse, seed=15)
    dense = host(s)
    ds = be.from_numpy(s)
    columns = np.array([4, 0, 2])
    assert_allclose(host(be.take_columns(ds, columns)), dense[:, columns])
    factors = np.array([1.0, -2.0, 0.5, 3.0, 0.0])
    assert_allclose(host(be.scale_columns(ds, be.from_numpy(factors))), dense * factors)
    squared = be.map_values(ds, np.square)
    assert be.is_sparse(squared) == sparse
    assert_allclose(host(squared), dense**2)
    assert_allclose(host(be.map_values(ds, abs)), np.abs(dense))
    shifted = be.add_to_stored(ds, be.from_numpy(factors))
    assert be.is_sparse(shifted) == sparse
    stored = (dense != 0) if sparse else np.ones_like(dense, dtype=bool)
    assert_allclose(host(shifted), dense + stored * factors)
    assert_allclose(host(ds), dense)  # the operand is unchanged


def test_placement_and_add_at_columns(be):
    columns = np.array([3, 0, 4])
    p = be.placement(columns, 6, np.float64)
    assert be.is_sparse(p)
    expected = np.zeros((3, 6))
    expected[np.arange(3), columns] = 1
    assert_allclose(host(p), expected)
    out = be.from_numpy(np.ones((2, 6)))
    values = operand(2, 3, seed=16)
    be.add_at_columns(out, columns, be.from_numpy(values))
    reference = np.ones((2, 6))
    reference[:, columns] += values
    assert_allclose(host(out), reference)


@pytest.mark.parametrize("shape", [(1, 4), (3, 1), (5, 40)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_argmin_takes_the_first_smallest_entry(be, shape, dtype):
    values = np.round(operand(*shape, dtype=dtype, seed=17))  # ties, and many of them
    values[:, 0] = 2.0  # a column of one value: its first row
    rows, smallest = be.column_argmin(be.from_numpy(values))
    assert host(rows).dtype == np.int32 and host(smallest).dtype == dtype
    assert_array_equal(host(rows), values.argmin(axis=0))
    assert_array_equal(host(smallest), values.min(axis=0))


# ---------------------------------------------------------------------- the device
def test_device_queries(be):
    be.synchronize()
    assert be.free_memory() >= 0
    info = be.device_info()
    assert info["backend"] == be.name and "name" in info
    be.release_memory()


# ---------------------------------------------------------------------- helpers
def _segment_sum_methods(be):
    """Every ``gpu_segment_sum`` setting on the GPU; the CPU backend reads none."""
    option = OPTIONS["gpu_segment_sum"]
    return option.choices if be.name == "gpu" else (option.default,)


def test_map_in_threads_keeps_the_order(be):
    assert be.threads() >= 1
    assert be.map_in_threads(lambda x: x * x, range(7)) == [x * x for x in range(7)]
    assert be.map_in_threads(lambda x: x, []) == []
