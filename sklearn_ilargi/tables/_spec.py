"""The join description: ``Join`` and ``Union``, and the logical tables they name."""

import os

import numpy as np
import pandas as pd

from ._input import InputTable
from ._keys import check_union_key

_HOWS = ("inner", "left", "outer")
_VALIDATES = (None, "one_to_one", "many_to_one", "one_to_many", "many_to_many")
_OVERLAPS = ("error", "coalesce", "suffix")


def _as_list(keys, what, where):
    if keys is None:
        return None
    keys = [keys] if isinstance(keys, str) or not np.iterable(keys) else list(keys)
    if not keys:
        raise ValueError(f"{where}: {what} is empty.")
    return keys


class Join:
    """One table joined to the base (or to an earlier join) by keys or by row pairs.

    Parameters
    ----------
    table : DataFrame, pyarrow.Table, str, os.PathLike, pyarrow.dataset.Dataset, \
            polars.DataFrame, polars.LazyFrame, object with ``__arrow_c_stream__`` or Union
        The table to join: a str or path is a Parquet file; an object with the Arrow stream
        interface (a DuckDB relation, a RecordBatchReader) is read through
        ``pyarrow.table``.
    on : str or list of str, optional
        Key column(s) with the same name in both tables. Names are used as they are (an
        integer names an integer column); a list (or tuple, as in ``pandas.merge``) makes a
        multi-column key, so a tuple-named column is given as ``[("a", "b")]``.
    left_on, right_on : str or list of str, optional
        Key columns of the parent table and of ``table``, when their names differ.
    how : {"inner", "left", "outer"}, default="inner"
        As in ``pandas.merge``.
    parent : str, optional
        Name of the table whose key columns ``left_on`` refers to: the base or an earlier
        join (a snowflake: lineitem -> orders -> customer -> nation). By default the base when
        it has the left key columns, else the one earlier joined table that has them all.
    name : str, optional
        Name of this join, used by ``parent`` and in error messages. Defaults to the file
        name for a Parquet path, ``Union.name`` for a union, else ``"table<i>"``.
    validate : {None, "one_to_one", "many_to_one", "one_to_many", "many_to_many"}, \
            default=None
        Check that the keys are unique on the side(s) named, as in ``pandas.merge``. On
        ``pairs``, which have no keys, what unique keys guarantee: ``"many_to_one"``, no
        target row paired with two rows of ``table``; ``"one_to_many"``, no row of
        ``table`` matched by two target rows; ``"one_to_one"``, both.
    overlap : {"error", "coalesce", "suffix"}, default="error"
        What to do when ``table`` has a non-key column whose name an earlier table has
        already: raise; treat both as one attribute where the first table that has the row
        wins (source redundancy); or keep both, renamed with ``_x`` / ``_y`` like pandas
        (a ``ValueError`` when a renamed name is a feature already, where ``pandas.merge``
        raises ``MergeError``).
    pairs : tuple of two int arrays, optional
        ``(left_rows, right_rows)``: row positions in the parent table and in ``table`` that
        match (entity resolution), instead of keys.

    See Also
    --------
    from_tables : Build a NormalizedMatrix from a base table and its joins.
    Union : Tables stacked by rows, usable as a joined table or as the base.

    Examples
    --------
    A snowflake: sales join their stores, and the stores join their regions (``parent``
    names the table whose ``region`` column the keys come from). The left joins keep the
    sale of store 3, which has no row in ``stores``; its missing cells are 0:

    >>> import pandas as pd
    >>> from sklearn_ilargi import Join, from_tables
    >>> sales = pd.DataFrame({"store": [1, 2, 1, 3], "units": [3.0, 4.0, 5.0, 1.0]})
    >>> stores = pd.DataFrame({"store": [1, 2], "size": [100.0, 250.0], "region": [7, 8]})
    >>> regions = pd.DataFrame({"region_id": [7, 8], "people": [5.0, 9.0]})
    >>> X, y = from_tables(sales, [
    ...     Join(stores, on="store", how="left", name="stores"),
    ...     Join(regions, left_on="region", right_on="region_id", parent="stores",
    ...          how="left"),
    ... ], target="units", features=["size", "people"])
    >>> X.materialize()
    array([[100.,   5.],
           [250.,   9.],
           [100.,   5.],
           [  0.,   0.]])
    """

    def __init__(self, table, on=None, *, left_on=None, right_on=None, how="inner",
                 parent=None, name=None, validate=None, overlap="error", pairs=None):
        self.table = table
        self.on = on
        self.left_on = left_on
        self.right_on = right_on
        self.how = how
        self.parent = parent
        self.name = name
        self.validate = validate
        self.overlap = overlap
        self.pairs = pairs

    def __repr__(self):
        keys = (f"on={self.on!r}" if self.on is not None else
                "pairs=..." if self.pairs is not None else
                f"left_on={self.left_on!r}, right_on={self.right_on!r}")
        return f"Join(name={self.name!r}, {keys}, how={self.how!r}, parent={self.parent!r})"

    def _checked(self, where):
        """(left_keys, right_keys) after checking the parameters."""
        if self.how not in _HOWS:
            raise ValueError(f"{where}: how must be one of {_HOWS}, got {self.how!r}.")
        if self.validate not in _VALIDATES:
            raise ValueError(f"{where}: validate must be one of {_VALIDATES}, got "
                             f"{self.validate!r}.")
        if self.overlap not in _OVERLAPS:
            raise ValueError(f"{where}: overlap must be one of {_OVERLAPS}, got "
                             f"{self.overlap!r}.")
        if self.pairs is not None:
            if self.on is not None or self.left_on is not None or self.right_on is not None:
                raise ValueError(f"{where}: give either pairs or keys, not both.")
            return None, None
        if self.on is not None:
            if self.left_on is not None or self.right_on is not None:
                raise ValueError(f"{where}: give either on or left_on/right_on, not both.")
            keys = _as_list(self.on, "on", where)
            return keys, keys
        if self.left_on is None or self.right_on is None:
            raise ValueError(f"{where}: give the keys (on, or left_on and right_on) or pairs.")
        left = _as_list(self.left_on, "left_on", where)
        right = _as_list(self.right_on, "right_on", where)
        if len(left) != len(right):
            raise ValueError(f"{where}: left_on has {len(left)} columns but right_on has "
                             f"{len(right)}.")
        return left, right


class Union:
    """Tables stacked by rows, columns matched by name (a column a table lacks is missing).

    Parameters
    ----------
    tables : list of tables
        The tables to stack, in order, each of a type that :class:`Join` takes (a str or
        path is a Parquet file). A Union nested in the list is flattened, and a single
        Union is the list of its tables. A single table is a ``TypeError``: pass
        ``[table]``.
    name : str, optional
        Name used by ``Join.parent`` and in error messages.

    See Also
    --------
    Join : One table joined to the base or to an earlier join.
    from_tables : Build a NormalizedMatrix from a base table and its joins.

    Examples
    --------
    Two silos' tables stacked as the base; the second has a column the first lacks, which is
    missing (0) in the first's rows:

    >>> import pandas as pd
    >>> from sklearn_ilargi import Union, from_tables
    >>> first = pd.DataFrame({"x": [1.0, 2.0]})
    >>> second = pd.DataFrame({"x": [3.0], "z": [4.0]})
    >>> X = from_tables(Union([first, second], name="both"))
    >>> X.materialize()
    array([[1., 0.],
           [2., 0.],
           [3., 4.]])
    >>> list(X.feature_names)
    ['x', 'z']
    """

    def __init__(self, tables, *, name=None):
        if isinstance(tables, Union):
            tables = [tables]
        elif _is_one_table(tables):
            # a DataFrame iterates over its column names, a str over its characters
            raise TypeError(f"Union takes a list of tables, got a single "
                            f"{type(tables).__name__}; pass Union([table, ...]).")
        self.tables = list(tables)
        self.name = name

    def __repr__(self):
        return f"Union(name={self.name!r}, tables={len(self.tables)})"


class Node:
    """A logical table of the description: one input table, or a union of several.

    ``members`` are the input tables; member ``m`` holds rows ``offsets[m]:offsets[m + 1]``.
    """

    def __init__(self, data, name):
        self.name = name
        if isinstance(data, Union):
            if not data.tables:
                raise ValueError(f"Union {name!r} has no tables.")
            self.members = [
                InputTable(t, f"{name}[{m}]") for m, t in enumerate(_flatten(data.tables))
            ]
        else:
            self.members = [InputTable(data, name)]
        sizes = [member.n_rows for member in self.members]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)])
        self.n_rows = int(self.offsets[-1])
        self.columns = []
        for member in self.members:
            self.columns += [c for c in member.columns if c not in self.columns]
        self.keys = set()

    @property
    def is_union(self):
        return len(self.members) > 1

    def has_all(self, columns):
        return all(all(m.has(c) for m in self.members) for c in columns)

    def column(self, column):
        """Column of the whole logical table; a union member without it gives nulls."""
        if not self.is_union:
            return self.members[0].column(column)
        if not any(m.has(column) for m in self.members):
            raise KeyError(f"No member of union {self.name!r} has a column {column!r}.")
        parts = [
            m.column(column).reset_index(drop=True) if m.has(column)
            else pd.Series([None] * m.n_rows, dtype=object)
            for m in self.members
        ]
        return pd.concat(parts, ignore_index=True)

    def key_column(self, column, where):
        for member in self.members:
            if not member.has(column):
                raise KeyError(f"{where}: key column {column!r} does not exist in table "
                               f"{member.name!r}; its columns are {member.columns}.")
        if self.is_union:
            check_union_key([m.column(column) for m in self.members],
                            [f"table {m.name!r} column {column!r}" for m in self.members])
        return self.column(column)


def _is_one_table(tables):
    return (isinstance(tables, (str, bytes, os.PathLike)) or hasattr(tables, "columns")
            or hasattr(tables, "__arrow_c_stream__") or not np.iterable(tables))


def _flatten(tables):
    out = []
    for t in tables:
        out += _flatten(t.tables) if isinstance(t, Union) else [t]
    return out


def default_name(data, i):
    if isinstance(data, Union) and data.name:
        return data.name
    if isinstance(data, (str, os.PathLike)):
        return os.path.splitext(os.path.basename(os.fspath(data)))[0]
    return "base" if i == 0 else f"table{i}"
