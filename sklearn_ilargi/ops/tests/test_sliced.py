"""``T @ x + bias`` a slice of rows at a time: the argmin of each row and the slices themselves
equal the joined matrix's, whatever the slices, the threads and the layout of the sources."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_ilargi import NormalizedMatrix, config_context, ops
from sklearn_ilargi.backend import get_backend
from sklearn_ilargi.tests._scenarios import scenarios

#: Slices of a few rows each, on threads, or the default slices on one thread.
SLICINGS = [dict(slice_working_memory=1e-4, parallel_slice_rows=0),
            dict(parallel_slice_rows=10**9)]


def operands(T, seed, p, *, ties):
    """``x`` and ``bias``; with ``ties``, small integers, so that the products hold exact ties
    (``T`` rounded too), which the argmin breaks by the first column."""
    rng = np.random.default_rng(seed)
    x, bias = rng.standard_normal((T.shape[1], p)), rng.standard_normal(p)
    return (np.round(x), np.round(bias)) if ties else (x, bias)


def expected_argmin(T, x, bias):
    values = T @ x + bias
    return values.argmin(axis=1), values.min(axis=1)


@settings(max_examples=60, deadline=None)
@given(case=scenarios(), seed=st.integers(0, 2**16), p=st.integers(1, 6),
       shift=st.booleans(), slicing=st.sampled_from(SLICINGS))
def test_argmin_of_product_is_the_joined_products(case, seed, p, shift, slicing):
    nm, T = case
    if shift:  # a shifted matrix: products take the shift as a rank-one term
        nm, T = nm + 0.5, T + 0.5
    x, bias = operands(T, seed, p, ties=False)
    with config_context(**slicing):
        columns, smallest = ops.argmin_of_product(nm, x, bias)
    expected_columns, expected_smallest = expected_argmin(T, x, bias)
    assert columns.dtype == np.int32 and columns.shape == (T.shape[0],)
    scale = 1 + np.abs(T).sum(axis=1) * np.abs(x).max(initial=0) + np.abs(bias).max()
    assert_allclose(smallest, expected_smallest, rtol=1e-12, atol=1e-12 * scale.max(initial=1))
    # Rows whose two smallest entries are apart take the same column (rounding picks at ties).
    values = np.sort(T @ x + bias, axis=1)
    apart = values[:, min(1, p - 1)] - values[:, 0] > 1e-9 * scale if p > 1 else \
        np.ones(T.shape[0], bool)
    assert_array_equal(columns[apart], expected_columns[apart])


@pytest.mark.parametrize("slicing", SLICINGS, ids=["slices on threads", "one thread"])
def test_ties_go_to_the_first_column(slicing):
    rng = np.random.default_rng(3)
    fact = rng.integers(-2, 3, (300, 2)).astype(float)
    dim = rng.integers(-2, 3, (7, 3)).astype(float)
    nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(300), rng.integers(0, 7, 300)])
    T = nm.toarray()
    x, bias = operands(T, 4, 5, ties=True)
    with config_context(**slicing):
        columns, smallest = ops.argmin_of_product(nm, x, bias)
    values = T @ x + bias
    assert (values == values.min(axis=1, keepdims=True)).sum(axis=1).max() > 1  # ties, indeed
    assert_array_equal(columns, values.argmin(axis=1))
    assert_array_equal(smallest, values.min(axis=1))


@pytest.mark.parametrize("kind", ["dense C", "dense F", "csr"])
@pytest.mark.parametrize("slicing", SLICINGS, ids=["slices on threads", "one thread"])
def test_one_matrix_of_any_layout(kind, slicing):
    rng = np.random.default_rng(5)
    T = np.where(rng.random((90, 6)) < 0.5, 0.0, rng.standard_normal((90, 6)))
    X = {"dense C": T, "dense F": np.asfortranarray(T), "csr": sp.csr_matrix(T)}[kind]
    x, bias = operands(T, 6, 4, ties=False)
    with config_context(**slicing):
        columns, smallest = ops.argmin_of_matrix_product(get_backend("cpu"), X, x, bias)
        slices = list(ops.matrix_product_slices(get_backend("cpu"), X, x, bias))
    expected_columns, expected_smallest = expected_argmin(T, x, bias)
    assert_array_equal(columns, expected_columns)
    assert_allclose(smallest, expected_smallest, rtol=1e-12, atol=1e-12)
    assert [stop for _, stop, _ in slices][-1] == T.shape[0]


@settings(max_examples=40, deadline=None)
@given(case=scenarios(), seed=st.integers(0, 2**16), p=st.integers(1, 5),
       memory=st.sampled_from([1e-4, 1e-3, 2.0]))
def test_the_slices_are_the_joined_products(case, seed, p, memory):
    nm, T = case
    x, bias = operands(T, seed, p, ties=False)
    expected = (T @ x + bias).T
    with config_context(slice_working_memory=memory):
        stops = []
        for start, stop, values in ops.product_slices(nm, x, bias):
            assert values.shape == (p, stop - start)
            assert_allclose(values, expected[:, start:stop], rtol=1e-12, atol=1e-12)
            stops.append((start, stop))
    # Consecutive slices that cover the rows, and none without rows.
    assert [start for start, _ in stops] == [0, *[stop for _, stop in stops]][:len(stops)]
    assert (stops[-1][1] if stops else 0) == T.shape[0]
    assert bool(stops) == bool(T.shape[0])


def test_slices_fit_the_working_memory():
    with config_context(slice_working_memory=1.0):
        assert ops._sliced.rows_per_slice(8, 8) == 2**20 // (3 * 8 * 8)
    with config_context(slice_working_memory=0.0):
        assert ops._sliced.rows_per_slice(8, 8) == 1


def test_the_whole_product_is_never_held():
    n, p = 200_000, 16
    rng = np.random.default_rng(7)
    fact = rng.standard_normal((n, 2))
    dim = rng.standard_normal((50, 3))
    nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(n), rng.integers(0, 50, n)])
    x, bias = rng.standard_normal((5, p)), rng.standard_normal(p)
    with config_context(slice_working_memory=0.25):
        ops.argmin_of_product(nm, x, bias)  # warm: the slices' row maps are kept on the map
        tracemalloc.start()
        try:
            ops.argmin_of_product(nm, x, bias)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    # The results (an int32 and a float64 per row) and the slices' buffers, not n x p values.
    assert peak < 12 * n + 8 * 2**20 < 8 * n * p


@settings(max_examples=40, deadline=None)
@given(case=scenarios(n_target=30), seed=st.integers(0, 2**16), k=st.integers(1, 4),
       weighted=st.booleans())
def test_group_sums_of_a_selection_of_rows_gather_them(case, seed, k, weighted):
    """A few of the target's rows (each source taller than the selection): their rows are
    gathered and multiplied by the one-hot of their labels."""
    nm, T = case
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, T.shape[0], int(rng.integers(0, 6)))
    labels = rng.integers(0, k, len(rows)).astype(np.int32)
    weights = rng.random(len(rows)) if weighted else None
    got = ops.group_sums(nm[rows], labels, k, weights)
    one_hot = np.eye(k)[labels] * (1.0 if weights is None else weights[:, None])
    assert_allclose(got, T[rows].T @ one_hot, rtol=1e-12, atol=1e-12)
