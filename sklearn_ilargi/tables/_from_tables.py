"""``from_tables``: a NormalizedMatrix from tables and a join description, matching keys only."""

import numbers

import numpy as np
import pandas as pd

from ._input import NUMERIC, is_decimal, numeric_values
from ._keys import (
    Matches, duplicated_pair, expand, expand_unique, gather, key_codes, target_codes)
from ..normalized import NormalizedMatrix
from ..normalized._partitioned import is_dask_collection
from ..normalized._row_map import index_dtype
from ._layout import build_sources, plan_attributes
from ._partitioned import partitioned_from_tables
from ._spec import Join, Node, Union, default_name

__all__ = ["Join", "Union", "from_tables"]


def from_tables(base, joins=(), *, target=None, features=None, categorical="onehot",
                fill_value=0.0):
    """Build a NormalizedMatrix from tables and how they join, without joining them.

    Only the key columns are matched: each table becomes a source plus a row map (which of its
    rows feeds each target row), so no feature value is ever copied into a join result. The
    target rows, their order and their values are those of the same ``pandas.merge`` calls
    (one per join, in the order given) followed by ``pandas.get_dummies``.

    Parameters
    ----------
    base : DataFrame, pyarrow.Table, str, os.PathLike, pyarrow.dataset.Dataset, \
            polars.DataFrame, polars.LazyFrame, object with ``__arrow_c_stream__`` or Union
        The table every join hangs from (the fact table). A str or path is a Parquet file,
        read a column at a time, as a Dataset is; a polars LazyFrame is collected; an
        object with the Arrow stream interface (a DuckDB relation, a RecordBatchReader) is
        read through ``pyarrow.table``.
    joins : Join or sequence of Join
        Applied in order, each to the rows the earlier ones produced; a single Join is a
        list of one.
    target : str, optional
        Name of a column (of any one table) to return as ``y``.
    features : list of str, optional
        Columns to use as features; one name selects that column in every table that has
        it. Default: every column of every table except join keys and the target; each must
        be numeric, boolean, decimal, date, string or categorical. A join key named here is
        a feature too, as ``pandas.merge`` keeps it: the same-named keys of a join (``on=``,
        or equal ``left_on`` and ``right_on`` names) are one feature, the first table's
        value where it has the row, else the joined table's (an outer join's unmatched
        rows); differently named keys are one feature each.
    categorical : {"onehot", "drop", "error"}, default="onehot"
        String and categorical columns are one-hot encoded within their own table (one
        column per category of that table, named ``"<column>_<category>"``, kept sparse);
        ``"drop"`` leaves them out of the default features, ``"error"`` refuses them.
    fill_value : float, default=0.0
        Value of a numeric cell whose table has no row for that target row (left/outer
        misses, union members without the column) or whose value is null. One-hot cells of
        such rows are 0.

    Returns
    -------
    X : NormalizedMatrix or PartitionedMatrix
        With ``feature_names`` set. For a ``dask.dataframe.DataFrame`` ``base`` (a fact
        table larger than memory), a :class:`~sklearn_ilargi.normalized.PartitionedMatrix`
        over its partitions, the joined tables in memory and sent to the workers once (see
        ``sklearn_ilargi.tables._partitioned`` for the joins it supports).
    y : ndarray or dask.array.Array
        Only when ``target`` is given: the target column aligned with ``X``'s rows (a Dask
        array chunked like ``X``'s partitions for a Dask ``base``).

    Notes
    -----
    Column names are used as they are (pandas allows integers and tuples); the feature
    names are their ``str``, and must be unique: a name that two features would share (a
    one-hot ``"<column>_<category>"`` that another column has, ``0`` and ``"0"``) is a
    ``ValueError``. A null key matches nothing (SQL semantics; pandas would match null to
    null). Keys that cannot equal each other are refused rather than matched to nothing:
    numbers against strings or dates, time-zone-naive against time-zone-aware datetimes
    (``pandas.merge`` refuses these too). Dates become days since 1970-01-01. With
    ``how="outer"`` the joined table's unmatched rows come last (pandas sorts outer joins by
    key instead). A numeric ``fill_value`` other than 0 is held
    exactly by one extra one-row constant source per table, mapped to the target rows that
    table misses.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_ilargi import Join, from_tables
    >>> sales = pd.DataFrame({"store": [1, 2, 1], "units": [3.0, 4.0, 5.0]})
    >>> stores = pd.DataFrame({"store": [1, 2], "size": [100.0, 250.0],
    ...                        "city": ["Delft", "Leiden"]})
    >>> X, y = from_tables(sales, [Join(stores, on="store")], target="units")
    >>> list(X.feature_names)
    ['size', 'city_Delft', 'city_Leiden']
    >>> X.materialize()
    array([[100.,   1.,   0.],
           [250.,   0.,   1.],
           [100.,   1.,   0.]])
    >>> y
    array([3., 4., 5.])
    """
    joins = _join_list(joins)
    if not (isinstance(fill_value, numbers.Real) and np.isfinite(fill_value)):
        raise ValueError(f"fill_value must be a finite number, got {fill_value!r}.")
    if is_dask_collection(base):  # a fact table larger than memory: partitioned
        return partitioned_from_tables(base, joins, target=target, features=features,
                                       categorical=categorical, fill_value=fill_value)
    names = [default_name(base, 0)] + [j.name or default_name(j.table, i + 1)
                                       for i, j in enumerate(joins)]
    seen = set()
    for name in names:
        if name in seen:
            raise ValueError(f"Two tables of the description are named {name!r}; give each "
                             "join a distinct name.")
        seen.add(name)
    nodes = [Node(base, names[0])]
    if nodes[0].n_rows == 0:
        raise ValueError(f"Table {names[0]!r} is empty (0 rows).")
    node_maps = [None]  # None: the identity (the target rows are still the base's rows)
    shared_keys = {}  # key name -> tables whose same-named keys pandas keeps as one column
    for i, join in enumerate(joins, start=1):
        node_maps = _apply_join(join, i, names, nodes, node_maps, shared_keys)
    n_target = nodes[0].n_rows if node_maps[0] is None else node_maps[0].shape[0]
    if n_target == 0:
        raise ValueError("The joins leave no target rows (no key matches).")
    if node_maps[0] is None:
        node_maps[0] = np.arange(n_target, dtype=index_dtype(n_target))
    exclude, y = set(), None
    if target is not None:
        owner = _target_owner(target, nodes)
        exclude.add((owner, target))
        y = _target_values(target, nodes[owner], node_maps[owner])
    overlaps = ["error"] + [j.overlap for j in joins]
    attributes = plan_attributes(nodes, overlaps, features, exclude, categorical, shared_keys)
    sources, row_maps, column_maps, feature_names, source_names = build_sources(
        nodes, node_maps, attributes, fill_value)
    X = NormalizedMatrix.from_matrices(
        sources, row_maps, column_maps, n_columns=len(feature_names),
        feature_names=feature_names, source_names=source_names,
    )
    return X if target is None else (X, y)


def _apply_join(join, i, names, nodes, node_maps, shared_keys):
    """Match ``join``'s keys, append its table to ``nodes``; the row maps over the new rows."""
    where = f"Join {names[i]!r}"
    left_keys, right_keys = join._checked(where)
    node = Node(join.table, names[i])
    parent = _parent_index(join, names, nodes, i, left_keys, where)
    # after an outer on="k" join pandas keeps one "k" column: read the key from there
    coalesced = join.parent is None and left_keys is not None and any(
        len(shared_keys.get(k, ())) > 1 for k in left_keys)
    if join.pairs is not None:
        matches = _pair_matches(join.pairs, nodes[parent], node, where)
    else:
        if coalesced:
            left = [_coalesced_key(k, shared_keys[k], nodes, node_maps, where)
                    for k in left_keys]
        else:
            left = [nodes[parent].key_column(k, where) for k in left_keys]
        right = [node.key_column(k, where) for k in right_keys]
        left_codes, right_codes = key_codes(
            left, right,
            [f"table {nodes[parent].name!r} column {k!r}" for k in left_keys],
            [f"table {node.name!r} column {k!r}" for k in right_keys],
        )
        matches = Matches.from_codes(left_codes, right_codes)
        nodes[parent].keys.update(left_keys)
        node.keys.update(right_keys)
    parent_map = None if coalesced else node_maps[parent]
    _validate(join.validate, matches, parent_map, nodes[parent], node, left_keys, right_keys,
              where)
    if matches.right_unique():
        taken, right_rows = expand_unique(matches.first_match(), parent_map, join.how,
                                          node.n_rows)
    else:
        taken, right_rows = expand(matches, target_codes(matches, parent_map), join.how,
                                   node.n_rows)
    node_maps = [_carry(m, taken, nodes[k].n_rows) for k, m in enumerate(node_maps)]
    node_maps.append(right_rows.astype(index_dtype(node.n_rows), copy=False))
    nodes.append(node)
    for left_key, right_key in zip(left_keys or (), right_keys or ()):
        if left_key == right_key:  # pandas keeps one column for same-named keys
            shared_keys.setdefault(left_key, [parent]).append(i)
    return node_maps


def _join_list(joins):
    """``joins`` as a list of Join; a single Join is a list of one."""
    if isinstance(joins, Join):
        return [joins]
    if isinstance(joins, (str, bytes)) or not np.iterable(joins) or hasattr(joins, "columns"):
        raise TypeError(f"joins must be a Join or a list of Join objects, got a "
                        f"{type(joins).__name__}; wrap a table as Join(table, on=...).")
    joins = list(joins)
    for j in joins:
        if not isinstance(j, Join):
            raise TypeError(f"joins must hold Join objects, got a {type(j).__name__}; "
                            "wrap a table as Join(table, on=...).")
    return joins


def _parent_index(join, names, nodes, i, left_keys, where):
    if join.parent is not None:
        if join.parent not in names:
            raise ValueError(f"{where}: parent {join.parent!r} names no table of the "
                             f"description ({names[:i]}).")
        index = names.index(join.parent)
        if index >= i:
            raise ValueError(
                f"{where}: parent {join.parent!r} is not an earlier table (it is "
                f"{'this join' if index == i else 'a later join'}); a join can hang only "
                "from the base or an earlier join, so a cycle cannot be built."
            )
        return index
    if left_keys is None or nodes[0].has_all(left_keys):
        return 0
    holders = [k for k in range(1, i) if nodes[k].has_all(left_keys)]
    if len(holders) == 1:
        return holders[0]
    if not holders:
        for k in left_keys:
            nodes[0].key_column(k, where)  # raises, naming the base table and the column
    raise ValueError(f"{where}: the left keys {left_keys} are in several earlier tables "
                     f"({[names[k] for k in holders]}); say which with parent=.")


def _coalesced_key(column, providers, nodes, node_maps, where):
    """The key column as pandas keeps it after ``on=`` joins: the first table's value that
    exists for each target row (an outer join's unmatched rows carry the joined table's key).
    """
    out = None
    for p in providers:
        values = nodes[p].key_column(column, where)
        if node_maps[p] is not None:
            present = node_maps[p] >= 0
            gathered = np.full(node_maps[p].shape[0], None, dtype=object)
            gathered[present] = values.to_numpy(dtype=object)[node_maps[p][present]]
            values = pd.Series(gathered)
        out = values if out is None else out.where(out.notna(), values)
    return out


def _pair_matches(pairs, parent, node, where):
    if not (isinstance(pairs, (tuple, list)) and len(pairs) == 2):
        raise ValueError(f"{where}: pairs must be (left_rows, right_rows).")
    left, right = (np.asarray(p) for p in pairs)
    if left.ndim != 1 or left.shape != right.shape:
        raise ValueError(f"{where}: pairs must be two 1-D arrays of the same length.")
    for rows, table, side in ((left, parent, "left"), (right, node, "right")):
        if rows.size and rows.dtype.kind not in "iu":
            raise TypeError(f"{where}: {side} pair rows must be integers.")
        if rows.size and (rows.min() < 0 or rows.max() >= table.n_rows):
            raise ValueError(f"{where}: {side} pair rows must be in [0, {table.n_rows}) "
                             f"(rows of table {table.name!r}).")
    left, right = left.astype(np.int64), right.astype(np.int64)
    dup = duplicated_pair(left, right)
    if dup is not None:
        raise ValueError(f"{where}: the pair {dup} is given twice.")
    return Matches.from_pairs(left, right, parent.n_rows)


def _validate(validate, matches, parent_map, parent, node, left_keys, right_keys, where):
    if validate in (None, "many_to_many"):
        return
    if left_keys is None:
        _validate_pairs(validate, matches, parent_map, parent, node, where)
        return
    if validate in ("one_to_one", "many_to_one") and not matches.right_unique():
        group = int(np.argmax(matches.count))
        row = int(matches.order[matches.start[group]])
        raise ValueError(
            f"{where}: validate={validate!r} but table {node.name!r} has duplicate keys "
            f"{right_keys} (e.g. at row {row})."
        )
    if validate in ("one_to_one", "one_to_many"):
        codes = target_codes(matches, parent_map)
        used = codes[codes >= 0]
        dup = pd.Index(used).duplicated()
        if dup.any():
            raise ValueError(
                f"{where}: validate={validate!r} but table {parent.name!r} has duplicate keys "
                f"{left_keys} among the target rows."
            )


def _validate_pairs(validate, matches, parent_map, parent, node, where):
    """``validate`` on entity-resolution pairs, which have no keys: what unique keys would
    guarantee. ``"many_to_one"``: each target row matches at most one row of ``node``;
    ``"one_to_many"``: each row of ``node`` is matched by at most one target row (a parent
    row that an earlier join repeated counts once per target row); ``"one_to_one"``: both.
    """
    if validate in ("one_to_one", "many_to_one") and not matches.right_unique():
        row = int(np.argmax(matches.count))
        rows = matches.order[matches.start[row]:matches.start[row] + matches.count[row]]
        raise ValueError(
            f"{where}: validate={validate!r} but row {row} of table {parent.name!r} is paired "
            f"with several rows of table {node.name!r} (rows {rows.tolist()})."
        )
    if validate in ("one_to_one", "one_to_many"):
        n_parent = matches.count.size
        times = (np.ones(n_parent, dtype=np.int64) if parent_map is None else
                 np.bincount(parent_map[parent_map >= 0], minlength=n_parent))
        pair_left = np.repeat(np.arange(n_parent), matches.count)
        matched_by = np.bincount(matches.order, weights=times[pair_left],
                                 minlength=node.n_rows)
        row = int(np.argmax(matched_by))
        if matched_by[row] > 1:
            lefts = pair_left[matches.order == row]
            raise ValueError(
                f"{where}: validate={validate!r} but row {row} of table {node.name!r} is "
                f"matched by {int(matched_by[row])} target rows (through rows "
                f"{lefts.tolist()} of table {parent.name!r})."
            )


def _carry(node_map, taken, n_rows):
    """A node's row map over the new target rows."""
    if taken is None:
        return node_map
    if node_map is None:
        return taken.astype(index_dtype(n_rows))
    return gather(node_map, taken)


def _target_owner(target, nodes):
    owners = [i for i, node in enumerate(nodes) if target in node.columns]
    if not owners:
        raise KeyError(f"The target column {target!r} exists in no table "
                       f"({[n.name for n in nodes]}).")
    if len(owners) > 1:
        raise ValueError(f"The target column {target!r} is in several tables "
                         f"({[nodes[i].name for i in owners]}); rename it in all but one.")
    return owners[0]


def _target_values(target, node, node_map):
    where = f"The target column {target!r} of table {node.name!r}"
    lacking = [m.name for m in node.members if not m.has(target)]
    if lacking:
        raise ValueError(f"{where} is missing from the union's member(s) {lacking}.")
    columns = [m.column(target) for m in node.members]
    floats = None
    if all(is_decimal(c) for c in columns):
        # Decimal objects or an Arrow decimal: correctly rounded floats, their nulls NaN (no
        # pass of its own over the objects to find the nulls)
        floats = [numeric_values(c, NUMERIC, np.nan, where) for c in columns]
        nulls = {m.name: int(np.isnan(f).sum()) for m, f in zip(node.members, floats)}
    else:
        nulls = {m.name: int(c.isna().sum()) for m, c in zip(node.members, columns)}
    if any(nulls.values()):
        inside = (f" ({', '.join(f'{n} in {name!r}' for name, n in nulls.items() if n)})"
                  if node.is_union else "")
        raise ValueError(f"{where} has {sum(nulls.values())} null values{inside}.")
    if (node_map < 0).any():
        raise ValueError(f"{where} is missing for {int((node_map < 0).sum())} target rows "
                         "(rows that table has no row for, after a left or outer join).")
    if floats is not None:
        return (floats[0] if len(floats) == 1 else np.concatenate(floats))[node_map]
    values = node.column(target).to_numpy()
    return values[node_map]
