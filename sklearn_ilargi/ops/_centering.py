"""Centering that keeps the digits: ``T - 1 mu^T`` with the mean inside the dense sources.

``T.T T - n mu mu^T`` cancels every digit of a column whose mean is large against its spread
(a column of 1e7 +- 1 keeps none of its +- 1). Here the mean is subtracted from each dense
source before a product squares it, the rows that a dense source misses get ``-mu`` from a
block of their own, and sparse columns (whose mean is small against their spread) keep the
rank-one correction: see ``NormalizedMatrix.with_shift_in_sources``.
"""

import numpy as np

from ._products import _per_group, _row_weights, column_sums, gram


def centered(nm, mean):
    """``T - 1 mean^T``, its dense sources centered (copies of them).

    Parameters
    ----------
    nm : NormalizedMatrix
    mean : array of shape (n_columns,)
        The center of each column, on the host or on ``nm``'s backend. A shift of ``nm``
        cancels against it before any source is touched.

    Returns
    -------
    NormalizedMatrix
        Equal to ``nm - mean`` in every cell; its products keep the digits of the centered
        values.
    """
    mean = nm.backend.asarray(mean, dtype=nm.dtype)
    shift = -mean if nm.shift is None else nm.shift - mean
    return nm.with_shift(shift).with_shift_in_sources()


def centered_gram(nm, mean, sample_weight=None):
    """``(T - 1 mean^T).T @ diag(w) @ (T - 1 mean^T)`` as a dense (c_T, c_T) array.

    Each dense block's source is centered by its columns' mean before the product squares
    it (``S_b - 1 mu_b^T``, one copy of each dense source, the fact table's included), and
    the cells of the rows it misses (``-mu``) form a block of their own, so the gram is the
    ordinary factorized one (:func:`~sklearn_ilargi.ops.gram`) of exactly centered values.
    Sparse blocks are not centered, which would fill them: their columns take the rank-one
    correction, whose loss is negligible where the mean is small against the spread (a
    one-hot's), and is scikit-learn's own on sparse input.

    Parameters
    ----------
    nm : NormalizedMatrix
    mean : array of shape (n_columns,)
    sample_weight : array of shape (n_rows,), optional

    Returns
    -------
    array of shape (n_columns, n_columns)
    """
    return gram(centered(nm, mean), sample_weight)


def column_sums_of_squares(nm, sample_weight=None):
    """``(T * T).T @ w`` (``w`` defaults to ones): each column's (weighted) sum of squares.

    Each block squares its own source (a cell that several blocks fill is one block's value
    and the others' zeros, so the squares add up); a shift goes into the dense sources first,
    as in :func:`~sklearn_ilargi.ops.gram`. What is left of it, on a column that one block
    fills (a sparse one), is added to each stored value before it is squared, and the cells
    that the block does not store take its square times their weight, as scikit-learn's
    sparse variance does: such a column keeps its digits when its mean is large against its
    spread. On a column that several blocks fill, the rest of the shift adds
    ``2 shift * (T^T w) + (sum w) shift**2``.

    Returns
    -------
    array of shape (n_columns,)
    """
    nm = nm.with_shift_in_sources()
    be = nm.backend
    out = be.xp.zeros(nm.shape[1], dtype=nm.dtype)
    total = nm.shape[0] if sample_weight is None else sample_weight.sum()
    per_cell, rank_one = _split_shift(nm)

    def row_weights(group):
        return _row_weights(be, group[0].row_map, sample_weight, nm.dtype)

    stored = None if per_cell is None else be.xp.zeros(nm.shape[1], dtype=nm.dtype)
    for group, weights in _per_group(nm, row_weights):
        for block in group:
            source = block.source
            if per_cell is not None:
                source = be.add_to_stored(source, per_cell[block.columns])
                ones = be.map_values(block.source, be.xp.ones_like)
                stored[block.columns] += be.column_sums(ones, weights)
            squares = be.map_values(source, lambda values: values * values)
            out[block.columns] += be.column_sums(squares, weights)
    if per_cell is not None:
        # The weight of the cells that no block stores: a difference of two sums of the same
        # weights, whose rounding (times the shift squared) must not pass for cells.
        unstored = total - stored
        rounding = nm.shape[0] * be.xp.finfo(nm.dtype).eps * total
        out += per_cell * per_cell * be.xp.where(unstored > rounding, unstored, 0)
    if rank_one is not None:
        out += 2 * rank_one * column_sums(nm.with_shift(None), sample_weight)
        out += total * rank_one * rank_one
    return out


def _split_shift(nm):
    """``nm``'s shift as (the part on columns that one block fills, the rest), each None where
    it is zero."""
    if nm.shift is None:
        return None, None
    blocks_per_column = np.zeros(nm.shape[1], dtype=np.int64)
    for block in nm.blocks:
        blocks_per_column[block.columns] += 1
    single = nm.backend.from_numpy(blocks_per_column == 1)
    per_cell = nm.backend.xp.where(single, nm.shift, 0)
    rank_one = nm.shift - per_cell
    return (per_cell if bool(per_cell.any()) else None,
            rank_one if bool(rank_one.any()) else None)
