"""NormalizedMatrix: the target matrix ``T``, held as its sources plus row and column maps."""

import numbers
import warnings

import numpy as np

from .. import ops
from ..backend import device_of, get_backend, to_numpy
from ..exceptions import MaterializationWarning, NotFactorizableError
from ._blocks import Block, gather_thin_sources, make_blocks
from ._parse import (
    as_column_map,
    as_row_map,
    check_n_columns,
    check_source,
    check_unique_targets,
    result_dtype,
    source_name,
)
from ._storage import storage_layout


class NormalizedMatrix:
    """A training matrix that is never built: its sources and how they integrate.

    ``T = sum_k I_k S_k M_k^T`` (first source wins where two fill the same cell), plus an
    optional rank-one ``shift`` added to every row (``T + 1 shift^T``), which is how centering
    stays factorized. Products, grams, sums, element-wise maps and row selection run over the
    sources; only :meth:`materialize` (or ``numpy.asarray``, with a warning) builds ``T``.

    Build one with :meth:`from_matrices` (or from tables with ``from_tables``).

    Attributes
    ----------
    shape : tuple of int
    dtype : numpy.dtype
        float32 when every source is float32, float64 otherwise.
    blocks : list of Block
        The disjoint blocks ``T = sum_b G_b S_b P_b^T``.
    shift : ndarray of shape (n_columns,) or None
    feature_names : ndarray of str or None
    device : {"cpu", "gpu"}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import NormalizedMatrix
    >>> fact = np.array([[1.0], [2.0], [3.0]])
    >>> dim = np.array([[10.0, 20.0], [30.0, 40.0]])
    >>> nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(3), [0, 1, 0]])
    >>> nm.shape
    (3, 3)
    >>> nm @ np.ones(3)
    array([31., 72., 33.])
    """

    __array_ufunc__ = None  # ndarray @ nm defers to __rmatmul__

    def __init__(self, blocks, shape, dtype, *, shift=None, feature_names=None, device="cpu"):
        self.blocks = list(blocks)
        self.shape = (int(shape[0]), int(shape[1]))
        self.dtype = np.dtype(dtype)
        self.shift = shift
        self.feature_names = feature_names
        self.device = device

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_matrices(
        cls, sources, indicators, mappings=None, *, n_columns=None, feature_names=None,
        source_names=None,
    ):
        """Build from source matrices, indicator matrices (row maps) and mapping matrices.

        Parameters
        ----------
        sources : list of array-like or sparse matrix
            ``S_k`` of shape (n_k, c_k); numeric and finite.
        indicators : list
            Per source a row map (1-D integers of length n_T, ``-1`` for "no row", or a
            :class:`RowMap`) or an ``n_T x n_k`` binary indicator matrix with at most one 1
            per row. Sources given the same object share it, and so share its gathers.
        mappings : list or None
            Per source a column map (1-D integers of length c_k: target column, ``-1`` for
            unused) or a ``c_T x c_k`` binary mapping matrix. ``None`` places the sources side
            by side in order.
        n_columns : int, optional
            Number of target columns, when column maps leave the last ones empty.
        feature_names : sequence of str, optional
            One name per target column.
        source_names : sequence of str, optional
            Names used in error messages.

        Returns
        -------
        NormalizedMatrix
        """
        sources = list(sources)
        indicators = list(indicators)
        if not sources:
            raise ValueError("A NormalizedMatrix needs at least one source.")
        if len(indicators) != len(sources):
            raise ValueError(
                f"Got {len(sources)} sources but {len(indicators)} indicators; give one each."
            )
        if mappings is not None and len(mappings) != len(sources):
            raise ValueError(
                f"Got {len(sources)} sources but {len(mappings)} mappings; give one each."
            )
        if source_names is not None and len(source_names) != len(sources):
            raise ValueError("source_names must name every source.")
        on_gpu = any(device_of(s) == "gpu" for s in sources)
        if on_gpu:  # checked and cut into blocks on the host, then moved back once
            sources, indicators = to_numpy(sources), to_numpy(indicators)
            mappings = None if mappings is None else to_numpy(list(mappings))
        names = [source_name(k, source_names) for k in range(len(sources))]
        sources = [check_source(s, name) for s, name in zip(sources, names)]
        parsed = {}  # one RowMap per indicator object: sources sharing it share every gather
        row_maps = []
        for indicator, source, name in zip(indicators, sources, names):
            key = (id(indicator), source.shape[0])
            if key not in parsed:
                parsed[key] = as_row_map(indicator, source.shape[0], name)
            row_maps.append(parsed[key])
        n_rows = row_maps[0].n_target
        for row_map, name in zip(row_maps, names):
            if row_map.n_target != n_rows:
                raise ValueError(
                    f"The indicator of {name} covers {row_map.n_target} target rows but the "
                    f"one of {names[0]} covers {n_rows}; all must cover the same target rows."
                )
        n_columns = check_n_columns(n_columns)
        column_maps, widths = _column_maps(sources, mappings, n_columns, names)
        if n_columns is None:
            n_columns = max(widths)
        for column_map, name in zip(column_maps, names):
            check_unique_targets(column_map, name)
        dtype = result_dtype(sources)
        sources = [s.astype(dtype, copy=False) for s in sources]
        backend = get_backend("cpu")
        blocks = gather_thin_sources([
            block.with_(source=storage_layout(block.source, is_fact=block.row_map.is_identity))
            for block in make_blocks(sources, row_maps, column_maps, backend)
        ], n_rows, backend)
        nm = cls(
            blocks, (n_rows, n_columns), dtype,
            feature_names=_check_feature_names(feature_names, n_columns),
        )
        return nm.to("gpu", cache=False) if on_gpu else nm

    def _like(self, blocks=None, *, shape=None, shift="same", feature_names="same"):
        """A matrix like this one with some parts replaced (sources are shared, not copied)."""
        return NormalizedMatrix(
            self.blocks if blocks is None else blocks,
            self.shape if shape is None else shape,
            self.dtype,
            shift=self.shift if isinstance(shift, str) else shift,
            feature_names=(
                self.feature_names if isinstance(feature_names, str) else feature_names
            ),
            device=self.device,
        )

    def with_shift(self, shift):
        """This matrix with ``shift`` (a length-n_columns vector, or None) added to every row."""
        return self._like(shift=shift)

    # ------------------------------------------------------------------ basic properties
    @property
    def backend(self):
        return get_backend(self.device)

    @property
    def ndim(self):
        return 2

    @property
    def size(self):
        return self.shape[0] * self.shape[1]

    @property
    def T(self):
        return TransposedNormalizedMatrix(self)

    @property
    def nbytes(self):
        """Bytes held by the sources and row maps (what the factorized path reads)."""
        total, seen = 0, set()
        for block in self.blocks:
            if id(block.source) not in seen:
                seen.add(id(block.source))
                total += _nbytes(block.source)
            if block.row_map.indices is not None and id(block.row_map) not in seen:
                seen.add(id(block.row_map))
                total += block.row_map.indices.nbytes
        return total

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        shifted = ", shifted" if self.shift is not None else ""
        return (
            f"NormalizedMatrix(shape={self.shape}, dtype={self.dtype}, "
            f"blocks={len(self.blocks)}, device={self.device!r}{shifted})"
        )

    # ------------------------------------------------------------------ products
    def _operand(self, x, length, side, keep_sparse=False):
        be = self.backend
        if isinstance(x, (NormalizedMatrix, TransposedNormalizedMatrix)):
            raise TypeError(
                "Products of two normalized matrices other than nm.T @ nm are not supported."
            )
        if be.is_sparse(x):
            x = be.asarray(x) if keep_sparse else be.to_dense(be.asarray(x))
        else:
            x = be.asarray(x)
        if x.dtype.kind not in "biuf":
            raise TypeError(f"Cannot multiply a NormalizedMatrix by an array of dtype {x.dtype}.")
        if x.ndim not in (1, 2) or x.shape[0] != length:
            raise ValueError(
                f"matmul: {side} operand has shape {x.shape}; expected ({length},) or "
                f"({length}, p)."
            )
        if x.dtype.kind != "f":
            x = x.astype(self.dtype)
        return x

    def __matmul__(self, x):
        """``T @ x`` for ``x`` of shape (n_columns,) or (n_columns, p)."""
        return ops.matmul(self, self._operand(x, self.shape[1], "right"))

    def __rmatmul__(self, z):
        """``z @ T`` for ``z`` of shape (n_rows,) or (q, n_rows); a sparse ``z`` stays sparse."""
        z = self._operand(_transpose(z), self.shape[0], "left (transposed)", keep_sparse=True)
        return _transpose(ops.rmatmul(self, z))

    def gram(self, sample_weight=None):
        """``T.T @ diag(sample_weight) @ T`` as a dense (n_columns, n_columns) array."""
        return ops.gram(self, self._weights(sample_weight))

    def group_sums(self, labels, n_groups, sample_weight=None):
        """Column sums of each group of rows, ``T.T @ R`` for ``R`` the (weighted) one-hot of
        ``labels``, as a dense (n_columns, n_groups) array.

        ``labels`` holds each row's group, an integer in ``[0, n_groups)``.
        """
        labels = self.backend.asarray(labels)
        if labels.shape != (self.shape[0],) or labels.dtype.kind not in "iu":
            raise ValueError(
                f"labels must be integers of shape ({self.shape[0]},); got {labels.dtype} of "
                f"shape {labels.shape}."
            )
        if labels.size and not (0 <= int(labels.min()) and int(labels.max()) < n_groups):
            raise ValueError(f"labels must lie in [0, {n_groups}).")
        return ops.group_sums(self, labels, int(n_groups), self._weights(sample_weight))

    def _weights(self, sample_weight):
        if sample_weight is None:
            return None
        w = self.backend.asarray(sample_weight, dtype=self.dtype)
        if w.shape != (self.shape[0],):
            raise ValueError(
                f"sample_weight has shape {w.shape}; expected ({self.shape[0]},)."
            )
        return w

    # ------------------------------------------------------------------ reductions
    def sum(self, axis=None):
        """Sum of all cells (``axis=None``), of each column (0) or of each row (1)."""
        if axis is None:
            return ops.column_sums(self).sum()
        if axis in (0, -2):
            return ops.column_sums(self)
        if axis in (1, -1):
            return ops.row_sums(self)
        raise ValueError(f"axis must be None, 0 or 1, got {axis!r}.")

    def mean(self, axis=None):
        """Mean of all cells (``axis=None``), of each column (0) or of each row (1)."""
        count = {None: self.size, 0: self.shape[0], -2: self.shape[0]}.get(axis, self.shape[1])
        return self.sum(axis) / count

    def row_norms(self, squared=False):
        """Euclidean norm of each row (squared with ``squared=True``)."""
        sq = ops.row_sums_of_squares(self)
        return sq if squared else self.backend.xp.sqrt(sq)

    # ------------------------------------------------------------------ element-wise
    def _scaled(self, factors):
        be = self.backend
        if np.ndim(factors) == 0:
            blocks = [b.with_(source=b.source * factors) for b in self.blocks]
        else:
            blocks = [
                b.with_(source=be.scale_columns(b.source, factors[b.columns]))
                for b in self.blocks
            ]
        shift = None if self.shift is None else self.shift * factors
        return self._like(blocks, shift=shift)

    def _column_operand(self, other, op):
        """A scalar or a per-column vector; anything else cannot stay factorized."""
        if isinstance(other, numbers.Number) and not isinstance(other, bool):
            return other
        if isinstance(other, (NormalizedMatrix, TransposedNormalizedMatrix)):
            raise NotFactorizableError(
                f"{op} of two normalized matrices has no factorized form; materialize first."
            )
        arr = self.backend.asarray(other)
        if arr.ndim == 0:
            return arr.item()
        if arr.shape in ((self.shape[1],), (1, self.shape[1])) and arr.dtype.kind in "biuf":
            return arr.reshape(-1).astype(self.dtype)
        raise NotFactorizableError(
            f"{op} with an operand of shape {arr.shape} has no factorized form; only a scalar "
            f"or one value per column (shape ({self.shape[1]},)) keeps it factorized. "
            "Call materialize() first to do it on the joined matrix."
        )

    def __mul__(self, other):
        return self._scaled(self._column_operand(other, "Multiplication"))

    __rmul__ = __mul__

    def __truediv__(self, other):
        factors = self._column_operand(other, "Division")
        if bool((factors == 0).any() if np.ndim(factors) else factors == 0):
            raise ZeroDivisionError("Division of a NormalizedMatrix by zero.")
        return self._scaled(1 / factors)

    def __rtruediv__(self, other):
        raise NotFactorizableError(
            "c / nm divides by the zero cells of missing rows; it has no factorized form."
        )

    def __neg__(self):
        return self._scaled(-1)

    def __pos__(self):
        return self

    def __add__(self, other):
        """Adding a scalar or a per-column vector keeps a rank-one shift: exact."""
        offset = self._column_operand(other, "Addition")
        if np.ndim(offset) == 0:
            offset = self.backend.xp.full(self.shape[1], offset, dtype=self.dtype)
        shift = offset if self.shift is None else self.shift + offset
        return self._like(shift=shift)

    __radd__ = __add__

    def __sub__(self, other):
        return self + (-self._column_operand(other, "Subtraction"))

    def __rsub__(self, other):
        return (-self) + other

    def __pow__(self, power):
        if not isinstance(power, numbers.Real):
            raise NotFactorizableError("nm ** p is factorized for a scalar p only.")
        return self.apply(lambda v: v ** power, name=f"** {power}")

    def __abs__(self):
        return self.apply(abs, name="abs")

    def apply(self, func, *, name=None):
        """Apply ``func`` cell by cell; exact for any ``func`` with ``func(0) == 0``.

        The missing cells of left/outer joins are zeros and stay zeros, so ``func`` runs on the
        sources only. Raises :class:`NotFactorizableError` when ``func(0) != 0`` or the matrix
        has a shift (then the missing cells are not zero).
        """
        label = name or getattr(func, "__name__", repr(func))
        if self.shift is not None:
            raise NotFactorizableError(
                f"Element-wise {label} of a shifted (e.g. centered) matrix has no factorized "
                "form; apply it before shifting, or materialize()."
            )
        with np.errstate(all="ignore"):
            at_zero = np.asarray(func(np.zeros(1, dtype=self.dtype)))
        if at_zero.shape != (1,) or at_zero[0] != 0:
            raise NotFactorizableError(
                f"Element-wise {label} maps 0 to {at_zero.ravel()[:1]}; only functions with "
                "f(0) == 0 are exact over the sources (missing cells are 0). Use "
                "materialize() to apply it to the joined matrix."
            )
        be = self.backend
        blocks = []
        for block in self.blocks:
            with np.errstate(all="ignore"):
                source = be.map_values(block.source, func)
            if not be.all_finite(source):
                raise ValueError(f"Element-wise {label} produced NaN or infinity.")
            blocks.append(block.with_(source=source.astype(self.dtype, copy=False)))
        return self._like(blocks)

    # ------------------------------------------------------------------ selection
    def __getitem__(self, key):
        rows, columns = _split_key(key)
        out = self
        if columns is not None:
            out = out._select_columns(columns)
        if rows is not None:
            if isinstance(rows, numbers.Integral) and not isinstance(rows, bool):
                index = _row_indices([rows], self.shape[0])
                return _one_row(out._select_rows(index))
            out = out._select_rows(_row_indices(rows, self.shape[0]))
        return out

    def _select_rows(self, rows):
        taken = {}
        blocks = []
        for block in self.blocks:
            key = id(block.row_map)
            if key not in taken:
                taken[key] = block.row_map.take(rows)
            blocks.append(block.with_(row_map=taken[key]))
        return self._like(blocks, shape=(len(rows), self.shape[1]))

    def _select_columns(self, columns):
        columns = _column_indices(columns, self.shape[1])
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

    # ------------------------------------------------------------------ materialization
    def materialize(self, sparse=False):
        """Join: the target matrix as a dense array, or CSR with ``sparse=True``."""
        return ops.materialize(self, sparse=sparse)

    def toarray(self):
        """Same as ``materialize()``."""
        return self.materialize()

    def __array__(self, dtype=None, copy=None):
        warnings.warn(
            f"Materializing a {self.shape[0]} x {self.shape[1]} NormalizedMatrix into one "
            "array; call materialize() to do so on purpose.",
            MaterializationWarning,
            stacklevel=2,
        )
        out = self.backend.to_numpy(self.materialize())
        return out if dtype is None else out.astype(dtype, copy=False)

    # ------------------------------------------------------------------ devices
    def to(self, device, *, cache=True):
        """This matrix with its sources and row maps on ``device`` ("cpu" or "gpu").

        The copy is kept on this matrix, so that repeated fits (a grid search, say) transfer
        once; pickling and copying drop it. ``cache=False`` neither uses nor keeps it.
        """
        if device == self.device:
            return self
        copies = self.__dict__.setdefault("_device_copies", {}) if cache else {}
        if device in copies:
            return copies[device]
        target = get_backend(device)
        here = self.backend

        def move(a):
            return target.from_numpy(here.to_numpy(a))

        maps = {}
        blocks = []
        for block in self.blocks:
            key = id(block.row_map)
            if key not in maps:
                maps[key] = _move_row_map(block.row_map, here, target)
            blocks.append(block.with_(source=move(block.source), row_map=maps[key]))
        shift = None if self.shift is None else move(self.shift)
        moved = NormalizedMatrix(blocks, self.shape, self.dtype, shift=shift,
                                 feature_names=self.feature_names, device=device)
        copies[device] = moved
        return moved

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_device_copies", None)  # device memory is a cache, not part of the matrix
        return state


class TransposedNormalizedMatrix:
    """``nm.T``: a lazy view whose products run the transposed rewrites."""

    __array_ufunc__ = None

    def __init__(self, matrix):
        self.matrix = matrix

    @property
    def shape(self):
        return self.matrix.shape[::-1]

    @property
    def dtype(self):
        return self.matrix.dtype

    @property
    def ndim(self):
        return 2

    @property
    def T(self):
        return self.matrix

    def __matmul__(self, y):
        """``T.T @ y``; ``nm.T @ nm`` is the gram."""
        if y is self.matrix:
            return self.matrix.gram()
        return _transpose(self.matrix.__rmatmul__(_transpose(y)))

    def __rmatmul__(self, z):
        """``z @ T.T`` = ``(T @ z.T).T``."""
        return _transpose(self.matrix @ _transpose(z))

    def __repr__(self):
        return f"{self.matrix!r}.T"

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.matrix, dtype=dtype).T


# ---------------------------------------------------------------------- helpers
def _transpose(a):
    return a.T if getattr(a, "ndim", 0) == 2 else a


def _nbytes(a):
    if hasattr(a, "nnz"):
        return a.data.nbytes + a.indices.nbytes + a.indptr.nbytes
    return a.nbytes


def _move_row_map(row_map, here, target):
    from ._row_map import RowMap

    indices = None if row_map.indices is None else target.from_numpy(
        here.to_numpy(row_map.indices))
    return RowMap(indices, row_map.n_source, n_target=row_map.n_target,
                  has_missing=row_map.has_missing)


def _one_row(nm):
    return nm.backend.to_dense(nm.materialize())[0]


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
    key = key.astype(np.int64)
    if key.size and (key.min() < -length or key.max() >= length):
        raise IndexError(f"{what.capitalize()} index out of range for {length} {what}s.")
    return np.where(key < 0, key + length, key)


def _row_indices(key, length):
    return _indices(key, length, "row")


def _column_indices(key, length):
    if isinstance(key, numbers.Integral):
        key = [key]
    return _indices(key, length, "column")


def _check_feature_names(names, n_columns):
    if names is None:
        return None
    names = np.asarray(names, dtype=object)
    if names.shape != (n_columns,):
        raise ValueError(
            f"feature_names has {names.size} entries; the matrix has {n_columns} columns."
        )
    return names


def _column_maps(sources, mappings, n_columns, names):
    if mappings is None:
        offsets = np.cumsum([0] + [s.shape[1] for s in sources])
        maps = [np.arange(lo, hi) for lo, hi in zip(offsets[:-1], offsets[1:])]
        if n_columns is not None and n_columns < offsets[-1]:
            raise ValueError(
                f"n_columns={n_columns} but the sources side by side have {offsets[-1]}."
            )
        return maps, [int(offsets[-1])]
    maps, widths = [], []
    for source, mapping, name in zip(sources, mappings, names):
        column_map, width = as_column_map(mapping, source.shape[1], n_columns, name)
        maps.append(column_map)
        widths.append(width)
    matrix_widths = {
        w for m, w in zip(mappings, widths) if np.ndim(m) == 2 or hasattr(m, "nnz")
    }
    if len(matrix_widths) > 1 or (n_columns is not None and matrix_widths - {n_columns}):
        raise ValueError(
            f"The mapping matrices disagree on the number of target columns: "
            f"{sorted(matrix_widths | ({n_columns} if n_columns is not None else set()))}."
        )
    return maps, widths


__all__ = ["Block", "NormalizedMatrix", "TransposedNormalizedMatrix"]
