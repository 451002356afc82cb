"""``from_tables`` over a Dask DataFrame fact table: a PartitionedMatrix, never a join.

The dimension tables are in memory. Each is encoded once, here, as :func:`from_tables`
encodes a table (numbers, dates, one-hot categories), and indexed once by its key; the
PartitionedMatrix sends both to the workers once. Each fact partition then only looks its
keys up in those indexes (``KeyIndex``: arrays for integer keys, a ``pandas.Index`` for
others): the row maps of that partition. A snowflake's outer tables are looked up once per
row of the table they hang from, and composed with that table's row map per partition
(``g_region = g_store_to_region[g_store]``).

The PartitionedMatrix is lazy, as Dask collections are: each partition's arrays (its feature
values and row maps) are computed where an operation needs them, or kept on the workers by
``X.persist()``. On a distributed client the target is computed at once and kept on the
workers, and the partitions counted there, in one read of the fact table; without one, the
rows each partition keeps are counted from its key columns.

Supported: joins by keys (``on`` or ``left_on``/``right_on``), ``how="inner"`` or ``"left"``,
where the joined table's keys are unique (many-to-one: what a dimension is), hanging from
the fact table or from an earlier dimension (snowflakes), each with rows; fact features that
are numbers or booleans; ``fill_value=0``. The rest raises a ValueError that says what is not
supported.
"""

import numpy as np
import pandas as pd

from ..normalized._partitioned import (PartitionedMatrix, Picked, broadcast,
                                       distributed_client, import_dask)
from ..normalized._row_map import index_dtype
from ..normalized._storage import storage_layout, stored_dimension
from ._key_index import KeyIndex
from ._spec import Join, Union, default_name


def partitioned_from_tables(base, joins, *, target, features, categorical, fill_value):
    """What :func:`~sklearn_ilargi.from_tables` returns, for a Dask DataFrame ``base``.

    Returns
    -------
    X : PartitionedMatrix
    y : dask.array.Array
        Only when ``target`` is given: the target column, chunked like ``X``'s rows.
    """
    dask, da, delayed = import_dask()
    if fill_value != 0:
        raise ValueError("from_tables over a Dask DataFrame supports fill_value=0 only.")
    plan = _Plan(base, joins, target, features, categorical)
    lookup = broadcast(plan.lookup)  # the dimensions' indexes, sent to each worker once
    prepare = delayed(_partition_arrays, pure=True)
    item = delayed(_item, pure=True)
    # Each partition's (fact values, one row map per dimension, y), computed together; the
    # partition's task takes its pieces from there (``Picked``).
    bundles = [prepare(piece, lookup) for piece in base[plan.fact_columns].to_delayed()]
    targets = [item(bundle, -1) for bundle in bundles]
    client = distributed_client()
    if client is not None and target is not None:
        # One read of the fact table gives the target, kept on the workers, and the rows of
        # each partition, counted there. The matrix's own arrays (fact values, row maps)
        # are read where an operation needs them, or kept by ``X.persist()``: a fit that
        # reads each partition once (a closed form) then holds only the ones it is reading.
        targets = client.compute(targets)
        row_counts = client.gather(client.map(len, targets))
    else:
        # Nothing is kept: the rows each partition keeps are counted from its key (and
        # target) columns only, and its arrays computed when used.
        kept = delayed(_kept_rows, pure=True)
        (row_counts,) = dask.compute([kept(piece, lookup)
                                      for piece in base[plan.checked_columns].to_delayed()])
    row_counts = tuple(int(n) for n in row_counts)

    def pieces(position):
        return [Picked(position)] * len(bundles)

    n_fact = len(plan.fact_features)
    starts = np.cumsum((0,) + row_counts[:-1])
    sources, indicators, column_maps, names = [], [], [], []
    template_sources = []
    if n_fact:
        sources.append(pieces(0))
        identity = delayed(np.arange, pure=True)
        indicators.append([identity(start, start + n) for start, n in zip(starts, row_counts)])
        template_sources.append(np.empty((0, n_fact)))
        column_maps.append(np.arange(n_fact))
        names.append(plan.names[0])
    first = n_fact
    for k, dim in enumerate(plan.dims):
        if dim.source is None:
            continue
        width = dim.source.shape[1]
        sources.append(dim.source)
        template_sources.append(dim.source)
        indicators.append(pieces(1 + k))
        column_maps.append(first + dim.placement)
        names.append(dim.name)
        first += width
    if not sources:
        raise ValueError("from_tables: no table has a feature column.")
    template_indicators = [np.empty(0, dtype=np.int64)] * len(sources)
    X = PartitionedMatrix._from_pieces(
        sources, indicators, row_counts, template_sources, template_indicators, column_maps,
        bundles=bundles, n_columns=first, feature_names=plan.feature_names,
        source_names=names)
    if target is None:
        return X
    blocks = [da.from_delayed(y, (n,), dtype=plan.target_dtype)
              for y, n in zip(targets, row_counts)]
    y = da.concatenate(blocks) if blocks else da.empty((0,), dtype=plan.target_dtype)
    return X, y


class _Dimension:
    """One joined table: its encoded source (``placement``: the feature of each of its
    columns, among the table's), name, and how each fact partition finds its rows
    (``parent``, the plan position of the table its keys come from, -1 for the fact)."""

    def __init__(self, name, table, source, placement, feature_names, parent, how):
        self.name, self.table, self.source, self.placement = name, table, source, placement
        self.feature_names, self.parent, self.how = feature_names, parent, how
        self.index = None  # over the fact's keys: the key index; else the composed map
        self.left_keys = None


class _Plan:
    """Everything decided once, on the client: fact features, encoded dimensions, indexes."""

    def __init__(self, base, joins, target, features, categorical):
        from ._from_tables import _join_list, from_tables

        joins = _join_list(joins)
        self.names = [default_name(base, 0)] + [j.name or default_name(j.table, i + 1)
                                                for i, j in enumerate(joins)]
        if len(set(self.names)) != len(self.names):
            raise ValueError("Two tables of the description have the same name; give each "
                             "join a distinct name.")
        tables = [None] + [_in_memory(j, self.names[i + 1]) for i, j in enumerate(joins)]
        keyed = [list(_checked_keys(j, self.names[i + 1])) for i, j in enumerate(joins)]
        parents = [self._parent(j, i + 1, keyed[i][0], tables, base)
                   for i, j in enumerate(joins)]
        key_columns = [set() for _ in self.names]
        for i, (left, right) in enumerate(keyed):
            key_columns[parents[i]].update(left)
            key_columns[i + 1].update(right)
        owner = _target_owner(target, base, tables, self.names)
        wanted = None if features is None else set(features)
        keys_named = sorted(str(c) for c in (wanted or ()) if any(c in k for k in key_columns))
        if keys_named:
            raise ValueError(f"Join keys {keys_named} cannot be features over a Dask DataFrame "
                             "fact table; leave them out of features=.")
        self.fact_features = [
            c for c in base.columns
            if c not in key_columns[0] and (owner != 0 or c != target)
            and (wanted is None or c in wanted) and _fact_feature(base, c, categorical,
                                                                  wanted, self.names[0])]
        self.dims, feature_names = [], [str(c) for c in self.fact_features]
        for i, join in enumerate(joins, start=1):
            table = tables[i]
            if not len(table):
                raise ValueError(f"Table {self.names[i]!r} is empty (0 rows): over a Dask "
                                 "DataFrame fact table, every joined table needs rows.")
            columns = [c for c in table.columns if c not in key_columns[i]
                       and (owner != i or c != target) and (wanted is None or c in wanted)]
            source, names, placement = None, [], None
            if columns:
                source, names, placement = _encoded(
                    from_tables(table[columns], [], categorical=categorical),
                    f"table {self.names[i]!r}")
            parent = parents[i - 1]
            dim = _Dimension(self.names[i], table, source, placement, names, parent - 1,
                             join.how)
            left, right = keyed[i - 1]
            rows = KeyIndex(table, right, self.names[i])
            if dim.parent < 0:
                _check_key_types(base._meta, left, table, right, self.names[0], self.names[i])
                dim.index, dim.left_keys = rows, left
            else:
                outer = tables[parent]
                _check_key_types(outer, left, table, right, self.names[parent], self.names[i])
                dim.index = rows.look_up(outer, left, index_dtype(len(table)))
            self.dims.append(dim)
            feature_names += names
        if wanted is not None:
            known = {c for t in [base._meta, *tables[1:]] for c in t.columns}
            unknown = [c for c in features if c not in known]
            if unknown:
                raise KeyError(f"Feature column(s) {unknown} exist in no table "
                               f"({self.names}).")
        if len(set(feature_names)) != len(feature_names):
            seen = {n for n in feature_names if feature_names.count(n) > 1}
            raise ValueError(f"Two features would be named {sorted(seen)[:5]}; feature names "
                             "must be unique: rename one, or leave one out with features=.")
        self.feature_names = feature_names
        fact_keys = [c for d in self.dims if d.parent < 0 for c in d.left_keys]
        self.target = target
        self.target_owner = owner
        target_column = [target] if owner == 0 else []
        self.fact_columns = list(dict.fromkeys(self.fact_features + fact_keys + target_column))
        self.checked_columns = list(dict.fromkeys(fact_keys + target_column))
        if owner is None:
            self.target_dtype = None
        elif owner == 0:
            self.target_dtype = base._meta[target].to_numpy().dtype
        else:
            self.target_dtype = tables[owner][target].to_numpy().dtype
        self.lookup = _Lookup(self)

    def _parent(self, join, i, left_keys, tables, base):
        if join.parent is not None:
            if join.parent not in self.names[:i]:
                raise ValueError(f"Join {self.names[i]!r}: parent {join.parent!r} names no "
                                 f"earlier table ({self.names[:i]}).")
            return self.names.index(join.parent)
        if all(k in base.columns for k in left_keys):
            return 0
        holders = [k for k in range(1, i) if all(c in tables[k].columns for c in left_keys)]
        if len(holders) != 1:
            raise ValueError(f"Join {self.names[i]!r}: the left keys {left_keys} are in "
                             f"{'no' if not holders else 'several'} earlier tables; say "
                             "which with parent=.")
        return holders[0]


class _Lookup:
    """What a worker needs to turn one fact partition into arrays (sent once, with the
    graph): the fact columns, each dimension's index, the target's owner."""

    def __init__(self, plan):
        self.fact_features = plan.fact_features
        self.dims = [(d.parent, d.how, d.index, d.left_keys) for d in plan.dims]
        #: The dtype of each row map: int32 where the dimension's rows fit in it.
        self.index_dtypes = [index_dtype(len(d.table)) for d in plan.dims]
        self.target = plan.target
        self.target_owner = plan.target_owner
        self.target_values = (None if plan.target_owner in (None, 0) else
                              plan.dims[plan.target_owner - 1].table[plan.target].to_numpy())


def _kept_rows(frame, lookup):
    """How many rows of a fact partition the joins keep; raises where the target is
    missing or null there."""
    maps, keep = _row_maps(frame, lookup)
    _target(frame if keep is None else frame[keep], maps, lookup)
    return len(frame) if keep is None else int(keep.sum())


def _partition_arrays(frame, lookup):
    """One fact partition as (fact features, one row map per dimension, y)."""
    maps, keep = _row_maps(frame, lookup)
    kept = frame if keep is None else frame[keep]
    values = kept[lookup.fact_features].to_numpy(dtype=np.float64, na_value=0.0)
    # In the layout the partition's matrix stores it: the matrix holds this array, no copy.
    values = storage_layout(values, is_fact=True)
    return values, *maps, _target(kept, maps, lookup)


def _row_maps(frame, lookup):
    """Per dimension, the row of each kept fact row (-1 for none), and which rows the inner
    joins keep (None for all)."""
    maps = []
    for parent, how, index, left_keys in lookup.dims:
        if parent < 0:
            rows = index.look_up(frame, left_keys, lookup.index_dtypes[len(maps)])
        else:
            above = maps[parent]
            rows = np.where(above >= 0, index[np.maximum(above, 0)], -1)
        maps.append(rows.astype(lookup.index_dtypes[len(maps)], copy=False))
    keep = np.ones(len(frame), dtype=bool)
    for (_, how, _, _), rows in zip(lookup.dims, maps):
        if how == "inner":
            keep &= rows >= 0
    if keep.all():
        return maps, None
    return [rows[keep] for rows in maps], keep


def _target(kept, maps, lookup):
    """The target of the kept rows of a fact partition, or None without a target."""
    if lookup.target_owner == 0:
        y = kept[lookup.target]
        if y.isna().any():
            raise ValueError(f"The target column {lookup.target!r} has "
                             f"{int(y.isna().sum())} null values.")
        return y.to_numpy()
    if lookup.target_owner is None:
        return None
    rows = maps[lookup.target_owner - 1]
    if (rows < 0).any():
        raise ValueError(f"The target column {lookup.target!r} is missing for "
                         f"{int((rows < 0).sum())} target rows (a left join's misses).")
    return lookup.target_values[rows]


def _encoded(encoded, where):
    """A dimension's encoded matrix (``from_tables`` over that one table) as the one source
    every partition stores, its feature names, and the feature of each source column.

    The encoding is a single block over the table's own rows, already in its stored layout:
    it is that block's source itself, not a copy (a join of it would be as large again, and
    its layout a third copy, at once on the client). Anything else is joined."""
    names = list(encoded.feature_names)
    blocks = encoded.blocks
    if (len(blocks) == 1 and encoded.shift is None and blocks[0].row_map.is_identity
            and blocks[0].shape == encoded.shape):
        source, placement = blocks[0].source, np.asarray(blocks[0].columns)
    else:
        source, placement = encoded.materialize(), np.arange(encoded.shape[1])
    del encoded, blocks
    return stored_dimension(source, np.float64, where), names, placement


def _item(arrays, position):
    return arrays[position]


def _in_memory(join, name):
    if not isinstance(join, Join):
        raise TypeError(f"joins must hold Join objects, got a {type(join).__name__}.")
    table = join.table
    if isinstance(table, Union) or not isinstance(table, pd.DataFrame):
        if hasattr(table, "to_pandas") and not isinstance(table, Union):
            table = table.to_pandas()
        else:
            raise ValueError(f"Join {name!r}: over a Dask DataFrame fact table, the joined "
                             "tables must be pandas DataFrames (or have to_pandas) held in "
                             "memory.")
    if join.pairs is not None:
        raise ValueError(f"Join {name!r}: pairs are not supported over a Dask DataFrame.")
    if join.how not in ("inner", "left"):
        raise ValueError(f"Join {name!r}: how={join.how!r} is not supported over a Dask "
                         "DataFrame fact table (inner and left joins are).")
    return table


def _checked_keys(join, name):
    left, right = join._checked(f"Join {name!r}")
    return left, right


def _check_key_types(left_table, left_keys, right_table, right_keys, left_name, right_name):
    for lk, rk in zip(left_keys, right_keys):
        if lk not in left_table.columns:
            raise KeyError(f"Table {left_name!r} has no key column {lk!r}.")
        if rk not in right_table.columns:
            raise KeyError(f"Table {right_name!r} has no key column {rk!r}.")
        numeric = [pd.api.types.is_numeric_dtype(t[c]) and not pd.api.types.is_bool_dtype(
            t[c]) for t, c in ((left_table, lk), (right_table, rk))]
        if numeric[0] != numeric[1]:
            raise TypeError(f"Key column {lk!r} of table {left_name!r} and key column {rk!r} "
                            f"of table {right_name!r} cannot be equal: one is numeric and "
                            "the other is not.")


def _target_owner(target, base, tables, names):
    if target is None:
        return None
    owners = [i for i, t in enumerate([base._meta, *tables[1:]]) if target in t.columns]
    if not owners:
        raise KeyError(f"The target column {target!r} exists in no table ({names}).")
    if len(owners) > 1:
        raise ValueError(f"The target column {target!r} is in several tables "
                         f"({[names[i] for i in owners]}); rename it in all but one.")
    return owners[0]


def _fact_feature(base, column, categorical, wanted, name):
    """Whether a fact column is a feature: numbers and booleans are; categories are left
    out with ``categorical="drop"`` and refused otherwise (their one-hot encoding needs the
    categories of every partition)."""
    dtype = base._meta[column].dtype
    if pd.api.types.is_bool_dtype(dtype) or (pd.api.types.is_numeric_dtype(dtype)
                                             and not pd.api.types.is_complex_dtype(dtype)):
        return True
    if categorical == "drop" and wanted is None:
        return False
    raise TypeError(f"Table {name!r} column {column!r} (dtype {dtype}) cannot be a feature "
                    "of a Dask DataFrame fact table: only numbers and booleans can; leave it "
                    "out with features=[...] or categorical='drop', or one-hot encode it into "
                    "a dimension table.")
