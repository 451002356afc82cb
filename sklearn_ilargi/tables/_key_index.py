"""The rows of a dimension table by its key, looked up for each fact partition.

Integer keys (one column, or several combined into one integer) are indexed by arrays: a
table of the row of every key in the keys' range where it takes no more memory than a
``pandas.Index`` and its hash table (about 40 bytes a key: keys ``1..n``, or with gaps up to
ten times as many), else the keys sorted (about 20 bytes a key with their buckets), each
searched by bisection within its bucket of keys. Other keys (strings, floats, dates) use
``pandas.Index.get_indexer``.
"""

import numpy as np
import pandas as pd

from ..normalized._row_map import index_dtype

#: Bytes a key of a ``pandas.Index`` takes with its hash table (its values and the table).
_HASHED_BYTES_PER_KEY = 40


class KeyIndex:
    """The row of ``table`` of each key, over the rows whose keys are all present.

    Parameters
    ----------
    table : pandas.DataFrame
    keys : list of str
        Its key columns, unique together.
    name : str
        The table's name, for the error of keys that are not unique.
    """

    def __init__(self, table, keys, name):
        values = table[keys]
        has_keys = values.notna().all(axis=1).to_numpy()
        #: The table's row of each indexed row (None where every row has its keys).
        self.rows = None
        if not has_keys.all():
            self.rows = np.flatnonzero(has_keys).astype(index_dtype(len(table)), copy=False)
            values = values.iloc[self.rows]
        columns = [values[k] for k in keys]
        self._integer = _IntegerKeys.of(columns)
        if self._integer is None:
            self._index = (pd.Index(columns[0]) if len(keys) == 1
                           else pd.MultiIndex.from_frame(values))
            unique = self._index.is_unique
        else:
            unique = self._integer.unique
        if not unique:
            raise ValueError(
                f"Join {name!r}: the keys {keys} of table {name!r} are not unique; over a "
                "Dask DataFrame fact table, joined tables must have unique keys (many-to-one "
                "joins).")

    def look_up(self, frame, keys, dtype):
        """For each row of ``frame``, the table's row with the keys of ``frame[keys]``, else
        -1, as ``dtype``."""
        values = frame[keys]
        if self._integer is not None:  # -1 for null keys already
            positions = self._integer.positions([values[k] for k in keys])
        else:
            positions = (self._index.get_indexer(values[keys[0]]) if len(keys) == 1
                         else self._index.get_indexer(pd.MultiIndex.from_frame(values)))
            positions[values.isna().any(axis=1).to_numpy()] = -1
        missing = positions < 0
        if self.rows is not None and len(self.rows):
            positions = self.rows[np.maximum(positions, 0)]
        positions = positions.astype(dtype, copy=False)
        positions[missing] = -1
        return positions


class _IntegerKeys:
    """Integer key columns as one integer code per row, ``sum_j (k_j - low_j) * stride_j``,
    indexed by a table over the codes' range or by the codes sorted."""

    @classmethod
    def of(cls, columns):
        """The index of these key columns, or None where they are not all integers, or
        their codes would not fit in 64 bits."""
        if not all(pd.api.types.is_integer_dtype(c.dtype) for c in columns):
            return None
        valid = np.ones(len(columns[0]), dtype=bool)
        arrays = [_as_int64(c, valid) for c in columns]
        if not valid.all():  # unsigned keys beyond int64
            return None
        lows = [int(a.min()) if len(a) else 0 for a in arrays]
        spans = [int(a.max()) - low + 1 if len(a) else 1 for a, low in zip(arrays, lows)]
        if int(np.prod([float(s) for s in spans])) >= 2 ** 62:
            return None
        return cls(arrays, lows, spans)

    def __init__(self, arrays, lows, spans):
        self.lows, self.spans = lows, spans
        self.strides = [int(np.prod(spans[j + 1:], dtype=np.int64)) for j in range(len(spans))]
        codes = self._codes(arrays)
        n_rows, span = len(codes), int(np.prod(spans, dtype=np.int64))
        position_type = np.int32 if n_rows < 2 ** 31 else np.int64
        itemsize = np.dtype(position_type).itemsize
        if span * itemsize <= _HASHED_BYTES_PER_KEY * max(n_rows, 1):  # a table of the range
            self.table = np.full(span, -1, dtype=position_type)
            self.table[codes] = np.arange(n_rows, dtype=position_type)
            self.unique = int(np.count_nonzero(self.table >= 0)) == n_rows
            self.sorted = self.order = None
        else:  # the codes sorted, the row of each, and where each bucket of codes starts
            self.table = None
            self.order = np.argsort(codes, kind="stable").astype(position_type)
            self.sorted = codes[self.order]
            self.unique = bool((np.diff(self.sorted) > 0).all())
            # About one key a bucket: a search then bisects a few keys, not all of them.
            self.shift = max(0, (span - 1).bit_length() - max(n_rows, 1).bit_length())
            starts = np.arange(((span - 1) >> self.shift) + 2, dtype=np.int64) << self.shift
            self.bounds = np.searchsorted(self.sorted, starts).astype(position_type)

    def _codes(self, arrays):
        codes = np.zeros(len(arrays[0]), dtype=np.int64)
        for a, low, stride in zip(arrays, self.lows, self.strides):
            codes += (a - low) * stride
        return codes

    def positions(self, columns):
        """The row of the keys of each row of ``columns`` (integers, or floats that hold
        integers), -1 where there is none."""
        inside = np.ones(len(columns[0]), dtype=bool)
        arrays = []
        for column, low, span in zip(columns, self.lows, self.spans):
            a = _as_int64(column, inside)
            inside &= (a >= low) & (a - low < span)
            arrays.append(np.where(inside, a, low))
        codes = self._codes(arrays)
        if self.table is not None:
            found = self.table[codes]
        else:
            found = self._search(codes)
        return np.where(inside, found, -1)

    def _search(self, codes):
        """The row of each code, -1 where none: a bisection within the code's bucket, of
        all the codes at once."""
        buckets = codes >> self.shift
        low, high = self.bounds[buckets], self.bounds[buckets + 1]
        at = low.astype(np.int64)  # where each code is, or would be, among the sorted
        active = np.flatnonzero(low < high)
        low, high = at[active], high[active].astype(np.int64)
        while len(active):
            middle = (low + high) >> 1
            below = self.sorted[middle] < codes[active]
            low = np.where(below, middle + 1, low)
            high = np.where(below, high, middle)
            done = low >= high
            at[active[done]] = low[done]
            active, low, high = active[~done], low[~done], high[~done]
        if not len(self.sorted):
            return np.full(len(codes), -1, dtype=np.int64)
        at = np.minimum(at, len(self.sorted) - 1)
        return np.where(self.sorted[at] == codes, self.order[at], -1)


def _as_int64(column, valid):
    """``column`` as int64, clearing ``valid`` where a value is no int64: a null, a float
    that holds no integer, an unsigned integer beyond int64's range."""
    dtype = column.dtype
    if pd.api.types.is_integer_dtype(dtype):
        if column.hasnans:
            valid &= column.notna().to_numpy()
        unsigned = np.dtype(getattr(dtype, "numpy_dtype", dtype))
        if unsigned.kind == "u" and unsigned.itemsize == 8:
            raw = column.to_numpy(dtype=np.uint64, na_value=0)
            valid &= raw <= np.iinfo(np.int64).max
            return np.where(valid, raw, 0).astype(np.int64)
        return column.to_numpy(dtype=np.int64, na_value=0)
    floats = column.to_numpy(dtype=np.float64, na_value=np.nan)
    valid &= (np.floor(floats) == floats) & (np.abs(floats) < 2.0 ** 62)
    return np.where(valid, floats, 0).astype(np.int64)
