"""Centering that keeps the digits: ``T - 1 mu^T`` with the mean inside the dense sources.

``T.T T - n mu mu^T`` cancels every digit of a column whose mean is large against its spread
(a column of 1e7 +- 1 keeps none of its +- 1). Here the mean is subtracted from each dense
source before a product squares it, the rows that a dense source misses get ``-mu`` from a
block of their own, and sparse columns (whose mean is small against their spread) keep the
rank-one correction: see ``NormalizedMatrix.with_shift_in_sources``.
"""

from ._products import _per_group, _row_weights, gram


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

    Each block squares its own source (blocks are disjoint, so each cell is squared once);
    a shift goes into the dense sources first, as in :func:`~sklearn_ilargi.ops.gram`. What
    is left of it (on sparse columns) is added to each stored value before it is squared,
    and the cells that no block stores take its square times their weight, as scikit-learn's
    sparse variance does: a column whose mean is large against its spread keeps its digits
    on sparse sources too.

    Returns
    -------
    array of shape (n_columns,)
    """
    nm = nm.with_shift_in_sources()
    be, shift = nm.backend, nm.shift
    out = be.xp.zeros(nm.shape[1], dtype=nm.dtype)
    stored = None if shift is None else be.xp.zeros(nm.shape[1], dtype=nm.dtype)

    def row_weights(group):
        return _row_weights(be, group[0].row_map, sample_weight, nm.dtype)

    for group, weights in _per_group(nm, row_weights):
        for block in group:
            source = block.source
            if shift is not None:
                source = be.add_to_stored(source, shift[block.columns])
                ones = be.map_values(block.source, be.xp.ones_like)
                stored[block.columns] += be.column_sums(ones, weights)
            squares = be.map_values(source, lambda values: values * values)
            out[block.columns] += be.column_sums(squares, weights)
    if shift is not None:
        total = nm.shape[0] if sample_weight is None else sample_weight.sum()
        out += shift * shift * (total - stored)
    return out
