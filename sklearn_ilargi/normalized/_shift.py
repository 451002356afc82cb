"""A shift moved into the dense sources: the same matrix, whose squares keep their digits.

The gram of ``T + 1 v^T`` by its rank-one terms, ``T^T T + v (1^T T) + (T^T 1) v^T + n v v^T``,
cancels every digit of a column whose shift is large against its spread: centering a column of
1e7 +- 1 by its mean that way leaves nothing of the +- 1. Added into each dense source instead
(``S_b + 1 v_b^T``, on the source's own rows), the shift is part of the values that the
products then square, and nothing cancels.

A dense block's source reaches only the target rows its row map reads; a cell of a row it
misses (a ``-1`` of its row map: left and outer joins, unions, overlapping sources masked
where an earlier one has a row) is 0 plus the shift. Those cells go to one more block per
pattern of missing rows: a source of one row holding the shift of those columns, read by
exactly the rows that no dense block of the columns covers. Blocks stay disjoint, so every
product on the result is the ordinary factorized one.

Sparse sources keep the shift as a rank-one term: added in, it would fill every cell. A sparse
column (a one-hot, say) has a mean that is small against its spread, which is where the
rank-one correction loses nothing that matters; scikit-learn centers sparse input the same
way. So does a column that a sparse block fills too (overlapping sources of both kinds), and
one whose dense blocks are not disjoint in rows (a block of gathered thin sources, whose
zeros stand for the rows of another block): their cells cannot take the shift block by block.

The copies cost one pass over the dense sources and their memory, the fact table's included,
for each matrix moved this way.
"""

import numpy as np

from ._row_map import RowMap


def shift_into_sources(blocks, shift, backend):
    """The blocks with ``shift`` added into their dense sources, and the shift left over.

    Parameters
    ----------
    blocks : list of Block
        Disjoint blocks.
    shift : array of shape (n_columns,)
        On the blocks' backend.
    backend : module
        The blocks' backend.

    Returns
    -------
    blocks : list of Block
        ``blocks`` itself when no dense source takes any shift; else the blocks in order, each
        dense one with the shift of its columns added into a copy of its source, followed by
        one block per pattern of missing rows that holds the shift of those cells.
    residual : array of shape (n_columns,) or None
        The shift of the columns that it could not go into (None where that is all zero):
        those that no dense block fills, that a sparse block fills too, or whose dense blocks
        share rows. It stays a rank-one term.
    """
    values = np.asarray(backend.to_numpy(shift))
    groups = _columns_by_dense_blocks(blocks, values, backend)
    absorbed = np.zeros(len(values), dtype=bool)
    fills = {}
    for positions, columns in groups.items():
        covering = [blocks[p] for p in positions]
        if len(covering) > 1 and not _disjoint(covering, backend):
            continue  # zero cells that stand for another block's rows: keep the rank-one term
        absorbed[columns] = True
        missing = _missing_rows(covering)
        if missing is not None:
            key = frozenset(id(b.row_map) for b in covering)
            fills.setdefault(key, (missing, covering[-1], []))[2].extend(columns)
    if not absorbed.any():
        return blocks, shift
    out = [_with_shift(b, values, absorbed, backend) for b in blocks]
    out += [_fill_block(template, missing, np.sort(columns), values, backend)
            for missing, template, columns in fills.values()]
    residual = None
    if values[~absorbed].any():
        residual = shift.copy()
        residual[np.flatnonzero(absorbed)] = 0
    return out, residual


def _columns_by_dense_blocks(blocks, values, backend):
    """The target columns of a nonzero shift that only dense blocks fill, grouped by those
    blocks (a tuple of positions in ``blocks``).

    A column that a sparse block fills too keeps its shift as a rank-one term: the sparse
    block's cells could not take it.
    """
    fillers, sparse = {}, np.zeros(len(values), dtype=bool)
    for position, block in enumerate(blocks):
        shifted = block.columns[values[block.columns] != 0]
        if backend.is_sparse(block.source):
            sparse[shifted] = True  # a mask, not a set: one-hot blocks have many columns
            continue
        for column in shifted.tolist():
            fillers.setdefault(column, []).append(position)
    groups = {}
    for column, positions in fillers.items():
        if not sparse[column]:
            groups.setdefault(tuple(positions), []).append(column)
    return groups


def _disjoint(blocks, backend):
    """Whether no target row reads more than one of ``blocks``.

    Blocks cut from overlapping sources are (a later one is masked where an earlier one has
    a row); a block of gathered thin sources is not: its zeros stand for the rows of the
    sources it does not hold.
    """
    xp = backend.xp
    readers = 0
    for block in blocks:
        row_map = block.row_map
        if row_map.is_identity:
            readers = readers + xp.ones(row_map.n_target, dtype=np.int8)
        else:
            readers = readers + (row_map.indices >= 0).astype(np.int8)
    return int(readers.max()) <= 1 if blocks[0].row_map.n_target else True


def _missing_rows(blocks):
    """The mask of the target rows that none of the disjoint ``blocks`` reads, or None."""
    if any(not b.row_map.has_missing for b in blocks):
        return None
    missing = blocks[0].row_map.indices < 0
    for block in blocks[1:]:
        missing &= block.row_map.indices < 0
    return missing if bool(missing.any()) else None


def _with_shift(block, values, absorbed, backend):
    """``block`` with the absorbed shift of its columns added into a copy of its source."""
    if backend.is_sparse(block.source) or not absorbed[block.columns].any():
        return block
    own = np.where(absorbed[block.columns], values[block.columns], 0)
    return block.with_(source=block.source + backend.asarray(own, dtype=block.source.dtype))


def _fill_block(template, missing, columns, values, backend):
    """A block whose one source row, the shift of ``columns``, is read by the ``missing``
    rows."""
    xp = backend.xp
    source = backend.asarray(values[columns][None, :], dtype=template.source.dtype)
    indices = xp.where(missing, 0, -1).astype(np.int32)
    row_map = RowMap(indices, 1, has_missing=not bool(missing.all()))
    return template.with_(source=source, row_map=row_map, columns=columns)
