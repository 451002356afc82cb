"""Read one input table and encode its columns as numbers.

A table may be a pandas DataFrame, a pyarrow Table or RecordBatch, a path to a Parquet file, a
pyarrow Dataset, a polars DataFrame or LazyFrame (collected), or anything else that exports the
Arrow PyCapsule stream interface (``__arrow_c_stream__``: DuckDB relations, pyarrow
RecordBatchReaders), which is read through ``pyarrow.table``. Columns are encoded one at a time
and only when needed (keys, features, target); a Parquet file and a Dataset are also read one
column at a time, so a wide one is never loaded whole and its decimals never become Python
objects.

Encoding, per column kind:

- numeric and boolean: float64;
- decimal (TPC-H prices): float64, correctly rounded (the float nearest the decimal, what
  ``float(decimal.Decimal)`` gives), whichever way the table was read: an Arrow decimal is
  converted from its unscaled integer, not by Arrow's cast to float64 (which is off by one
  unit in the last place for some values), and a column of ``Decimal`` objects (what
  ``pandas.read_parquet`` gives by default) by ``float``, which gives the same float;
- date and datetime: days since 1970-01-01 as float64 (fractional for datetimes, the same float
  for the same instant whatever the unit; time zones are converted to UTC first);
- categorical and string: one-hot, one column per category of *this* table, kept sparse.

Nulls in a numeric column become ``fill_value``; a null category has no one-hot entry (all
zeros), as ``pandas.get_dummies`` does.
"""

import decimal
import math
import os
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from .._config import get_config

NUMERIC, CATEGORICAL, DATE, OTHER = "numeric", "categorical", "date", "other"

# float64 holds every integer up to 2**53 in magnitude and every power of ten up to 10**22
_EXACT_INTEGER, _EXACT_POWER = 2 ** 53, 22


class InputTable:
    """A named input table whose columns are read lazily as pandas Series.

    Parameters
    ----------
    data : DataFrame, pyarrow.Table, str, os.PathLike, pyarrow.dataset.Dataset, \
            polars.DataFrame, polars.LazyFrame or object with ``__arrow_c_stream__``
    name : str
        Used in error messages and source names.
    """

    def __init__(self, data, name):
        self.name = name
        self._frame = None
        self._read = None  # column name -> pyarrow array, for every input but a DataFrame
        if isinstance(data, pd.DataFrame):
            self._frame = data
            columns = list(data.columns)
            n_rows = len(data)
        else:
            self._read, columns, n_rows = _arrow_reader(data, name)
            columns = list(columns)
        if len(set(columns)) != len(columns):
            seen, dup = set(), []
            for c in columns:
                if c in seen:
                    dup.append(c)
                seen.add(c)
            raise ValueError(f"Table {name!r} has duplicated column names {dup}.")
        self.columns = columns  # as given: pandas allows integers and tuples as names
        self._labels = set(columns)
        self.n_rows = int(n_rows)
        self._cache = {}  # column -> Series
        self._derived = {}  # ("kind" or "factorized", column) -> what was found

    def has(self, column):
        return column in self._labels

    def column(self, column):
        """Column ``column`` as a pandas Series (decimals as float64, dates as datetime64)."""
        if column not in self._labels:
            raise KeyError(
                f"Table {self.name!r} has no column {column!r}; its columns are "
                f"{self.columns}."
            )
        if column in self._cache:
            return self._cache[column]
        if self._frame is not None:
            series = self._frame[column]
            if _read_as_arrow(series.dtype):
                series = _arrow_to_series(series.array.__arrow_array__())
        else:
            series = _arrow_to_series(self._read(column))
        self._cache[column] = series
        return series

    def kind(self, column):
        """The kind of column ``column`` (see :func:`column_kind`), found once: an object
        column's kind takes a pass over its values."""
        key = ("kind", column)
        if key not in self._derived:
            self._derived[key] = column_kind(self.column(column))
        return self._derived[key]

    def factorized(self, column):
        """Column ``column`` factorized: (codes, category names), computed once."""
        key = ("factorized", column)
        if key not in self._derived:
            self._derived[key] = factorize(self.column(column))
        return self._derived[key]

    def release(self):
        """Forget the columns read so far (they are encoded by then)."""
        self._cache, self._derived = {}, {}


def _arrow_reader(data, name):
    """How to read a table that is not a DataFrame: (read, column names, number of rows).

    ``read(column)`` gives one column as a pyarrow array. A Parquet file and a Dataset are
    read a column at a time; anything else is an Arrow table in memory.
    """
    if isinstance(data, (str, os.PathLike)):
        import pyarrow.parquet as pq

        if not os.path.exists(data):
            raise FileNotFoundError(f"Table {name!r}: no Parquet file at {os.fspath(data)!r}.")
        parquet = pq.ParquetFile(data)
        return (lambda column: parquet.read(columns=[column]).column(0),
                parquet.schema_arrow.names, parquet.metadata.num_rows)
    if _is_dataset(data):
        return (lambda column: data.to_table(columns=[column]).column(0),
                data.schema.names, data.count_rows())
    table = _arrow_table(data, name)
    return table.column, table.column_names, table.num_rows


def _arrow_table(data, name):
    """``data`` as a pyarrow Table (or RecordBatch), or a ``TypeError`` naming the table."""
    if _from(data, "pyarrow") and hasattr(data, "column_names"):  # a Table or a RecordBatch
        return data
    if _from(data, "polars") and hasattr(data, "collect"):  # a LazyFrame: run its query
        data = data.collect()
    if _from(data, "polars") and hasattr(data, "to_arrow"):
        return data.to_arrow()  # zero-copy, strings as large_string
    if hasattr(data, "__arrow_c_stream__"):  # DuckDB relations, RecordBatchReaders, ...
        return pa.table(data)
    stack = "; to stack tables, pass Union([...])" if isinstance(data, (list, tuple)) else ""
    raise TypeError(
        f"Table {name!r} is a {type(data).__name__}; expected a pandas DataFrame, a pyarrow "
        "Table, a path to a Parquet file, a pyarrow Dataset, a polars DataFrame or LazyFrame, "
        f"or an object with the Arrow stream interface (__arrow_c_stream__){stack}."
    )


def _from(data, package):
    """Whether ``data``'s type comes from ``package`` (checked without importing it)."""
    return type(data).__module__.split(".")[0] == package


def _is_dataset(data):
    """Whether ``data`` is a ``pyarrow.dataset.Dataset`` (``pyarrow.dataset``, slow to import,
    is imported only for what looks like one)."""
    if not (_from(data, "pyarrow") and hasattr(data, "to_table")):
        return False
    import pyarrow.dataset as ds

    return isinstance(data, ds.Dataset)


def _read_as_arrow(dtype):
    """Whether a DataFrame column of ``dtype`` is read as the same Arrow column would be: a
    pandas ArrowDtype of a dictionary (a categorical then, as a key too) or of a view type
    (``string_view``, ``binary_view``, pyarrow 16 and later: what
    ``read_parquet(dtype_backend="pyarrow")`` gives for strings stored as views), which
    pandas cannot factorize, compare or convert."""
    if not isinstance(dtype, pd.ArrowDtype):
        return False
    import pyarrow.types as pat

    arrow_type = dtype.pyarrow_dtype
    return pat.is_dictionary(arrow_type) or any(
        getattr(pat, check, lambda _: False)(arrow_type)
        for check in ("is_string_view", "is_binary_view"))


def _arrow_to_series(array):
    """An Arrow column as a pandas Series: decimals as float64 (correctly rounded), dates as
    datetime64, dictionaries as categoricals, the rest as ``to_pandas`` makes them."""
    import pyarrow.types as pat

    kind = array.type
    if pat.is_decimal(kind):
        return pd.Series(decimal_floats(array))
    if pat.is_date(kind):
        return pd.Series(array.to_pandas(date_as_object=False))
    return pd.Series(array.to_pandas())


def decimal_floats(array):
    """The float64 nearest to each value of an Arrow decimal array (NaN where null).

    Each value is its unscaled integer over ``10**scale``, read from the array's buffer: the
    same float as ``float(decimal.Decimal)``. Where both are exactly float64 (the integer
    within 2**53 in magnitude, ``10**scale`` within ``10**22``), one IEEE division of the two
    rounds correctly, for the whole array at once; the other values are divided as Python
    integers, which rounds correctly too. Arrow's own cast to float64 is off by one unit in
    the last place for some values (57.55 becomes 57.550000000000004).

    Parameters
    ----------
    array : pyarrow.Array or pyarrow.ChunkedArray
        Of any decimal type (decimal32, decimal64, decimal128, decimal256).

    Returns
    -------
    ndarray of shape (len(array),), dtype float64
    """
    chunks = getattr(array, "chunks", [array])
    return np.concatenate([_decimal_chunk_floats(c) for c in chunks] + [np.empty(0)])


def _decimal_chunk_floats(chunk):
    n, scale, width = len(chunk), chunk.type.scale, chunk.type.byte_width
    if n == 0:
        return np.empty(0)
    # each value: its unscaled integer, two's complement in native byte order, `width` bytes
    raw = np.frombuffer(chunk.buffers()[1], dtype=np.uint8)
    raw = raw[chunk.offset * width:(chunk.offset + n) * width].reshape(n, width)
    null = np.zeros(n, dtype=bool)
    if chunk.null_count:
        null = chunk.is_null().to_numpy(zero_copy_only=False)
    values, exact = np.zeros(n), np.zeros(n, dtype=bool)
    if abs(scale) <= _EXACT_POWER and sys.byteorder == "little":
        words = raw.view(f"<i{min(width, 8)}")  # the low 64-bit word first
        unscaled = words[:, 0].astype(np.int64)
        in_int64 = (words[:, 1:] == (unscaled >> 63)[:, None]).all(axis=1)  # sign extension
        exact = in_int64 & (-_EXACT_INTEGER <= unscaled) & (unscaled <= _EXACT_INTEGER)
        values = (unscaled / float(10 ** scale) if scale >= 0
                  else unscaled * float(10 ** -scale))
    for i in np.flatnonzero(~exact & ~null):
        unscaled = int.from_bytes(raw[i].tobytes(), sys.byteorder, signed=True)
        # Python's integer division rounds correctly, as does an integer's float
        values[i] = unscaled / 10 ** scale if scale >= 0 else float(unscaled * 10 ** -scale)
    values[null] = np.nan
    return values


def column_kind(series):
    """The kind of a column: numeric (incl. bool, decimal), categorical, date or other."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return CATEGORICAL
    if isinstance(dtype, pd.ArrowDtype):  # first: pandas' checks raise on some Arrow types
        return _arrow_kind(dtype.pyarrow_dtype)
    if pd.api.types.is_complex_dtype(dtype):  # float64 would drop the imaginary parts
        return OTHER
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        return NUMERIC
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return DATE
    if pd.api.types.is_string_dtype(dtype) and dtype != object:
        return CATEGORICAL
    if dtype == object:
        inferred = pd.api.types.infer_dtype(series, skipna=True)
        if inferred in ("string", "categorical"):
            return CATEGORICAL
        if inferred in ("decimal", "integer", "floating", "mixed-integer-float", "boolean",
                        "empty"):
            return NUMERIC
        if inferred in ("date", "datetime", "datetime64"):
            return DATE
    return OTHER


def _arrow_kind(arrow_type):
    import pyarrow.types as pat

    if pat.is_decimal(arrow_type) or pat.is_integer(arrow_type) or pat.is_floating(
        arrow_type
    ) or pat.is_boolean(arrow_type) or pat.is_null(arrow_type):  # all null: as an empty column
        return NUMERIC
    if pat.is_date(arrow_type) or pat.is_timestamp(arrow_type):
        return DATE
    if pat.is_string(arrow_type) or pat.is_large_string(arrow_type) or pat.is_dictionary(
        arrow_type
    ):
        return CATEGORICAL
    return OTHER


def is_decimal(series):
    """Whether ``series`` holds decimals: ``Decimal`` objects or an Arrow decimal type."""
    if isinstance(series.dtype, pd.ArrowDtype):
        return pa.types.is_decimal(series.dtype.pyarrow_dtype)
    return series.dtype == object and pd.api.types.infer_dtype(series) == "decimal"


def numeric_values(series, kind, fill_value, where):
    """A float64 vector; nulls become ``fill_value``."""
    if kind == DATE:
        values = _days_since_epoch(series)
    elif series.dtype == object:
        values = _object_floats(series, where)
    elif is_decimal(series):
        values = decimal_floats(series.array.__arrow_array__())
    else:
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    if not np.isfinite(values).all():
        if np.isinf(values).any():
            raise ValueError(f"{where} contains infinity.")
        values = np.where(np.isnan(values), fill_value, values)
    return values


def _object_floats(series, where):
    """``float`` of each value of an object column of numbers, NaN where null.

    For a ``Decimal`` that is the float64 nearest to it (``float`` rounds its digits
    correctly), the same float an Arrow decimal gives; a negative zero is made zero, as in an
    Arrow decimal, which has none. One pass of numpy's over the objects.

    A finite value beyond float64's range is a ``ValueError`` (``float`` makes such a
    ``Decimal`` an infinity, and refuses such a Python integer).
    """
    try:
        values = _floats_of_objects(series)
    except OverflowError:
        values = None
    if values is None or np.isinf(values).any():
        too_large = next((v for v in series if _out_of_range(v)), None)
        if too_large is not None:
            raise ValueError(
                f"{where} holds the value {decimal.Decimal(too_large):.3e}, out of float64's "
                "range (magnitudes up to about 1.8e308)."
            )
    values += 0.0  # -0.0 + 0.0 is 0.0
    return values


def _floats_of_objects(series):
    """``float`` of each value, NaN where null; nulls are looked for (a pass of its own) only
    once a value turns out not to be a number."""
    try:
        return np.asarray(series.to_numpy(), dtype=np.float64)
    except TypeError:  # None or pd.NA, which float() refuses
        return series.to_numpy(dtype=np.float64, na_value=np.nan)


def _out_of_range(value):
    """Whether ``value`` is a finite number that float64 cannot hold."""
    if isinstance(value, decimal.Decimal):
        return value.is_finite() and math.isinf(float(value))
    try:
        float(value)
    except OverflowError:
        return True
    return False


def _days_since_epoch(series):
    """Days since 1970-01-01 as float64 (UTC for time-zone-aware values), NaN where null.

    Whole days and the fraction of a day are taken apart on the integer ticks, so the same
    instant gives the same float in any unit: a count of nanoseconds has more digits than
    float64 holds, and dividing it as a float would round twice.
    """
    if isinstance(series.dtype, pd.ArrowDtype):  # Arrow holds aware timestamps in UTC
        values = series.array.__arrow_array__().to_numpy()
    else:
        if series.dtype == object:
            series = pd.to_datetime(series)
        if getattr(series.dt, "tz", None) is not None:
            series = series.dt.tz_convert("UTC").dt.tz_localize(None)
        values = series.to_numpy()
    if values.dtype.kind != "M":
        values = values.astype("datetime64[ns]")
    unit = np.datetime_data(values.dtype)[0]
    ticks_per_day = np.timedelta64(1, "D") // np.timedelta64(1, unit)
    whole, part = np.divmod(values.view(np.int64), ticks_per_day)
    days = whole + part / ticks_per_day
    days[np.isnat(values)] = np.nan
    return days


def factorize(series):
    """(codes, names): an integer code per row (``-1`` for null) and each code's category."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy()
        uniques = series.cat.categories
    elif isinstance(series.array, pd.arrays.ArrowStringArray):
        codes, uniques = _arrow_factorize(series.array.__arrow_array__())
    else:
        codes, uniques = pd.factorize(series)
    return np.asarray(codes), [str(u) for u in uniques]


def _arrow_factorize(strings):
    """``pd.factorize`` of a pyarrow ChunkedArray of strings, by pyarrow's own hashing (faster
    than pandas' on Arrow-backed strings, with 32-bit codes)."""
    encoded = pc.dictionary_encode(strings).unify_dictionaries()
    if encoded.num_chunks == 0:
        return np.empty(0, dtype=np.int32), []
    codes = np.concatenate([pc.fill_null(chunk.indices, -1).to_numpy() for chunk in encoded.chunks])
    return codes, encoded.chunk(0).dictionary.to_pylist()


def encode(numeric, columns, n_rows, order=None):
    """A table's block: its numeric columns, then its categorical ones one-hot encoded.

    Parameters
    ----------
    numeric : list of ndarray of shape (n_rows,)
        The numeric columns, placed first.
    columns : list of (codes, names, categories, offset)
        Per categorical column its :func:`factorize` result, the categories that get a
        target column (in order) and the position of the first of them among the one-hot
        columns.
    n_rows : int
    order : {None, "C", "F"}
        None for a CSR matrix (numeric zeros not stored), else a dense array in that order.

    Returns
    -------
    scipy.sparse.csr_matrix or ndarray of shape (n_rows, len(numeric) + one-hot width)
        CSR column indices are sorted within each row; a null category has no entry.
    """
    n_numeric = len(numeric)
    places, width = [], n_numeric
    for codes, names, categories, offset in columns:
        place = pd.Index(categories).get_indexer(names)
        places.append(np.append(np.where(place >= 0, place + offset + n_numeric, -1), -1))
        width = max(width, n_numeric + offset + len(categories))
    if order == "F":  # every column written once, contiguously
        out = np.empty((n_rows, width), order="F")
        written = np.zeros(width, dtype=bool)
        written[:n_numeric] = True
        for j, values in enumerate(numeric):
            out[:, j] = values
        for (codes, names, *_), place in zip(columns, places):
            small = codes.astype(np.min_scalar_type(-len(names) - 1), copy=False)
            for code in np.flatnonzero(place[:-1] >= 0):
                out[:, place[code]] = small == code
                written[place[code]] = True
        out[:, ~written] = 0.0
        return out
    dense = np.column_stack(numeric) if numeric else None
    if order == "C" and not columns:
        return np.zeros((n_rows, 0)) if dense is None else dense
    if order == "C":
        out = np.zeros((n_rows, width))
        if n_numeric:
            out[:, :n_numeric] = dense
        for (codes, *_), place in zip(columns, places):
            positions = place[codes]  # code -1 (null) picks the -1
            rows = np.flatnonzero(positions >= 0)
            out.reshape(-1)[rows * width + positions[rows]] = 1.0
        return out
    # rows in chunks, so that the temporary per-cell arrays stay small next to the result
    step = get_config()["table_chunk_rows"]
    chunks = [(lo, min(lo + step, n_rows)) for lo in range(0, n_rows, step)]
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    for lo, hi in chunks:
        stored = _chunk(columns, places, dense, lo, hi)[0]
        indptr[lo + 1:hi + 1] = stored.sum(axis=1, dtype=np.int64)
    np.cumsum(indptr, out=indptr)
    indices = np.empty(indptr[-1], dtype=np.int32)
    data = np.empty(indptr[-1], dtype=np.float64)
    for lo, hi in chunks:
        stored, positions, values = _chunk(columns, places, dense, lo, hi)
        indices[indptr[lo]:indptr[hi]] = positions[stored]
        data[indptr[lo]:indptr[hi]] = values[stored]
    return sp.csr_matrix((data, indices, indptr), shape=(n_rows, width))


def stored_values(numeric, columns):
    """The number of values :func:`encode` stores in CSR: nonzero numbers, non-null codes."""
    nnz = sum(int(np.count_nonzero(values)) for values in numeric)
    return nnz + sum(int(np.count_nonzero(codes >= 0)) for codes, *_ in columns)


def _chunk(columns, places, dense, lo, hi):
    """(stored mask, column positions, values) of rows ``lo:hi`` of a CSR one-hot block."""
    n_dense = 0 if dense is None else dense.shape[1]
    positions = np.empty((hi - lo, n_dense + len(columns)), dtype=np.int32)
    values = np.ones(positions.shape)
    positions[:, :n_dense] = np.arange(n_dense)
    for j, ((codes, *_), place) in enumerate(zip(columns, places)):
        positions[:, n_dense + j] = place[codes[lo:hi]]  # code -1 (null) picks the -1
    stored = positions >= 0
    if n_dense:
        values[:, :n_dense] = dense[lo:hi]
        stored[:, :n_dense] = dense[lo:hi] != 0
    return stored, positions, values
