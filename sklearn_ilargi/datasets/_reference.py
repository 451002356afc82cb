"""The materialized equivalent of ``from_tables``: ``pandas.merge`` then ``pandas.get_dummies``.

It exists to compare against (tests, benchmarks). It joins the whole tables, so it costs what
factorized learning avoids. Every table's columns are prefixed with its position while joining
so that pandas never renames anything; the attribute names are restored at the end.
"""

import numpy as np
import pandas as pd

from ..tables._input import CATEGORICAL, column_kind, numeric_values
from ..tables._spec import Union, default_name


def _frame(table):
    if isinstance(table, Union):
        return pd.concat([_frame(t) for t in table.tables], ignore_index=True)
    if isinstance(table, pd.DataFrame):
        return table.reset_index(drop=True)
    return pd.read_parquet(table)


def join_with_pandas(base, joins=(), *, target=None, features=None, categorical="onehot",
                     fill_value=0.0):
    """Join with ``pandas.merge`` and one-hot encode with ``pandas.get_dummies``.

    Takes the same arguments as :func:`sklearn_ilargi.from_tables` (tables as DataFrames,
    Parquet paths or Unions of them) and returns the joined feature DataFrame, or
    ``(frame, y)`` with ``target``. Null keys are not supported here (pandas matches null to
    null; ``from_tables`` matches them to nothing).

    Parameters
    ----------
    base : DataFrame, str, os.PathLike or Union
        The table every join hangs from.
    joins : sequence of Join
        Applied in order, as in :func:`~sklearn_ilargi.from_tables`.
    target : str, optional
        Name of a column to return as ``y``.
    features : list of str, optional
        Columns to use as features; as in :func:`~sklearn_ilargi.from_tables`.
    categorical : {"onehot", "drop", "error"}, default="onehot"
        What to do with string and categorical columns, as in
        :func:`~sklearn_ilargi.from_tables`.
    fill_value : float, default=0.0
        Value of a numeric cell whose table has no row for that target row, or is null.

    Returns
    -------
    frame : DataFrame
        One column per feature (names as ``X.feature_names``), rows in pandas' order.
    y : ndarray
        Only when ``target`` is given.

    See Also
    --------
    sklearn_ilargi.from_tables : The same data as a NormalizedMatrix, without the join.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn_ilargi import Join, from_tables
    >>> from sklearn_ilargi.datasets import join_with_pandas
    >>> sales = pd.DataFrame({"store": [1, 2, 1], "units": [3.0, 4.0, 5.0]})
    >>> stores = pd.DataFrame({"store": [1, 2], "size": [100.0, 250.0],
    ...                        "city": ["Delft", "Leiden"]})
    >>> frame, y = join_with_pandas(sales, [Join(stores, on="store")], target="units")
    >>> list(frame.columns)
    ['size', 'city_Delft', 'city_Leiden']
    >>> X, _ = from_tables(sales, [Join(stores, on="store")], target="units")
    >>> np.array_equal(frame.to_numpy(dtype=float), X.materialize())
    True
    """
    joins = list(joins)
    names = [default_name(base, 0)] + [j.name or default_name(j.table, i + 1)
                                       for i, j in enumerate(joins)]
    frames = [_frame(base)] + [_frame(j.table) for j in joins]
    keys = [set() for _ in frames]
    parents = [None]
    for i, join in enumerate(joins, start=1):
        left, right = join._checked(f"Join {names[i]!r}")
        if join.parent is not None:
            parent = names.index(join.parent)
        elif left is None or all(k in frames[0].columns for k in left):
            parent = 0
        else:
            parent = next(p for p in range(1, i) if all(k in frames[p].columns for k in left))
        parents.append(parent)
        if left is not None:
            keys[parent].update(left)
            keys[i].update(right)
    prefixed = []
    for i, frame in enumerate(frames):
        frame = frame.rename(columns=lambda c, i=i: f"{i}::{c}")
        frame[f"{i}::__row"] = np.arange(len(frame))
        prefixed.append(frame)
    joined = prefixed[0]
    shared = {}  # key name -> the prefixed columns pandas would keep as one
    for i, join in enumerate(joins, start=1):
        left, right = join._checked("")
        parent = parents[i]
        if join.pairs is not None:
            pairs = pd.DataFrame({f"{parent}::__row": np.asarray(join.pairs[0]),
                                  f"{i}::__row": np.asarray(join.pairs[1])})
            pairs = pairs.sort_values([f"{parent}::__row", f"{i}::__row"], kind="stable")
            joined = joined.merge(pairs, on=f"{parent}::__row",
                                  how="inner" if join.how == "inner" else "left")
            joined = joined.merge(prefixed[i], on=f"{i}::__row", how=join.how)
        else:
            left_columns = []
            for k in left:
                columns = shared.get(k, [])
                if join.parent is None and len(columns) > 1:
                    # pandas keeps one column for same-named keys: the first value present
                    joined[f"__key::{k}"] = joined[columns].bfill(axis=1).iloc[:, 0]
                    left_columns.append(f"__key::{k}")
                else:
                    left_columns.append(f"{parent}::{k}")
            joined = joined.merge(prefixed[i], left_on=left_columns,
                                  right_on=[f"{i}::{k}" for k in right], how=join.how)
            for k, r in zip(left, right):
                if k == r:  # pandas keeps one column for same-named keys
                    shared.setdefault(k, [f"{parent}::{k}"]).append(f"{i}::{k}")
    joined = joined.reset_index(drop=True)
    owner = None
    if target is not None:
        owner = next(i for i, f in enumerate(frames) if target in f.columns)
    attributes = _plan(frames, joins, keys, features, owner, target, categorical, shared)
    columns = {}
    for name, providers in attributes:
        value, present = None, np.zeros(len(joined), dtype=bool)
        for i, column in providers:
            here = joined[f"{i}::__row"].notna().to_numpy() & ~present
            if value is None:
                value = joined[f"{i}::{column}"].copy()
            else:
                value = value.where(~here, joined[f"{i}::{column}"])
            present |= here
        kind = column_kind(frames[providers[0][0]][providers[0][1]])
        if kind == CATEGORICAL:
            text = value.astype(object).where(value.notna(), None)
            text = text.map(lambda v: None if v is None else str(v))
            dummies = pd.get_dummies(text, prefix=name, prefix_sep="_", dtype=np.float64)
            columns.update({c: dummies[c].to_numpy() for c in dummies.columns})
        else:
            columns[name] = numeric_values(value, column_kind(value), fill_value, name)
    out = pd.DataFrame(columns, index=joined.index)
    if target is None:
        return out
    return out, joined[f"{owner}::{target}"].to_numpy()


def _plan(frames, joins, keys, features, owner, target, categorical, shared):
    """Attribute name -> providers, with the same overlap rules as from_tables; a key is a
    feature only when ``features`` names it, and same-named keys are one (coalesced)."""
    order, providers = [], {}
    for i, frame in enumerate(frames):
        for column in frame.columns:
            is_key = column in keys[i]
            if (is_key and features is None) or (i == owner and column == target):
                continue
            if features is not None and column not in features:
                continue
            if categorical == "drop" and column_kind(frame[column]) == CATEGORICAL:
                continue
            if column not in providers:
                order.append(column)
                providers[column] = [(i, column)]
            elif joins[i - 1].overlap == "coalesce" or (is_key and {
                    f"{providers[column][0][0]}::{column}", f"{i}::{column}"} <= set(
                    shared.get(column, ()))):
                providers[column].append((i, column))
            else:  # suffix
                order[order.index(column)] = column + "_x"
                providers[column + "_x"] = providers.pop(column)
                order.append(column + "_y")
                providers[column + "_y"] = [(i, column)]
    return [(name, providers[name]) for name in order]
