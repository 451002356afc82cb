"""Selecting rows and columns of a normalized matrix, and setting whole columns.

Selected rows are row maps taken at those rows, over the same sources; selected columns are
each block's columns restricted. Keys are read as numpy reads them: slices, boolean masks,
integers, and column names where the matrix has feature names.
"""

import numbers

import numpy as np

from ..exceptions import NotFactorizableError


class SelectionMixin:
    """Indexing of :class:`~sklearn_ilargi.NormalizedMatrix`: ``X[rows, columns]``,
    ``X[:, columns] = values`` and :meth:`copy`.

    The host class holds ``blocks``, ``shape``, ``shift``, ``feature_names`` and
    ``backend``, and gives ``_like``, ``materialize``, ``_column_operand``, ``_per_column``
    and ``drop_device_copy``.
    """

    def __getitem__(self, key):
        """Rows and columns, selected as numpy selects them.

        ``X[rows]``, ``X[rows, columns]`` and ``X[:, columns]`` are normalized matrices over
        the same sources (not copied), for ``rows`` and ``columns`` a slice, a boolean mask
        or integers; columns can also be given by name (``X[:, ["a", "b"]]``, from
        :attr:`feature_names`). A single row or column (an integer, or one name) is joined,
        as a 1-D array; a single cell is a scalar.
        """
        rows, columns = _split_key(key)
        one_row, one_column = _is_single(rows), _is_single(columns)
        out = self
        if columns is not None:
            out = out._select_columns(self._column_positions([columns] if one_column else columns))
        if rows is not None:
            out = out._select_rows(_row_indices([rows] if one_row else rows, self.shape[0]))
        if not (one_row or one_column):
            return out
        joined = out.materialize(sparse=False)
        if one_row:
            return joined[0, 0] if one_column else joined[0]
        return joined[:, 0]

    def _column_positions(self, key):
        """The column indices of ``key``: a slice, a boolean mask, integers or names."""
        names = _names_in(key)
        if names is None:
            return _column_indices(key, self.shape[1])
        if self.feature_names is None:
            raise IndexError(
                "Columns can be selected by name only in a matrix with feature_names; this one "
                "has none."
            )
        position = {name: i for i, name in reversed(list(enumerate(self.feature_names)))}
        missing = [name for name in names if name not in position]
        if missing:
            raise KeyError(f"No columns named {missing[:10]} in feature_names.")
        return np.array([position[name] for name in names], dtype=np.int64)

    def copy(self):
        """A matrix that can be changed (see :meth:`__setitem__`) without changing this one.

        The sources are shared, not copied: no operation changes them.

        Returns
        -------
        NormalizedMatrix
            The same sources and maps, with a shift of its own.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices(
        ...     [np.array([[1.0], [2.0]]), np.array([[5.0]])], [np.arange(2), [0, 0]])
        >>> changed = nm.copy()
        >>> changed[:, 1] = 0.0
        >>> changed.materialize()
        array([[1., 0.],
               [2., 0.]])
        >>> nm.materialize()
        array([[1., 5.],
               [2., 5.]])
        """
        return self._like(shift=None if self.shift is None else self.shift.copy())

    def __setitem__(self, key, value):
        """``X[:, columns] = value``: whole columns set to one value each, or all to one.

        It stays factorized: the columns leave their blocks and the values go into the shift.
        This is what ``sklearn.inspection.partial_dependence`` does to a :meth:`copy` of its
        ``X``, one grid value at a time. Setting some rows only, or values that vary from
        row to row, has no factorized form and raises :class:`NotFactorizableError`.
        """
        rows, columns = _split_key(key)
        if rows is not None:
            raise NotFactorizableError(
                "Setting some rows of a NormalizedMatrix has no factorized form; only whole "
                "columns can be set (X[:, columns] = one value per column)."
            )
        positions = np.arange(self.shape[1]) if columns is None else self._column_positions(
            [columns] if _is_single(columns) else columns)
        values = self._column_operand(value, "Assignment", width=len(positions))
        kept = np.setdiff1d(np.arange(self.shape[1]), positions)
        narrowed = self._select_columns(kept)
        shift = self._per_column(0.0) if self.shift is None else self.shift.copy()
        shift[positions] = values
        self.blocks = [b.with_(columns=kept[b.columns]) for b in narrowed.blocks]
        self.shift = shift
        self.drop_device_copy()

    def _select_rows(self, rows):
        rows = np.array(rows, copy=True)  # the maps remember it (RowMap.take)
        taken = {}
        blocks = []
        for block in self.blocks:
            key = id(block.row_map)
            if key not in taken:
                taken[key] = block.row_map.take(rows)
            blocks.append(block.with_(row_map=taken[key]))
        return self._like(blocks, shape=(len(rows), self.shape[1]))

    def _select_columns(self, columns):
        """The columns at the indices ``columns`` (an integer array), in that order."""
        be = self.backend
        blocks = []
        for block in self.blocks:
            position = np.full(self.shape[1], -1)
            position[block.columns] = np.arange(len(block.columns))
            picked = position[columns]
            keep = np.flatnonzero(picked >= 0)
            if keep.size == 0:
                continue
            source = block.source
            if not np.array_equal(picked[keep], np.arange(source.shape[1])):
                source = be.take_columns(source, picked[keep])
            blocks.append(block.with_(source=source, columns=keep))
        shift = None if self.shift is None else self.shift[columns]
        names = None if self.feature_names is None else self.feature_names[columns]
        return self._like(blocks, shape=(self.shape[0], len(columns)), shift=shift,
                          feature_names=names)


def _is_single(key):
    """Whether an index picks one row or column: an integer (not a bool) or a name."""
    return isinstance(key, (numbers.Integral, str)) and not isinstance(key, bool)


def _names_in(key):
    """The column names of an index made of names (a str, or a list or array of them), as a
    list; None for any other index."""
    if isinstance(key, str):
        return [key]
    if isinstance(key, slice):
        return None
    key = np.asarray(key)
    if key.ndim == 1 and (key.dtype.kind in "US" or key.dtype == object and key.size and all(
            isinstance(name, str) for name in key)):
        return key.tolist()
    return None


def _is_everything(key):
    return key is Ellipsis or (isinstance(key, slice) and key == slice(None))


def _split_key(key):
    """(rows, columns) of an index; ``None`` where everything is taken."""
    if not isinstance(key, tuple):
        return (None if _is_everything(key) else key), None
    if len(key) == 1:
        return _split_key(key[0])
    if len(key) != 2:
        raise IndexError(f"A NormalizedMatrix is 2-D; got an index with {len(key)} parts.")
    rows, columns = key
    if rows is Ellipsis and columns is Ellipsis:
        raise IndexError("An index can only have a single ellipsis ('...').")
    return (
        None if _is_everything(rows) else rows,
        None if _is_everything(columns) else columns,
    )


def _indices(key, length, what):
    if isinstance(key, slice):
        return np.arange(length)[key]
    key = np.asarray(key)
    if key.dtype == bool:
        if key.shape != (length,):
            raise IndexError(
                f"Boolean {what} index has shape {key.shape}; expected ({length},)."
            )
        return np.flatnonzero(key)
    if key.ndim != 1 or (key.size and key.dtype.kind not in "iu"):
        raise IndexError(
            f"{what.capitalize()} index must be a slice, a boolean mask or 1-D integers, "
            f"got dtype {key.dtype} and shape {key.shape}."
        )
    key = key.astype(np.int64, copy=False)
    if not key.size:
        return key
    lowest, highest = key.min(), key.max()
    if lowest < -length or highest >= length:
        raise IndexError(f"{what.capitalize()} index out of range for {length} {what}s.")
    # Positions from the end where some are negative; else the key itself (a fold's rows).
    return np.where(key < 0, key + length, key) if lowest < 0 else key


def _row_indices(key, length):
    return _indices(key, length, "row")


def _column_indices(key, length):
    if isinstance(key, numbers.Integral):
        key = [key]
    return _indices(key, length, "column")
