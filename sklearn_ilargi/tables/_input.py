"""Read one input table and encode its columns as numbers.

A table may be a pandas DataFrame, a pyarrow Table, a path to a Parquet file or a polars
DataFrame. Columns are read one at a time and only when needed (keys, features, target), so a
wide Parquet file is never loaded whole.

Encoding, per column kind:

- numeric and boolean: float64;
- decimal (TPC-H prices): float64;
- date and datetime: days since 1970-01-01 as float64 (fractional for datetimes; time zones are
  converted to UTC first);
- categorical and string: one-hot, one column per category of *this* table, kept sparse.

Nulls in a numeric column become ``fill_value``; a null category has no one-hot entry (all
zeros), as ``pandas.get_dummies`` does.
"""

import decimal
import os

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import scipy.sparse as sp

NUMERIC, CATEGORICAL, DATE, OTHER = "numeric", "categorical", "date", "other"


class InputTable:
    """A named input table whose columns are read lazily as pandas Series.

    Parameters
    ----------
    data : DataFrame, pyarrow.Table, str, os.PathLike or polars.DataFrame
    name : str
        Used in error messages and source names.
    """

    def __init__(self, data, name):
        self.name = name
        self._frame = None
        self._arrow = None
        self._parquet = None
        if isinstance(data, pd.DataFrame):
            self._frame = data
            columns = list(data.columns)
            n_rows = len(data)
        elif isinstance(data, (str, os.PathLike)):
            import pyarrow.parquet as pq

            if not os.path.exists(data):
                raise FileNotFoundError(f"Table {name!r}: no Parquet file at {os.fspath(data)!r}.")
            self._parquet = pq.ParquetFile(data)
            columns = list(self._parquet.schema_arrow.names)
            n_rows = self._parquet.metadata.num_rows
        elif _is_arrow_table(data):
            self._arrow = data
            columns = list(data.column_names)
            n_rows = data.num_rows
        elif _is_polars_frame(data):
            self._arrow = data.to_arrow()
            columns = list(self._arrow.column_names)
            n_rows = self._arrow.num_rows
        else:
            raise TypeError(
                f"Table {name!r} is a {type(data).__name__}; expected a pandas DataFrame, a "
                "pyarrow Table, a path to a Parquet file or a polars DataFrame."
            )
        if len(set(columns)) != len(columns):
            seen, dup = set(), []
            for c in columns:
                if c in seen:
                    dup.append(c)
                seen.add(c)
            raise ValueError(f"Table {name!r} has duplicated column names {dup}.")
        self.columns = [str(c) if not isinstance(c, str) else c for c in columns]
        self._labels = dict(zip(self.columns, columns))
        self.n_rows = int(n_rows)
        if self.n_rows == 0:
            raise ValueError(f"Table {name!r} is empty (0 rows).")
        self._cache = {}

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
            series = self._frame[self._labels[column]]
        else:
            if self._arrow is not None:
                array = self._arrow.column(self._labels[column])
            else:
                array = self._parquet.read(columns=[column]).column(0)
            series = _arrow_to_series(array)
        self._cache[column] = series
        return series

    def factorized(self, column):
        """Column ``column`` factorized: (codes, category names), computed once."""
        key = ("factorized", column)
        if key not in self._cache:
            self._cache[key] = factorize(self.column(column))
        return self._cache[key]

    def release(self):
        """Forget the columns read so far (they are encoded by then)."""
        self._cache = {}


def _is_arrow_table(data):
    module = type(data).__module__
    return module.startswith("pyarrow") and hasattr(data, "column_names")


def _is_polars_frame(data):
    return type(data).__module__.startswith("polars") and hasattr(data, "to_arrow")


def _arrow_to_series(array):
    import pyarrow as pa
    import pyarrow.types as pat

    kind = array.type
    if pat.is_decimal(kind):
        array = array.cast(pa.float64())
    elif pat.is_dictionary(kind):
        return pd.Series(array.to_pandas())
    if pat.is_date(kind):
        return pd.Series(array.to_pandas(date_as_object=False))
    return pd.Series(array.to_pandas())


def column_kind(series):
    """The kind of a column: numeric (incl. bool, decimal), categorical, date or other."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return CATEGORICAL
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        return NUMERIC
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return DATE
    if pd.api.types.is_string_dtype(dtype) and dtype != object:
        return CATEGORICAL
    if isinstance(dtype, pd.ArrowDtype):
        return _arrow_kind(dtype.pyarrow_dtype)
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
    ) or pat.is_boolean(arrow_type):
        return NUMERIC
    if pat.is_date(arrow_type) or pat.is_timestamp(arrow_type):
        return DATE
    if pat.is_string(arrow_type) or pat.is_large_string(arrow_type) or pat.is_dictionary(
        arrow_type
    ):
        return CATEGORICAL
    return OTHER


def numeric_values(series, kind, fill_value, where):
    """A float64 vector; nulls become ``fill_value``."""
    if kind == DATE:
        values = _days_since_epoch(series)
    elif series.dtype == object:
        values = pd.to_numeric(
            series.map(lambda v: float(v) if isinstance(v, decimal.Decimal) else v),
            errors="coerce",
        ).to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    if not np.isfinite(values).all():
        if np.isinf(values).any():
            raise ValueError(f"{where} contains infinity.")
        values = np.where(np.isnan(values), fill_value, values)
    return values


def _days_since_epoch(series):
    if series.dtype == object:
        series = pd.to_datetime(series)
    if getattr(series.dt, "tz", None) is not None:
        series = series.dt.tz_convert("UTC").dt.tz_localize(None)
    values = series.to_numpy()
    if values.dtype.kind != "M":
        values = values.astype("datetime64[ns]")
    unit = np.datetime_data(values.dtype)[0]
    days = values.view(np.int64) / (np.timedelta64(1, "D") / np.timedelta64(1, unit))
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
    chunks = [(lo, min(lo + _CHUNK_ROWS, n_rows)) for lo in range(0, n_rows, _CHUNK_ROWS)]
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


_CHUNK_ROWS = 1 << 18


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
