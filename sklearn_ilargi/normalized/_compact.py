"""A NormalizedMatrix cut down to the rows of its sources that it reads.

A selection of rows (``X[rows]``, a fold, a partition of a larger table) shares its
sources: a product over it reads every row of every source, and the centering of
``fit_intercept`` copies every source whole. :func:`compacted` copies, per source, only the
rows that the matrix reads, so that everything after it costs the rows kept.
"""

import numpy as np

from ._row_map import RowMap


def compacted(nm):
    """``nm`` with each source that has more rows than ``nm`` holding only the rows that
    its row map reads, renumbered in their order (a map that then reads every row once, in
    order, is the identity); ``nm`` itself where no source has more rows.

    Blocks that share a row map share the new one, as the products group blocks by it.
    """
    be = nm.backend
    maps = {}
    blocks = []
    for block in nm.blocks:
        key = id(block.row_map)
        if key not in maps:
            taller = block.row_map.n_source > block.row_map.n_target
            maps[key] = compacted_map(block.row_map) if taller else (block.row_map, None)
        row_map, read = maps[key]
        source = block.source
        if isinstance(read, slice):  # consecutive rows: a view of a dense source
            source = source[read]
        elif read is not None:
            source = source_rows(be, source, read)
        blocks.append(block if row_map is block.row_map else
                      block.with_(source=source, row_map=row_map))
    if all(new is old for new, old in zip(blocks, nm.blocks)):
        return nm
    return nm._like(blocks)


def source_rows(be, source, rows):
    """The rows ``rows`` (an index array on ``be``) of ``source``, a copy stored as the
    source is (CSR or CSC stays so)."""
    picked = RowMap(rows, source.shape[0], has_missing=False)
    if be.is_sparse(source):
        return be.gather_sparse_rows(source, picked).asformat(source.format)
    return be.gather_rows(source, picked)


def compacted_map(row_map):
    """For a map into a source with more rows than it maps: ``(new map, rows read)``, the
    map into the rows that it reads, and those rows (a slice where they are consecutive)."""
    indices = row_map.indices
    present = indices[indices >= 0] if row_map.has_missing else indices
    read = np.zeros(row_map.n_source, dtype=bool)
    read[present] = True
    n_read = int(np.count_nonzero(read))
    if (n_read == row_map.n_target and not row_map.has_missing
            and bool((np.diff(indices) > 0).all())):
        # Every row read once, in order: the rows read are the map itself.
        consecutive = n_read and int(indices[-1]) - int(indices[0]) == n_read - 1
        rows = slice(int(indices[0]), int(indices[-1]) + 1) if consecutive else indices
        return RowMap.identity(n_read), rows
    rows = np.flatnonzero(read)
    # Each row read, numbered in order: only the entries of the rows read are written (and
    # only their pages of a source much taller than the map are ever touched).
    position = np.empty(row_map.n_source, dtype=indices.dtype)
    position[rows] = np.arange(n_read, dtype=indices.dtype)
    renumbered = position[indices]
    if row_map.has_missing:
        renumbered[indices < 0] = -1
    return RowMap(renumbered, n_read, has_missing=row_map.has_missing), rows


def detached(nm):
    """``nm`` with every row map replaced by one that shares its indices and has nothing
    cached: the helpers that products derive from the maps are then dropped with the copy,
    not kept on ``nm``."""
    maps = {}
    blocks = []
    for block in nm.blocks:
        row_map = block.row_map
        if id(row_map) not in maps:
            maps[id(row_map)] = RowMap(row_map.indices, row_map.n_source,
                                       n_target=row_map.n_target,
                                       has_missing=row_map.has_missing)
        blocks.append(block.with_(row_map=maps[id(row_map)]))
    return nm._like(blocks)
