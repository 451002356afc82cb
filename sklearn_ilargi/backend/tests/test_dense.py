"""The backends' shared dense code (``backend/_dense.py``) on numpy and on array-api-strict.

On numpy each function must give exactly the numbers, dtype and layout of the numpy expression
it is written for (the CPU backend's hot paths run through it), and the matrix expression it
stands for to rounding. On array-api-strict, a minimal implementation of the standard, the
functions that keep to the standard must run and agree with numpy (skipped where it is not
installed).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_ilargi import config_context
from sklearn_ilargi.backend import _dense
from sklearn_ilargi.backend._array_api import get_namespace

RTOL = {np.float32: 1e-5, np.float64: 1e-12}
SHAPES = [(0, 3), (1, 1), (7, 3), (64, 9)]


def operand(shape, dtype=np.float64, order="C", seed=0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return np.asarray(values, order=order)


def assert_same(got, expected):
    """The same values bit for bit, of the same dtype and shape."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert_array_equal(got, expected, strict=True)


@pytest.fixture(params=[np.float32, np.float64], ids=["f32", "f64"])
def dtype(request):
    return request.param


@pytest.fixture(params=["C", "F"])
def order(request):
    return request.param


# ---------------------------------------------------------------------- the namespace
def test_namespace_of_numpy_arrays_is_array_api_compats():
    xp = get_namespace(np.ones(3))
    assert xp.__name__.endswith("array_api_compat.numpy")
    assert get_namespace(np.ones((2, 2), dtype=np.float32)) is xp
    assert xp.sum is np.sum and xp.einsum is np.einsum  # numpy's own: nothing added


@pytest.mark.parametrize("value", [[1.0, 2.0], sp.csr_matrix(np.eye(2))], ids=["list", "csr"])
def test_namespace_of_a_non_array_is_refused(value):
    with pytest.raises(TypeError, match="not a supported array type"):
        get_namespace(value)


# ---------------------------------------------------------------------- sums
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_sums_are_numpys_own(shape, dtype, order):
    s = operand(shape, dtype, order)
    assert_same(_dense.row_sums(s), s.sum(axis=1))
    assert_same(_dense.column_sums(s), s.sum(axis=0))
    assert_same(_dense.row_sums_of_squares(s), np.einsum("ij,ij->i", s, s))
    assert_allclose(_dense.row_sums_of_squares(s), (s * s).sum(axis=1), rtol=RTOL[dtype])


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_weighted_column_sums(shape, dtype, order):
    s = operand(shape, dtype, order)
    w = operand(shape[0], dtype, seed=1)
    assert_same(_dense.column_sums(s, w), (w[None, :] @ s).ravel())
    assert_allclose(_dense.column_sums(s, w), s.T @ w, rtol=RTOL[dtype], atol=1e-6)


# ---------------------------------------------------------------------- products
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_weighted_gram(shape, dtype, order):
    s = operand(shape, dtype, order)
    positive = np.random.default_rng(2).random(shape[0]).astype(dtype)
    signed = operand(shape[0], dtype, seed=3)
    signed[:1] = -1.5  # a negative weight: no square roots
    assert_same(_dense.weighted_gram(s), s.T @ s)
    root = s * np.sqrt(positive)[:, None]  # one operand twice: BLAS's symmetric product
    assert_same(_dense.weighted_gram(s, positive), root.T @ root)
    assert_same(_dense.weighted_gram(s, signed), s.T @ (s * signed[:, None]))
    for w in (positive, signed):
        assert_allclose(_dense.weighted_gram(s, w), s.T @ np.diag(w) @ s,
                        rtol=RTOL[dtype], atol=1e-5)


def test_weighted_gram_of_mixed_dtypes_promotes():
    s = operand((5, 2), np.float32)
    w = np.random.default_rng(4).random(5)  # float64
    assert _dense.weighted_gram(s, w).dtype == np.float64
    assert _dense.weighted_gram(s, -w).dtype == np.float64


@pytest.mark.parametrize("cells", [0, 1 << 16], ids=["matmul", "numpy.dot"])
def test_dot_is_the_matrix_product(cells, dtype, order):
    """Either side of ``small_product_cells`` (``numpy.dot`` below it, ``@`` above): the
    same bits, for every layout, a column-major matrix times a vector included."""
    a, b = operand((40, 30), dtype, order), operand((30, 20), dtype, order, seed=1)
    v, u = operand(30, dtype, seed=2), operand(40, dtype, seed=3)
    with config_context(small_product_cells=cells):
        assert_same(_dense.dot(a, b), a @ b)
        assert_same(_dense.dot(a, v), a @ v)
        assert_same(_dense.dot(a.T, u), a.T @ u)
        assert_same(_dense.dot(a.T, a), a.T @ a)
        assert_same(_dense.dot(v[None, :], b), v[None, :] @ b)
        assert _dense.dot(a[:, 0], a[:, 1]) == a[:, 0] @ a[:, 1]


@pytest.mark.parametrize("width", [None, 3])
def test_scale_rows_and_columns(width, dtype):
    y = operand((6,) if width is None else (6, width), dtype)
    w = operand(6, dtype, seed=1)
    assert _dense.scale_rows(y, None) is y
    assert_same(_dense.scale_rows(y, w), y * (w if width is None else w[:, None]))
    if width is not None:
        factors = operand(width, dtype, seed=2)
        assert_same(_dense.scale_columns(y, factors), y * factors)


# ---------------------------------------------------------------------- finiteness
@pytest.mark.parametrize("values, finite", [
    (np.array([1.0, -2.0, 3.5]), True),
    (np.array([1.0, np.nan, 3.0]), False),
    (np.array([np.inf, 1.0]), False),
    (np.array([-np.inf, np.inf]), False),
    (np.full(2, np.finfo(np.float64).max), True),  # the sum overflows, the values do not
    (np.full((2, 2), np.finfo(np.float32).max, dtype=np.float32), True),
    (np.zeros((0, 3)), True),
    (np.array([2**62, 2**62], dtype=np.int64), True),
], ids=["finite", "nan", "inf", "both infinities", "overflowing sum", "f32 overflow", "empty",
        "integers"])
def test_all_finite(values, finite):
    with np.errstate(all="raise"):  # and no warning from the sum that overflows
        assert _dense.all_finite(values) is finite


# ---------------------------------------------------------------------- columns
@pytest.mark.parametrize("columns", [[2, 3, 4], [4, 0, 2], [5], []],
                         ids=["consecutive", "scattered", "one", "none"])
def test_add_at_columns_in_place(columns, order):
    start = np.asarray(operand((3, 6)), order=order)
    values = operand((3, len(columns)), seed=1)
    expected = start.copy()
    expected[:, columns] += values
    out = start.copy(order=order)
    assert _dense.add_at_columns(out, np.array(columns, dtype=np.intp), values) is None
    assert_same(out, expected)


def test_consecutive_columns_are_a_slice():
    assert _dense._column_slice(np.array([3, 4, 5])) == slice(3, 6)
    assert isinstance(_dense._column_slice(np.array([3, 5])), np.ndarray)
    assert isinstance(_dense._column_slice(np.array([], dtype=np.intp)), np.ndarray)


# ---------------------------------------------------------------------- any values
finite_matrices = st.integers(0, 12).flatmap(lambda n: st.integers(1, 5).flatmap(
    lambda c: st.tuples(
        arrays(np.float64, (n, c), elements=st.floats(-1e3, 1e3)),
        arrays(np.float64, n, elements=st.floats(-10, 10)),
    )))


@settings(max_examples=50, deadline=None)
@given(finite_matrices)
def test_every_function_is_its_matrix_expression(case):
    s, w = case
    atol = 1e-12 * (1 + 10 * len(s) * np.abs(s).max(initial=0) ** 2)  # rounding of the sums
    for weights in (w, np.abs(w)):
        assert_allclose(_dense.weighted_gram(s, weights), s.T @ np.diag(weights) @ s,
                        rtol=1e-9, atol=atol)
    assert_allclose(_dense.column_sums(s, w), w @ s, rtol=1e-9, atol=atol)
    assert_allclose(_dense.row_sums(s), s @ np.ones(s.shape[1]), rtol=1e-9, atol=atol)
    assert_allclose(_dense.row_sums_of_squares(s), np.diag(s @ s.T), rtol=1e-9, atol=atol)
    assert _dense.all_finite(s)


# ---------------------------------------------------------------------- the standard
def test_the_standards_functions_run_on_array_api_strict():
    """Only what the array API standard defines: ``einsum`` and an index array next to a
    slice, which numpy and CuPy both have, are left out."""
    xs = pytest.importorskip("array_api_strict")
    s_np = operand((6, 3))
    w_np = np.random.default_rng(5).random(6)
    s, w, factors = xs.asarray(s_np), xs.asarray(w_np), xs.asarray([1.0, -2.0, 0.5])
    results = {
        "weighted_gram": (_dense.weighted_gram(s, w), s_np.T @ np.diag(w_np) @ s_np),
        "weighted_gram_signed": (_dense.weighted_gram(s, -w), -(s_np.T @ np.diag(w_np) @ s_np)),
        "column_sums": (_dense.column_sums(s, w), w_np @ s_np),
        "row_sums": (_dense.row_sums(s), s_np.sum(axis=1)),
        "dot": (_dense.dot(s, factors), s_np @ np.array([1.0, -2.0, 0.5])),
        "scale_rows": (_dense.scale_rows(s, w), s_np * w_np[:, None]),
        "scale_columns": (_dense.scale_columns(s, factors), s_np * [1.0, -2.0, 0.5]),
    }
    for name, (got, expected) in results.items():
        assert get_namespace(got) is xs, name
        assert_allclose(np.asarray(got), expected, rtol=1e-12, atol=1e-12, err_msg=name)
    assert _dense.all_finite(s) and not _dense.all_finite(xs.asarray([1.0, xs.nan]))
    out = xs.zeros((6, 5))
    _dense.add_at_columns(out, np.array([1, 2, 3]), s)
    assert_allclose(np.asarray(out)[:, 1:4], s_np)
