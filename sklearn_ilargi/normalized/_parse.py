"""Check and normalize the user's sources, indicator matrices and mapping matrices."""

import numbers

import numpy as np
import scipy.sparse as sp

from ..backend._numpy import all_finite
from ._row_map import RowMap, index_dtype


def source_name(k, names):
    return f"source {k}" if names is None else f"source {k} ({names[k]!r})"


def plain_array(a, where):
    """``a`` without numpy's special array classes: an ``np.matrix`` becomes an ndarray (its
    products and reductions stay 2-D), a masked array is refused.

    A masked array's values under its mask (often NaN) would otherwise pass as data: numpy
    drops the mask on conversion.
    """
    if isinstance(a, np.ma.MaskedArray):
        raise TypeError(
            f"{where} is a masked array; its masked values would pass as data. Call "
            "a.filled(value) to say what they are."
        )
    if isinstance(a, np.matrix):
        return np.asarray(a)
    return a


def check_source(source, where):
    """A 2-D finite numeric numpy array or CSR matrix; ints and bools become float64."""
    source = plain_array(source, where)
    if sp.issparse(source):
        source = sp.csr_matrix(source)
        data = source.data
    else:
        if not hasattr(source, "shape") or not hasattr(source, "dtype"):
            source = np.asarray(source)
        if source.dtype == object:
            raise TypeError(f"{where} has dtype object; sources must be numeric.")
        data = source
        if data.ndim != 2:
            raise ValueError(f"{where} must be 2-D, got {data.ndim}-D with shape {data.shape}.")
    kind = source.dtype.kind
    if kind not in "biuf":
        raise TypeError(f"{where} has dtype {source.dtype}; sources must be numeric.")
    if kind != "f" or source.dtype.itemsize < 4:
        source = source.astype(np.float64)
        data = source.data if sp.issparse(source) else source
    if not all_finite(data):
        raise ValueError(f"{where} contains NaN or infinity.")
    return source


def result_dtype(sources):
    """float32 when every source is float32, float64 otherwise."""
    if all(s.dtype == np.float32 for s in sources):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def _check_binary(matrix, what, where):
    data = matrix.data if sp.issparse(matrix) else matrix
    if not np.isin(data, (0, 1)).all():
        raise ValueError(f"The {what} of {where} must hold only 0 and 1.")


def as_row_map(indicator, n_source, where):
    """A :class:`RowMap` from a 1-D row map or an ``n_target x n_source`` indicator matrix."""
    indicator = plain_array(indicator, f"The indicator of {where}")
    if isinstance(indicator, RowMap):
        if indicator.n_source != n_source:
            raise ValueError(
                f"The row map of {where} points into {indicator.n_source} rows but the source "
                f"has {n_source}."
            )
        return indicator
    if sp.issparse(indicator) or np.ndim(indicator) == 2:
        return _row_map_from_indicator(indicator, n_source, where)
    indices = np.asarray(indicator)
    if indices.ndim != 1:
        raise ValueError(
            f"The indicator of {where} must be a 1-D row map or a 2-D indicator matrix, "
            f"got {indices.ndim}-D."
        )
    if indices.size and indices.dtype.kind not in "iu":
        raise TypeError(
            f"The row map of {where} must hold integers, got dtype {indices.dtype}."
        )
    if indices.size and (indices.min() < -1 or indices.max() >= n_source):
        raise ValueError(
            f"The row map of {where} points outside its {n_source} rows "
            f"(values must be in [-1, {n_source}))."
        )
    return _row_map(indices.astype(index_dtype(n_source), copy=False), n_source)


_IDENTITY_CHUNK = 1 << 20


def is_identity(indices, n_source):
    """Whether a row map is a fact table's own rows, in order (checked a chunk at a time, so
    that no array as long as the map is made)."""
    if len(indices) != n_source:
        return False
    ramp = np.arange(min(n_source, _IDENTITY_CHUNK))
    for start in range(0, n_source, _IDENTITY_CHUNK):
        chunk = indices[start:start + _IDENTITY_CHUNK]
        if not np.array_equal(chunk, ramp[:len(chunk)] + start):
            return False
    return True


def _row_map(indices, n_source):
    """A RowMap; the identity (a fact table's own rows, in order) is kept implicit."""
    if is_identity(indices, n_source):
        return RowMap.identity(n_source)
    return RowMap(indices, n_source)


def _row_map_from_indicator(indicator, n_source, where):
    matrix = sp.csr_matrix(indicator)
    if matrix.shape[1] != n_source:
        raise ValueError(
            f"The indicator matrix of {where} has {matrix.shape[1]} columns but the source "
            f"has {n_source} rows."
        )
    matrix.eliminate_zeros()
    _check_binary(matrix, "indicator matrix", where)
    per_row = np.diff(matrix.indptr)
    if (per_row > 1).any():
        row = int(np.flatnonzero(per_row > 1)[0])
        raise ValueError(
            f"Row {row} of the indicator matrix of {where} has {per_row[row]} ones; a target "
            "row takes at most one row from each source."
        )
    indices = np.full(matrix.shape[0], -1, dtype=index_dtype(n_source))
    indices[per_row == 1] = matrix.indices
    return _row_map(indices, n_source)


def as_column_map(mapping, n_source_columns, n_columns, where):
    """A 1-D column map (target column per source column, ``-1`` unused) and its width."""
    mapping = plain_array(mapping, f"The mapping of {where}")
    if sp.issparse(mapping) or np.ndim(mapping) == 2:
        matrix = sp.csc_matrix(mapping)
        if matrix.shape[1] != n_source_columns:
            raise ValueError(
                f"The mapping matrix of {where} has {matrix.shape[1]} columns but the source "
                f"has {n_source_columns}."
            )
        matrix.eliminate_zeros()
        _check_binary(matrix, "mapping matrix", where)
        per_column = np.diff(matrix.indptr)
        if (per_column > 1).any():
            col = int(np.flatnonzero(per_column > 1)[0])
            raise ValueError(
                f"Column {col} of {where} is mapped to {per_column[col]} target columns; "
                "a source column maps to at most one."
            )
        column_map = np.full(n_source_columns, -1, dtype=np.int64)
        column_map[per_column == 1] = matrix.indices
        return column_map, matrix.shape[0]
    column_map = np.asarray(mapping)
    if column_map.ndim != 1 or column_map.shape[0] != n_source_columns:
        raise ValueError(
            f"The column map of {where} must be 1-D of length {n_source_columns} (one entry "
            f"per source column), got shape {column_map.shape}."
        )
    if column_map.size and column_map.dtype.kind not in "iu":
        raise TypeError(
            f"The column map of {where} must hold integers, got dtype {column_map.dtype}."
        )
    column_map = column_map.astype(np.int64)
    if column_map.size and column_map.min() < -1:
        raise ValueError(f"The column map of {where} holds values below -1.")
    if n_columns is not None and column_map.size and column_map.max() >= n_columns:
        raise ValueError(
            f"The column map of {where} points to column {column_map.max()} but the target "
            f"has {n_columns} columns."
        )
    width = int(column_map.max()) + 1 if column_map.size else 0
    return column_map, width


def check_unique_targets(column_map, where):
    used = column_map[column_map >= 0]
    values, counts = np.unique(used, return_counts=True)
    if (counts > 1).any():
        raise ValueError(
            f"Target column {values[counts > 1][0]} is filled by more than one column of {where}."
        )


def check_n_columns(n_columns):
    if n_columns is None:
        return None
    if not isinstance(n_columns, numbers.Integral) or n_columns < 0:
        raise ValueError(f"n_columns must be a non-negative integer, got {n_columns!r}.")
    return int(n_columns)
