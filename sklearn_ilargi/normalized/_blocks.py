"""The canonical form: disjoint blocks ``T = sum_b G_b S_b P_b^T``.

Every target cell is covered by at most one block, so no operation has to think about source
overlaps, join types or precedence again.
"""

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from .._config import get_config
from ._storage import storage_layout
from ._row_map import RowMap



@dataclass(frozen=True, eq=False)
class Block:
    """One source's contribution: ``source`` rows gathered by ``row_map`` into ``columns``.

    Attributes
    ----------
    source : ndarray or sparse matrix of shape (n_b, c_b)
    row_map : RowMap
        Target row -> row of ``source`` (or ``-1``).
    columns : ndarray of int of shape (c_b,)
        Target column of each column of ``source``; no repeats.
    origin : int
        Index of the user's source this block was cut from (the first one, for a block of
        gathered sources, see :func:`gather_thin_sources`).
    """

    source: object
    row_map: object
    columns: np.ndarray
    origin: int

    @property
    def shape(self):
        return self.source.shape

    def with_(self, **changes):
        return replace(self, **changes)


def make_blocks(sources, row_maps, column_maps, backend):
    """Cut the sources into disjoint blocks; the first source with a row wins a shared cell.

    A source's columns that no earlier source also fills form one block with the source's own
    row map (and no copy when every column is used, in order). Columns that earlier sources fill
    too are grouped by *which* earlier sources those are; each group becomes a block whose row
    map is ``-1`` wherever one of them has a row.
    """
    fillers = {}  # target column -> indices of the sources that fill it, in order
    blocks = []
    for k, (source, row_map, column_map) in enumerate(zip(sources, row_maps, column_maps)):
        groups = {}
        for j in np.flatnonzero(column_map >= 0):
            groups.setdefault(tuple(fillers.get(column_map[j], ())), []).append(j)
        for j in np.flatnonzero(column_map >= 0):
            fillers.setdefault(column_map[j], []).append(k)
        for earlier, own_columns in groups.items():
            block_map = row_map
            if earlier:
                hidden = np.zeros(row_map.n_target, dtype=bool)
                for e in earlier:
                    hidden |= row_maps[e].present()
                block_map = row_map.mask(hidden)
                if not block_map.present().any():
                    continue
            own_columns = np.asarray(own_columns)
            whole = len(own_columns) == source.shape[1]  # in order, since j ascends
            block_source = source if whole else backend.take_columns(source, own_columns)
            blocks.append(Block(block_source, block_map, column_map[own_columns], k))
    return blocks


def gather_thin_sources(blocks, n_target, backend):
    """Gather the sources that hold no more values joined than a gather moves.

    A factorized product with a source costs a product over its values plus a gather (or
    scatter) of the target's rows. Two kinds of dimension cost no more, and are small, once
    gathered, so they are gathered once onto the identity map (with the fact table's map,
    where there is one), each kind into one block:

    - sparse sources whose rows, gathered, hold fewer than ``gathered_values_per_row`` values
      per target row (a setting) (all the blocks of their row map sparse): added into one CSR block;
    - dense sources of one column alone on their row map, whose column no other dense block
      fills: side by side in one dense block.

    One product then replaces a product, a gather and a scatter per source. Blocks are
    disjoint, so adding gathered sources places each value in its own cell.

    Returns
    -------
    list of Block
        ``blocks`` with the thin ones replaced by those blocks, each where its first source
        was.
    """
    values_per_row = get_config()["gathered_values_per_row"]
    if not values_per_row:
        return blocks
    groups = {}
    for block in blocks:
        groups.setdefault(id(block.row_map), []).append(block)
    sparse, dense = [], []
    for group in groups.values():
        row_map = group[0].row_map
        if row_map.is_identity:
            continue
        if all(sp.issparse(b.source) for b in group):
            present = row_map.indices[row_map.indices >= 0] if row_map.has_missing else \
                row_map.indices
            values = sum(int(np.diff(b.source.indptr)[present].sum()) for b in group)
            if values < values_per_row * n_target:
                sparse.extend(group)
        elif len(group) == 1 and group[0].source.shape[1] == 1:
            dense.extend(group)
    dense = _sharing_no_dense_column(dense, blocks)
    identity = next((b.row_map for b in blocks if b.row_map.is_identity),
                    RowMap.identity(n_target))
    merged = {}
    if sparse:
        merged[id(sparse[0])] = _added_gathered(sparse, identity, backend)
    if dense:
        merged[id(dense[0])] = _stacked_gathered(dense, identity, backend)
    thin = {id(b) for b in sparse + dense}
    return [merged.get(id(b), b) for b in blocks if id(b) not in thin or id(b) in merged]


def _sharing_no_dense_column(candidates, blocks):
    """The one-column dense ``candidates`` whose column no other dense block fills.

    Gathered, such a block's zeros would stand for the other block's rows too: a shift added
    into its source (see ``_shift.py``) would land there as well.
    """
    stacked = {id(b) for b in candidates}
    taken = {int(c) for b in blocks if id(b) not in stacked and not sp.issparse(b.source)
             for c in b.columns}
    return [b for b in candidates if int(b.columns[0]) not in taken]


def _added_gathered(blocks, identity, backend):
    """One CSR block of the sparse ``blocks`` gathered (they may share target columns, in
    different rows, so they are added, not stacked)."""
    columns = np.unique(np.concatenate([b.columns for b in blocks]))
    dtype = blocks[0].source.dtype
    source = sum(backend.gather_sparse_rows(b.source, b.row_map)
                 @ backend.placement(np.searchsorted(columns, b.columns), len(columns), dtype)
                 for b in blocks).tocsr()
    source.sort_indices()
    return Block(source, identity, columns, blocks[0].origin)


def _stacked_gathered(blocks, identity, backend):
    """One dense block of the one-column ``blocks`` gathered, side by side (added where two
    fill the same target column, in different rows)."""
    columns = np.unique(np.concatenate([b.columns for b in blocks]))
    source = np.zeros((identity.n_target, len(columns)), dtype=blocks[0].source.dtype)
    for b in blocks:
        source[:, np.searchsorted(columns, b.columns[0])] += \
            backend.gather_rows(b.source[:, 0], b.row_map)
    return Block(storage_layout(source, is_fact=True), identity, columns, blocks[0].origin)

