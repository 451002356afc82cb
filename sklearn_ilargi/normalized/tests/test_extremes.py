"""The smallest and largest cells of a NormalizedMatrix against those of the reference join."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from numpy.testing import assert_array_equal

from sklearn_ilargi import NormalizedMatrix
from sklearn_ilargi.tests._scenarios import scenarios, sources_as_given

SETTINGS = settings(max_examples=60, deadline=None)


@SETTINGS
@given(scenarios())
def test_extremes_are_those_of_the_join(case):
    nm, T = case
    if T.shape[0] == 0:
        with pytest.raises(ValueError, match="no rows"):
            nm.min(axis=0)
        return
    assert_array_equal(nm.min(axis=0), T.min(axis=0))
    assert_array_equal(nm.max(axis=0), T.max(axis=0))
    if T.size:
        assert nm.min() == T.min() and nm.max() == T.max()
        assert nm.all_finite()


@SETTINGS
@given(scenarios())
def test_extremes_of_a_shifted_matrix_and_of_selected_rows(case):
    """The shift moves every cell (the zeros of missing rows too); a selection of rows leaves
    source rows that no target row reads, which are no cells."""
    nm, T = case
    if T.shape[0] == 0:
        return
    mu = np.random.default_rng(0).standard_normal(T.shape[1])
    assert_array_equal((nm - mu).min(axis=0), (T - mu).min(axis=0))
    assert_array_equal((nm - mu).max(axis=0), (T - mu).max(axis=0))
    rows = np.random.default_rng(1).integers(0, T.shape[0], max(1, T.shape[0] // 3))
    assert_array_equal(nm[rows].min(axis=0), T[rows].min(axis=0))
    assert_array_equal(nm[rows].max(axis=0), T[rows].max(axis=0))


def test_source_rows_that_no_target_row_reads_are_not_cells():
    fact = np.array([[1.0], [2.0], [3.0]])
    dim = np.array([[4.0], [-7.0], [9.0]])  # only the first row is read
    nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(3), [0, 0, 0]])
    assert_array_equal(nm.min(axis=0), [1.0, 4.0])
    assert_array_equal(nm.max(axis=0), [3.0, 4.0])


def test_missing_rows_and_unfilled_columns_hold_zeros():
    fact = np.array([[1.0], [2.0]])
    dim = np.array([[5.0, -3.0]])
    left = NormalizedMatrix.from_matrices([fact, dim], [np.arange(2), [0, -1]])
    assert_array_equal(left.min(axis=0), [1.0, 0.0, -3.0])
    assert_array_equal(left.max(axis=0), [2.0, 5.0, 0.0])
    wide = NormalizedMatrix.from_matrices([fact], [np.arange(2)], n_columns=2)
    assert_array_equal(wide.min(axis=0), [1.0, 0.0])


def test_extremes_of_sparse_sources_count_their_implicit_zeros():
    dim = sp.csr_matrix(([2.0, 3.0, -1.0], ([0, 1, 2], [1, 0, 1])), shape=(10, 3))
    with sources_as_given():
        nm = NormalizedMatrix.from_matrices([np.ones((3, 1)), dim], [np.arange(3), [0, 1, 0]])
    assert sp.issparse(nm.blocks[-1].source)
    assert_array_equal(nm.min(axis=0), [1.0, 0.0, 0.0, 0.0])  # dim row 2 is read by none
    assert_array_equal(nm.max(axis=0), [1.0, 3.0, 2.0, 0.0])


def test_columns_that_blocks_share_are_reduced_on_their_join():
    """Two thin sparse dimensions gathered onto the target's rows fill the same column in
    different rows: the zeros of one are the other's cells."""
    first = sp.csr_matrix(([5.0], ([0], [0])), shape=(8, 1))
    second = sp.csr_matrix(([7.0], ([0], [0])), shape=(8, 1))
    rows_of_first, rows_of_second = [0, -1, 0, -1], [-1, 0, -1, 0]
    with sources_as_given(gathered_values_per_row=4):
        nm = NormalizedMatrix.from_matrices(
            [np.ones((4, 1)), first, second], [np.arange(4), rows_of_first, rows_of_second],
            [[0], [1], [1]])
    assert_array_equal(nm.materialize()[:, 1], [5.0, 7.0, 5.0, 7.0])
    assert_array_equal(nm.min(axis=0), [1.0, 5.0])
    assert_array_equal((nm - np.array([0.0, 6.0])).max(axis=0), [1.0, 1.0])


def test_all_finite_sees_every_source_and_the_shift():
    nm = NormalizedMatrix.from_matrices([np.array([[1.0], [2.0]]), np.array([[-3.0]])],
                                        [np.arange(2), [0, 0]])
    assert nm.all_finite()
    # The constructor checks nothing: blocks with a non-finite value make a non-finite matrix.
    for bad in (np.inf, -np.inf, np.nan):
        blocks = [nm.blocks[0].with_(source=np.array([[1.0], [bad]])), *nm.blocks[1:]]
        assert not NormalizedMatrix(blocks, nm.shape, nm.dtype).all_finite()
        shifted = NormalizedMatrix(nm.blocks, nm.shape, nm.dtype, shift=np.array([0.0, bad]))
        assert not shifted.all_finite()


def test_extremes_of_each_row_are_refused():
    nm = NormalizedMatrix.from_matrices([np.ones((2, 1))], [np.arange(2)])
    with pytest.raises(ValueError, match="axis must be None or 0"):
        nm.min(axis=1)
    with pytest.raises(ValueError, match="axis must be None or 0"):
        nm.max(axis=-1)
