"""What narwhals asks of a dataframe when scikit-learn selects a NormalizedMatrix's columns.

scikit-learn selects columns by name only in dataframes, and it recognizes them through
narwhals: an object with ``__narwhals_dataframe__`` is one. It then reads the column names
(``feature_names_in_``; string columns in ``ColumnTransformer`` and ``partial_dependence``)
and takes rows and columns through narwhals (``sklearn.utils._safe_indexing``).
:class:`MatrixFrame` answers those requests with the matrix's own selections, so nothing is
joined that a numpy array would not give either: a selection of rows or columns is a
NormalizedMatrix again, one column or one row a numpy array. It is no dataframe library:
narwhals' expressions (which a boolean mask of rows, or of unnamed columns, goes through) are
not there, and asking for them raises a ``TypeError`` that says to select by position.

A matrix without ``feature_names`` has the column positions as names, as a pandas DataFrame
without column names has; scikit-learn records no feature names from those.
"""

import numbers

import narwhals as nw
import numpy as np


class MatrixFrame:
    """A NormalizedMatrix seen by narwhals as an eager dataframe of float columns."""

    _implementation = nw.Implementation.UNKNOWN

    def __init__(self, matrix, version=None):
        self._native_frame = matrix
        self._version = version

    def __narwhals_dataframe__(self):
        return self

    def _with_version(self, version):
        return MatrixFrame(self._native_frame, version)

    @property
    def native(self):
        return self._native_frame

    @property
    def columns(self):
        names = self._native_frame.feature_names
        return list(range(self._native_frame.shape[1])) if names is None else list(names)

    @property
    def shape(self):
        return self._native_frame.shape

    @property
    def schema(self):
        dtypes = self._version.dtypes
        dtype = dtypes.Float32() if self._native_frame.dtype.itemsize == 4 else dtypes.Float64()
        return dict.fromkeys(self.columns, dtype)

    def __narwhals_namespace__(self):
        raise TypeError(
            "A NormalizedMatrix seen as a dataframe selects rows and columns by position (or "
            "columns by name), not by narwhals expressions or boolean masks; select with "
            "integer indices (numpy.flatnonzero(mask)) instead."
        )

    def __getitem__(self, key):
        """``frame[rows, columns]``: names (or, without names, positions) select columns; a
        single row stays a frame of one row."""
        rows, columns = key
        rows = [rows] if isinstance(rows, numbers.Integral) else _positions(rows)
        return MatrixFrame(self._native_frame[rows, columns], self._version)

    def iter_columns(self):
        joined = self._native_frame.backend.to_dense(self._native_frame.materialize())
        for position, name in enumerate(self.columns):
            yield MatrixColumn(joined[:, position], name, self._version)

    def simple_select(self, *names):
        return self[:, list(names)]

    def get_column(self, name):
        return MatrixColumn(self._native_frame[:, name], name, self._version)


def _positions(rows):
    """Rows given as a list of Python ints, as an integer array; other keys as they are.

    scikit-learn hands narwhals the rows of a fold as such a list (``_safe_indexing`` turns
    the splitter's array into one), for every candidate of a search and every fold.
    ``np.fromiter`` reads it back without numpy's type discovery over every element, the
    slow part of ``np.asarray`` on a long list.
    """
    if isinstance(rows, list) and rows and type(rows[0]) is int and type(rows[-1]) is int:
        return np.fromiter(rows, dtype=np.int64, count=len(rows))
    return rows


class MatrixColumn:
    """One column of a :class:`MatrixFrame`, joined: a 1-D numpy array."""

    _implementation = nw.Implementation.UNKNOWN

    def __init__(self, values, name, version=None):
        self.native = values
        self.name = name
        self._version = version

    def __narwhals_series__(self):
        return self

    def _with_version(self, version):
        return MatrixColumn(self.native, self.name, version)

    def __len__(self):
        return len(self.native)

    def item(self, index=None):
        return self.native.item() if index is None else self.native[index].item()
