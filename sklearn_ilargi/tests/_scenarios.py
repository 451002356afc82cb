"""Random integration scenarios and a reference join written independently of the library.

``random_scenario`` draws sources, row maps and column maps covering inner, left and full outer
joins, unions, many-to-many fan-out, snowflake chains, overlapping and unused columns, dense and
sparse sources. ``reference_matrix`` builds ``T`` cell by cell from the definition: the first
source (in order) that has a row for the target row and maps a column to the target column
gives the value; otherwise 0.
"""

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st

from sklearn_ilargi import NormalizedMatrix, config_context
from sklearn_ilargi._config import OPTIONS

JOIN_KINDS = ("fact", "inner", "left", "many_to_many", "union", "snowflake")


def random_source(rng, n_rows, n_columns, *, sparse, dtype):
    values = rng.standard_normal((n_rows, n_columns)).astype(dtype)
    if sparse:
        values[rng.random(values.shape) < 0.9] = 0  # mostly below 1/6 full: stays sparse
        return sp.csr_matrix(values)
    return values


def random_row_map(rng, kind, n_target, n_source, *, slot=None):
    """A row map of ``n_target`` entries into ``n_source`` rows, for one join kind."""
    if kind == "fact":
        return np.arange(n_target)
    if n_source == 0:
        return np.full(n_target, -1)
    indices = rng.integers(0, n_source, n_target)
    if kind == "left":
        indices[rng.random(n_target) < 0.3] = -1
    elif kind == "union":
        start, stop = slot
        outside = np.ones(n_target, dtype=bool)
        outside[start:stop] = False
        indices[outside] = -1
    elif kind == "snowflake":
        # target -> middle table -> this source, composed; misses on either level.
        n_middle = max(1, n_source * 2)
        outer = rng.integers(0, n_middle, n_target)
        outer[rng.random(n_target) < 0.15] = -1
        inner = rng.integers(0, n_source, n_middle)
        inner[rng.random(n_middle) < 0.15] = -1
        indices = np.where(outer >= 0, inner[np.maximum(outer, 0)], -1)
    return indices


def random_scenario(rng, *, n_sources=None, n_target=None, dtype=np.float64, sparse=None,
                    overlap=True):
    """Sources, row maps, column maps and the target width of one random scenario."""
    n_sources = n_sources or int(rng.integers(1, 5))
    n_target = int(rng.integers(0, 40)) if n_target is None else n_target
    kinds = [str(rng.choice(JOIN_KINDS)) for _ in range(n_sources)]
    bounds = np.sort(rng.integers(0, n_target + 1, n_sources + 1))
    sources, row_maps, column_maps = [], [], []
    next_column = 0
    for k, kind in enumerate(kinds):
        n_rows = n_target if kind == "fact" else int(rng.integers(0 if kind == "union" else 1, 8))
        n_columns = int(rng.integers(1, 5))
        is_sparse = bool(rng.random() < 0.35) if sparse is None else sparse
        sources.append(random_source(rng, n_rows, n_columns, sparse=is_sparse, dtype=dtype))
        row_maps.append(random_row_map(rng, kind, n_target, n_rows,
                                       slot=(bounds[k], bounds[k + 1])))
        column_map = np.arange(next_column, next_column + n_columns)
        if overlap and next_column and rng.random() < 0.5:
            shared = rng.random(n_columns) < 0.5
            column_map[shared] = rng.choice(next_column, int(shared.sum()))
            # A source fills each target column at most once.
            _, first = np.unique(column_map, return_index=True)
            repeated = np.setdiff1d(np.arange(n_columns), first)
            column_map[repeated] = next_column + n_columns + np.arange(len(repeated))
        column_map[rng.random(n_columns) < 0.15] = -1
        column_maps.append(column_map)
        next_column = max(next_column, int(column_map.max()) + 1)
    n_columns = next_column + int(rng.integers(0, 2))  # sometimes an empty last column
    return sources, row_maps, column_maps, n_columns


def reference_matrix(sources, row_maps, column_maps, n_columns, dtype=np.float64):
    """``T`` by its definition, one cell at a time."""
    n_target = len(row_maps[0])
    dense = [s.toarray() if sp.issparse(s) else np.asarray(s) for s in sources]
    out = np.zeros((n_target, n_columns), dtype=dtype)
    for i in range(n_target):
        for c in range(n_columns):
            for source, row_map, column_map in zip(dense, row_maps, column_maps):
                j = np.flatnonzero(column_map == c)
                if row_map[i] >= 0 and j.size:
                    out[i, c] = source[row_map[i], j[0]]
                    break
    return out


def sources_as_given(**settings):
    """A context in which matrices keep their sparse sources sparse and factorized, as given.

    By default a small sparse source is stored dense (``dense_storage_max_cells``) and thin
    ones gathered onto the target's rows (``gathered_values_per_row``); the tests' sources are
    small, and would then not exercise the sparse paths. ``settings`` adds or overrides
    settings (e.g. ``gathered_values_per_row`` to gather thin sources after all).
    """
    return config_context(**{"dense_storage_max_cells": 0, "gathered_values_per_row": 0,
                             **settings})


def build(scenario, *, gather_thin=False):
    """The scenario's NormalizedMatrix, its sparse sources kept sparse (see
    :func:`sources_as_given`); ``gather_thin`` stores its thin sparse sources gathered
    (``gathered_values_per_row`` as by default)."""
    sources, row_maps, column_maps, n_columns = scenario
    values_per_row = OPTIONS["gathered_values_per_row"].default if gather_thin else 0
    with sources_as_given(gathered_values_per_row=values_per_row):
        return NormalizedMatrix.from_matrices(sources, row_maps, column_maps,
                                              n_columns=n_columns)


def random_partitions(rng, n_rows, n_cuts=3):
    """Row counts of random partitions of ``n_rows`` rows, some of them empty."""
    cuts = np.sort(rng.integers(0, n_rows + 1, n_cuts))
    return tuple(np.diff(np.concatenate([[0], cuts, [n_rows]])).tolist())


def partitioned(scenario, chunks):
    """The scenario's NormalizedMatrix with its fact side (the target's row map, and a dense
    source read through it in order) cut into Dask partitions of ``chunks`` rows; its sparse
    sources kept sparse (see :func:`sources_as_given`)."""
    import dask.array as da

    sources, row_maps, column_maps, n_columns = scenario
    n = len(row_maps[0])
    sources = [da.from_array(s, chunks=(chunks, s.shape[1]))
               if s.shape[0] == n and np.array_equal(g, np.arange(n)) and not sp.issparse(s)
               else s for s, g in zip(sources, row_maps)]
    row_maps = [da.from_array(row_maps[0], chunks=(chunks,))] + list(row_maps[1:])
    with sources_as_given():
        return NormalizedMatrix.from_matrices(sources, row_maps, column_maps,
                                              n_columns=n_columns)


@st.composite
def scenarios(draw, **kwargs):
    """A hypothesis strategy: (NormalizedMatrix, reference T), built with or without its thin
    sparse sources gathered."""
    seed = draw(st.integers(0, 2**32 - 1))
    gather_thin = draw(st.booleans())
    rng = np.random.default_rng(seed)
    scenario = random_scenario(rng, **kwargs)
    dtype = kwargs.get("dtype", np.float64)
    return build(scenario, gather_thin=gather_thin), reference_matrix(*scenario, dtype=dtype)
