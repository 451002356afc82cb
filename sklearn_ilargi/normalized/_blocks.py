"""The canonical form: disjoint blocks ``T = sum_b G_b S_b P_b^T``.

Every target cell is covered by at most one block, so no operation has to think about source
overlaps, join types or precedence again.
"""

from dataclasses import dataclass, replace

import numpy as np


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
        Index of the user's source this block was cut from.
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
