"""``with_shift_in_sources``: the same matrix, its shift moved into its dense sources."""

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_ilargi import NormalizedMatrix
from sklearn_ilargi.normalized._blocks import Block
from sklearn_ilargi.normalized._row_map import RowMap
from sklearn_ilargi.tests._scenarios import scenarios, sources_as_given


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_every_cell_is_the_shifted_one(case):
    nm, T = case
    shift = np.random.default_rng(0).uniform(-1e9, 1e9, T.shape[1])
    moved = nm.with_shift(shift).with_shift_in_sources()
    assert_array_equal(moved.materialize(sparse=False), T + shift)
    # What is left of the shift lies on the columns that no dense block fills (or that a
    # sparse one fills too).
    dense = np.zeros(T.shape[1], dtype=bool)
    for block in nm.blocks:
        dense[block.columns] |= not sp.issparse(block.source)
    for block in nm.blocks:
        dense[block.columns] &= not sp.issparse(block.source)
    if moved.shift is not None:
        assert not moved.shift[dense].any()
    assert_allclose(moved.gram(), (T + shift).T @ (T + shift), rtol=1e-12)


def test_nothing_to_move_gives_the_matrix_itself():
    nm = NormalizedMatrix.from_matrices([np.ones((3, 2))], [np.arange(3)])
    assert nm.with_shift_in_sources() is nm
    with sources_as_given():
        sparse = NormalizedMatrix.from_matrices([sp.identity(50, format="csr")],
                                                [np.arange(50)])
    assert sp.issparse(sparse.blocks[0].source)
    with_shift = sparse.with_shift(np.full(50, 2.0))
    assert with_shift.with_shift_in_sources() is with_shift
    zero = nm.with_shift(np.zeros(2))
    assert zero.with_shift_in_sources() is zero


def hospitals():
    """Two hospitals record a weight; the first one a height too: the second hospital's
    one-column source shares its column with the first's, in the rows the first lacks."""
    rng = np.random.default_rng(0)
    first = 1e9 + rng.standard_normal((20, 2))
    second = 1e9 + rng.standard_normal((20, 1))
    first_rows = np.where(np.arange(30) < 20, np.arange(30), -1)
    second_rows = np.where(np.arange(30) >= 10, np.arange(30) - 10, -1)
    return NormalizedMatrix.from_matrices([first, second], [first_rows, second_rows],
                                          [[0, 1], [0]])


def test_a_thin_source_that_shares_a_column_is_not_gathered():
    """Gathered onto the target's rows, the second hospital's zeros would stand for the
    first one's rows: no shift could go into that source."""
    nm = hospitals()
    assert not any(b.row_map.is_identity for b in nm.blocks)
    T = nm.materialize()
    mean = T.mean(axis=0)
    centered = (nm - mean).with_shift_in_sources()
    assert centered.shift is None
    Xc = T - mean
    assert_allclose(centered.gram(), Xc.T @ Xc, rtol=1e-9)


def test_blocks_that_share_rows_keep_a_rank_one_term():
    """Blocks that overlap in rows (built by hand, as gathered thin sources would) cannot take
    a shift each: that column keeps it as a rank-one term, and every cell stays right."""
    gathered = np.array([[0.0], [0.0], [3.0], [4.0]])  # rows 0, 1 belong to the other block
    other = np.array([[1.0], [2.0]])
    blocks = [Block(gathered, RowMap.identity(4), np.array([0]), 0),
              Block(other, RowMap(np.array([0, 1, -1, -1]), 2), np.array([0]), 1),
              Block(np.array([[5.0], [6.0]]), RowMap(np.array([0, 1, 1, 0]), 2),
                    np.array([1]), 2)]
    nm = NormalizedMatrix(blocks, (4, 2), np.float64).with_shift(np.array([10.0, 20.0]))
    moved = nm.with_shift_in_sources()
    assert_array_equal(moved.shift, [10.0, 0.0])
    assert_array_equal(moved.materialize(), [[11, 25], [12, 26], [13, 26], [14, 25]])
