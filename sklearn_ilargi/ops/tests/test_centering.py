"""Centering without cancellation: ``T - 1 mu^T`` squared exactly, whatever the offsets.

The reference is the joined matrix centered in float64, ``Xc = T - mu``: every cell of a
column ``offset + N(0, 1)`` lies within a factor 2 of its mean, so the subtraction is exact
(Sterbenz), and ``Xc.T W Xc`` is then as precise as float64 gets. The factorized result must
agree to ``rtol=1e-9`` relative to the centered values' own scale (Cauchy-Schwarz bounds entry
``(i, j)`` of the gram by ``sqrt(G_ii G_jj)``), at offsets up to 1e9 times the spread, where
the algebraic ``T.T W T - (sum w) mu mu^T`` keeps no digit.
"""

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from sklearn_ilargi import NormalizedMatrix, ops
from sklearn_ilargi.tests._scenarios import build, random_scenario, reference_matrix

OFFSETS = (0.0, 1e3, 1e6, 1e9)


def with_offsets(scenario, rng):
    """The scenario with every source column moved to ``offset + value`` (the stored values
    of a sparse source), an offset drawn per column."""
    sources, row_maps, column_maps, n_columns = scenario
    moved = []
    for source in sources:
        offsets = rng.choice(OFFSETS, source.shape[1])
        if sp.issparse(source):
            source = source.tocsr(copy=True)
            source.data += offsets[source.indices]
        else:
            source = source + offsets
        moved.append(source)
    return moved, row_maps, column_maps, n_columns


def centered_case(seed, gather_thin, weighted):
    rng = np.random.default_rng(seed)
    scenario = with_offsets(random_scenario(rng, n_target=int(rng.integers(1, 40))), rng)
    nm = build(scenario, gather_thin=gather_thin)
    T = reference_matrix(*scenario)
    weights = rng.random(T.shape[0]) + 0.1 if weighted else None
    w = np.ones(T.shape[0]) if weights is None else weights
    mean = (w @ T) / w.sum()
    return nm, T - mean, mean, weights, w


def sparse_columns(nm):
    """Whether a sparse source fills each column of ``nm``."""
    sparse = np.zeros(nm.shape[1], dtype=bool)
    for block in nm.blocks:
        sparse[block.columns] |= sp.issparse(block.source)
    return sparse


def assert_gram_close(actual, expected, nm=None, mean=None, w=None):
    """Entry ``(i, j)`` within ``1e-9 sqrt(G_ii G_jj)`` of the reference ``G``.

    Given ``nm``, its ``mean`` and weights ``w``: the columns that sparse sources fill keep
    the mean as a rank-one term (as scikit-learn does on sparse input), which is exact to
    ``eps (sum w) |mu_i| |mu_j|``; their entries get that much more room.
    """
    assert actual.shape == expected.shape
    scale = np.sqrt(np.outer(np.diag(expected), np.diag(expected)))
    room = 1e-9 * scale + 1e-300
    if nm is not None:
        sparse = sparse_columns(nm)
        either = sparse[:, None] | sparse[None, :]
        room += either * 8 * np.finfo(float).eps * w.sum() * np.outer(abs(mean), abs(mean))
    np.testing.assert_array_less(np.abs(actual - expected), room)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), gather_thin=st.booleans(), weighted=st.booleans())
def test_centered_gram_equals_the_centered_join_squared(seed, gather_thin, weighted):
    nm, Xc, mean, weights, w = centered_case(seed, gather_thin, weighted)
    assert_gram_close(ops.centered_gram(nm, mean, weights), Xc.T @ (w[:, None] * Xc),
                      nm, mean, w)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), gather_thin=st.booleans(), weighted=st.booleans())
def test_centered_matrix_and_its_squares(seed, gather_thin, weighted):
    nm, Xc, mean, weights, w = centered_case(seed, gather_thin, weighted)
    centered = ops.centered(nm, mean)
    assert_allclose(centered.materialize(sparse=False), Xc, rtol=1e-12, atol=0)
    squares = Xc ** 2
    # A centered entry is known to the rounding of the subtraction that gives it, a few ulps
    # of the uncentered value: a sum of squares is known to the square of that, no better.
    # The row norms keep the mean of the sparse columns as a rank-one term (see the gram).
    eps = np.finfo(float).eps
    floor = Xc.shape[1] * (4 * eps * np.abs(Xc + mean).max(initial=0)) ** 2
    rank_one = 8 * eps * (mean[sparse_columns(nm)] ** 2).sum()
    assert_allclose(ops.row_sums_of_squares(centered), squares.sum(axis=1), rtol=1e-9,
                    atol=floor + rank_one + 1e-300)
    # A column that one block fills keeps its digits; one that a sparse block shares with
    # others keeps the mean as a rank-one term.
    shared = np.zeros(nm.shape[1], dtype=int)
    for block in nm.blocks:
        shared[block.columns] += 1
    rank_one = (sparse_columns(nm) & (shared > 1)) * 8 * eps * w.sum() * mean ** 2
    expected = w @ squares
    np.testing.assert_array_less(
        abs(ops.column_sums_of_squares(centered, weights) - expected),
        1e-9 * abs(expected) + w.sum() * floor + rank_one + 1e-300)
    assert_gram_close(centered.gram(weights), Xc.T @ (w[:, None] * Xc), nm, mean, w)


def left_join(offset=1e7):
    """A fact table and a two-column dimension that a third of the fact rows miss."""
    rng = np.random.default_rng(0)
    fact = offset + rng.standard_normal((30, 2))
    dim = offset + rng.standard_normal((6, 2))
    row_map = rng.integers(0, 6, 30)
    row_map[::3] = -1
    return NormalizedMatrix.from_matrices([fact, dim], [np.arange(30), row_map])


def test_the_rank_one_form_cancels_and_this_one_does_not():
    nm = left_join()
    T = nm.materialize()
    mean = T.mean(axis=0)
    Xc = T - mean
    exact = Xc.T @ Xc
    algebraic = T.T @ T - len(T) * np.outer(mean, mean)
    assert np.abs(algebraic - exact)[0, 0] > 1e-3 * exact[0, 0]  # the digits are gone
    assert_gram_close(ops.centered_gram(nm, mean), exact)


def test_a_shift_cancels_against_the_mean():
    """A shifted matrix centered: its shift is taken off the mean before any source moves.

    Against ``T - mean`` itself: the join of ``nm + 1e9`` would round every cell to 1e9's
    ulp, which the centered sources never see (the center they get, ``1e9 - (mean + 1e9)``,
    is off by that ulp at most, which moves the gram by its square only).
    """
    nm = left_join()
    T = nm.materialize()
    mean = T.mean(axis=0)
    Xc = T - mean
    for shifted, center in ((nm - mean, np.zeros(4)), (nm + 1e9, mean + 1e9)):
        assert_gram_close(ops.centered_gram(shifted, center), Xc.T @ Xc)
        joined = shifted.materialize()
        assert_gram_close(shifted.gram(), joined.T @ joined)
        assert_allclose(ops.row_sums_of_squares(shifted), (joined ** 2).sum(axis=1),
                        rtol=1e-12)


def test_the_missing_rows_get_a_block_of_their_own():
    nm = left_join()
    centered = ops.centered(nm, nm.materialize().mean(axis=0))
    assert centered.shift is None
    assert len(centered.blocks) == len(nm.blocks) + 1
    fill = centered.blocks[-1]
    assert fill.source.shape == (1, 2) and list(fill.columns) == [2, 3]
    assert list(np.flatnonzero(fill.row_map.indices == 0)) == list(range(0, 30, 3))
