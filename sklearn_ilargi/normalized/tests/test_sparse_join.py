"""Sparse stays sparse: ``materialize(sparse="auto")``, and selected rows joined alone."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_ilargi import NormalizedMatrix, config_context
from sklearn_ilargi.exceptions import MaterializationWarning
from sklearn_ilargi.tests._scenarios import scenarios, sources_as_given

N_IDS = 100_000  # a dimension of this many one-hot ids is 80 GB dense, 2.4 MB as CSR
N_ROWS = 200_000


def one_hot(codes, width):
    """The CSR one-hot of integer ``codes``."""
    n = len(codes)
    return sp.csr_matrix((np.ones(n), (np.arange(n), codes)), shape=(n, width))


@pytest.fixture(scope="module")
def wide_star():
    """A fact table with a dense column and a left-joined dimension of ``N_IDS`` ids, each
    with one of 7 categories; and the join's rows, as the dimension's row of each."""
    rng = np.random.default_rng(0)
    dim = sp.hstack([sp.identity(N_IDS, format="csr"), one_hot(rng.integers(0, 7, N_IDS), 7)],
                    format="csr")
    keys = rng.integers(0, N_IDS, N_ROWS)
    keys[::10] = -1  # a left join's misses
    fact = rng.standard_normal((N_ROWS, 1))
    X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(N_ROWS), keys])
    assert sp.issparse(X.blocks[1].source)  # kept sparse: the test is about that block
    return X, fact, dim, keys


def expected_rows(fact, dim, keys, rows):
    out = np.zeros((len(rows), 1 + dim.shape[1]))
    out[:, :1] = fact[rows]
    present = keys[rows] >= 0
    out[present, 1:] = dim[keys[rows][present]].toarray()
    return out


def peak_bytes(func):
    """``func()`` and the most memory that it held at once (numpy's and scipy's arrays)."""
    tracemalloc.start()
    try:
        out = func()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_selected_rows_of_a_wide_sparse_dimension_are_joined_alone(wide_star):
    X, fact, dim, keys = wide_star
    rows = np.array([3, 10, N_ROWS - 1])  # row 10 misses the dimension
    limit = 20 * 2**20  # the dimension alone is 80 GB dense

    row, peak = peak_bytes(lambda: X[3])
    assert peak < limit
    assert row.shape == (X.shape[1],) and isinstance(row, np.ndarray)
    assert_array_equal(row, expected_rows(fact, dim, keys, [3])[0])
    for sparse in ("auto", True, False):
        joined, peak = peak_bytes(lambda: X[rows].materialize(sparse=sparse))
        assert peak < limit
        assert sp.issparse(joined) == (sparse is not False)
        dense = joined.toarray() if sp.issparse(joined) else joined
        assert_array_equal(dense, expected_rows(fact, dim, keys, rows))
    shifted, peak = peak_bytes(lambda: (X + 1.0)[rows].materialize())
    assert peak < limit
    assert_array_equal(shifted, expected_rows(fact, dim, keys, rows) + 1.0)


def test_a_wide_sparse_join_is_csr_by_default(wide_star):
    X, fact, dim, keys = wide_star
    joined = X.materialize()
    assert sp.issparse(joined)
    assert joined.shape == X.shape
    assert joined.nnz == N_ROWS + 2 * int((keys >= 0).sum())
    some = np.arange(0, N_ROWS, 9973)
    assert_array_equal(joined[some].toarray(), expected_rows(fact, dim, keys, some))


def small_sparse_star(fact_columns):
    """A dense fact table of ``fact_columns`` columns and a one-hot dimension of 1000 ids."""
    rng = np.random.default_rng(1)
    fact = rng.standard_normal((100, fact_columns))
    with sources_as_given():
        return NormalizedMatrix.from_matrices(
            [fact, sp.identity(1000, format="csr")], [np.arange(100), rng.integers(0, 1000, 100)])


def test_auto_is_csr_where_csr_takes_less_than_half_the_memory():
    narrow, wide_fact = small_sparse_star(2), small_sparse_star(2000)
    assert sp.issparse(narrow.materialize())
    # the dense fact table makes two thirds of the join's cells values: dense is smaller
    assert isinstance(wide_fact.materialize(), np.ndarray)
    with config_context(csr_join_max_share=0.0):
        assert isinstance(narrow.materialize(), np.ndarray)
    with config_context(csr_join_max_share=2.0):  # CSR even where it takes more memory
        assert sp.issparse(wide_fact.materialize())
    # a shift fills every cell, and dense sources join dense
    assert isinstance((narrow - 1.0).materialize(), np.ndarray)
    dense = NormalizedMatrix.from_matrices([np.ones((4, 2)), np.eye(2)],
                                           [np.arange(4), [0, 1, 1, 0]])
    assert isinstance(dense.materialize(), np.ndarray)
    assert sp.issparse(dense.materialize(sparse=True))


def test_the_dense_joins_stay_dense():
    X = small_sparse_star(2)
    expected = X.materialize(sparse=True).toarray()
    assert isinstance(X.toarray(), np.ndarray)
    assert_array_equal(X.toarray(), expected)
    with pytest.warns(MaterializationWarning):
        assert_array_equal(np.asarray(X), expected)


@pytest.mark.parametrize("sparse", ["yes", None, 1, "dense"])
def test_sparse_must_be_auto_or_a_bool(sparse):
    X = small_sparse_star(2)
    with pytest.raises(ValueError, match="sparse must be 'auto', True or False"):
        X.materialize(sparse=sparse)


@settings(max_examples=40, deadline=None)
@given(scenarios())
def test_every_layout_of_the_join_has_the_same_values(case):
    nm, T = case
    for sparse in ("auto", True, False):
        joined = nm.materialize(sparse=sparse)
        assert_allclose(joined.toarray() if sp.issparse(joined) else joined, T,
                        rtol=1e-12, atol=1e-12)
    rows = np.arange(T.shape[0])[::3]
    assert_allclose(nm[rows].materialize(sparse=False), T[rows], rtol=1e-12, atol=1e-12)
