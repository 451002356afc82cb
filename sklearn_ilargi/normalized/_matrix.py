"""NormalizedMatrix: the target matrix ``T``, held as its sources plus row and column maps."""

import warnings

import numpy as np

from .. import ops
from ..backend import device_of, get_backend, to_numpy
from ..exceptions import MaterializationWarning, NotFactorizableError
from ._blocks import Block, gather_thin_sources, make_blocks
from ._elementwise import ElementwiseMixin
from ._parse import (
    as_column_map,
    as_row_map,
    check_n_columns,
    check_source,
    check_unique_targets,
    plain_array,
    result_dtype,
    source_name,
)
from ._selection import SelectionMixin
from ._shift import shift_into_sources
from ._storage import storage_layout
from ._transposed import TransposedNormalizedMatrix, _transpose


class NormalizedMatrix(ElementwiseMixin, SelectionMixin):
    """A training matrix that is never built: its sources and how they integrate.

    ``T = sum_k I_k S_k M_k^T`` (first source wins where two fill the same cell), plus an
    optional rank-one ``shift`` added to every row (``T + 1 shift^T``), which is how centering
    stays factorized. Products, grams, sums, element-wise maps and row selection run over the
    sources; only :meth:`materialize` (or ``numpy.asarray``, with a warning) builds ``T``.

    Build one with :meth:`from_matrices` (or from tables with
    :func:`~sklearn_ilargi.from_tables`); the constructor takes blocks that are already
    disjoint and checks nothing.

    Parameters
    ----------
    blocks : list of Block
        The disjoint blocks ``T = sum_b G_b S_b P_b^T``: each a source, its row map and the
        target columns of its columns.
    shape : tuple of int
        ``(n_rows, n_columns)`` of the target matrix.
    dtype : numpy.dtype
        The dtype of every product: float32 when every source is float32, float64 otherwise.
    shift : ndarray of shape (n_columns,), default=None
        The rank-one offset added to every row, or None for none.
    feature_names : ndarray of str of shape (n_columns,), default=None
        One name per target column, or None.
    device : {"cpu", "gpu"}, default="cpu"
        Where the sources and row maps live.

    See Also
    --------
    sklearn_ilargi.from_tables : Build one from tables and a join description.

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
        NormalizedMatrix or PartitionedMatrix
            The target matrix over the given sources; overlapping sources are split into
            disjoint blocks, the first source winning each shared cell. Where a source or
            an indicator is a Dask array (the fact table, larger than memory), a
            :class:`~sklearn_ilargi.normalized.PartitionedMatrix` whose row partitions are
            those of the Dask arrays (see ``PartitionedMatrix.from_matrices``).

        Examples
        --------
        A fact table of three rows and a dimension of two, the third fact row referencing the
        first dimension row again; ``-1`` marks a fact row without a match (a left join):

        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> fact = np.array([[1.0], [2.0], [3.0]])
        >>> dim = np.array([[10.0, 20.0], [30.0, 40.0]])
        >>> nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(3), [0, -1, 1]],
        ...                                     feature_names=["x", "a", "b"])
        >>> nm.materialize()
        array([[ 1., 10., 20.],
               [ 2.,  0.,  0.],
               [ 3., 30., 40.]])
        >>> nm.feature_names.tolist()
        ['x', 'a', 'b']
        """
        sources = list(sources)
        indicators = list(indicators)
        if not sources:
            raise ValueError("A NormalizedMatrix needs at least one source.")
        from ._partitioned import PartitionedMatrix, is_dask_collection

        if any(is_dask_collection(x) for x in (*sources, *indicators)):
            return PartitionedMatrix.from_matrices(
                sources, indicators, mappings, n_columns=n_columns,
                feature_names=feature_names, source_names=source_names)
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
        """This matrix with ``shift`` added to every row (``T + 1 shift^T``).

        The sources are shared, not copied; products correct for the shift exactly, which is
        how centering stays factorized.

        Parameters
        ----------
        shift : array-like of shape (n_columns,) or None
            The offset of each column; None removes any shift.

        Returns
        -------
        NormalizedMatrix
            The same sources with the new shift.

        Raises
        ------
        ValueError
            When ``shift`` holds NaN or infinity, or would make a cell overflow.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices(
        ...     [np.array([[1.0], [2.0], [3.0]]), np.array([[10.0], [30.0]])],
        ...     [np.arange(3), [0, 1, 0]])
        >>> centered = nm.with_shift(-nm.mean(axis=0))
        >>> centered.materialize()
        array([[-1.        , -6.66666667],
               [ 0.        , 13.33333333],
               [ 1.        , -6.66666667]])
        """
        unshifted = self._like(shift=None)
        if shift is None:
            return unshifted
        shift = self._per_column(self._column_operand(shift, "with_shift"))
        return unshifted._shifted(shift, "with_shift")

    def with_shift_in_sources(self):
        """The same matrix with its shift added into its dense sources.

        A shift kept as a rank-one term costs the digits of every column whose shift is
        large against its spread in each product that squares the matrix (the gram, the row
        norms): centering a column of 1e7 +- 1 by its mean that way loses all of them. Added
        into copies of the dense sources, the shift becomes part of the values that the
        products square. The rows that a dense source misses (left and outer joins) get the
        shift from one more block each pattern of such rows. Sparse sources keep the
        rank-one term, as scikit-learn does for sparse input. The gram and the row norms of
        a shifted matrix take this form by themselves.

        Returns
        -------
        NormalizedMatrix
            Equal in every cell; this matrix itself when no dense source takes a shift.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> fact = np.array([[1e7 + 1], [1e7 - 1], [1e7]])
        >>> dim = np.array([[2.0, 4.0], [6.0, 8.0]])
        >>> nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(3), [0, -1, 1]])
        >>> centered = (nm - nm.mean(axis=0)).with_shift_in_sources()
        >>> centered  # the fact table, the dimension, and the shift of its missing row
        NormalizedMatrix(shape=(3, 3), dtype=float64, blocks=3, device='cpu')
        >>> centered.gram().round(6)
        array([[ 2.      ,  2.      ,  4.      ],
               [ 2.      , 18.666667, 24.      ],
               [ 4.      , 24.      , 32.      ]])
        """
        if self.shift is None:
            return self
        blocks, residual = shift_into_sources(self.blocks, self.shift, self.backend)
        return self if blocks is self.blocks else self._like(blocks, shift=residual)

    # ------------------------------------------------------------------ basic properties
    @property
    def backend(self):
        """The backend module of ``device``: the array primitives the products run on."""
        return get_backend(self.device)

    @property
    def ndim(self):
        """Number of dimensions: always 2."""
        return 2

    @property
    def size(self):
        """Number of cells of the target matrix, ``n_rows * n_columns``."""
        return self.shape[0] * self.shape[1]

    @property
    def T(self):
        """The transpose, a lazy view: ``nm.T @ y`` and ``nm.T @ nm`` stay factorized."""
        return TransposedNormalizedMatrix(self)

    @property
    def nbytes(self):
        """Bytes held by the sources and row maps (what the factorized path reads).

        A source or row map that several blocks share counts once.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices([np.ones((4, 2))], [np.arange(4)])
        >>> nm.nbytes  # a 4 x 2 float64 source; the identity row map is not stored
        64
        """
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

    def __sizeof__(self):
        # What sys.getsizeof (and so dask.sizeof) reports: with the sources' bytes,
        # joblib's Dask backend scatters the matrix to each worker once instead of sending
        # it along with every task of a search.
        return object.__sizeof__(self) + self.nbytes

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
            raise NotFactorizableError(
                "Of the products of two normalized matrices only A.T @ B (A and B over the "
                "same target rows, e.g. nm.T @ nm) has a factorized form; materialize one of "
                "them for any other."
            )
        x = plain_array(x, f"The {side} operand of matmul")
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
        """``T.T @ diag(sample_weight) @ T``, computed over the sources.

        Parameters
        ----------
        sample_weight : array-like of shape (n_rows,), default=None
            Weight of each row; None weighs every row 1.

        Returns
        -------
        ndarray of shape (n_columns, n_columns)
            The dense, symmetric gram matrix (a CuPy array on the GPU).

        See Also
        --------
        group_sums : Column sums per group of rows, ``T.T @ R``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices(
        ...     [np.array([[1.0], [2.0], [3.0]]), np.array([[10.0], [30.0]])],
        ...     [np.arange(3), [0, 1, 0]])
        >>> nm.gram()
        array([[  14.,  100.],
               [ 100., 1100.]])
        >>> nm.gram(sample_weight=[1.0, 0.0, 1.0])
        array([[ 10.,  40.],
               [ 40., 200.]])
        """
        return ops.gram(self, self._weights(sample_weight))

    def group_sums(self, labels, n_groups, sample_weight=None):
        """Column sums of each group of rows: ``T.T @ R`` for ``R`` the one-hot of ``labels``.

        Parameters
        ----------
        labels : array-like of int of shape (n_rows,)
            Each row's group, an integer in ``[0, n_groups)``.
        n_groups : int
            Number of groups.
        sample_weight : array-like of shape (n_rows,), default=None
            Weight of each row in its group's sum; None weighs every row 1.

        Returns
        -------
        ndarray of shape (n_columns, n_groups)
            Column ``g`` holds the (weighted) column sums of the rows labelled ``g``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices(
        ...     [np.array([[1.0], [2.0], [3.0]]), np.array([[10.0], [30.0]])],
        ...     [np.arange(3), [0, 1, 0]])
        >>> nm.group_sums(np.array([0, 1, 0]), n_groups=2)
        array([[ 4.,  2.],
               [20., 30.]])
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
        w = self.backend.asarray(plain_array(sample_weight, "sample_weight"), dtype=self.dtype)
        if w.shape != (self.shape[0],):
            raise ValueError(
                f"sample_weight has shape {w.shape}; expected ({self.shape[0]},)."
            )
        return w

    # ------------------------------------------------------------------ reductions
    def sum(self, axis=None):
        """Sum of all cells, of each column or of each row.

        Parameters
        ----------
        axis : {None, 0, 1}, default=None
            None sums every cell, 0 each column, 1 each row (``-2`` and ``-1`` also work).

        Returns
        -------
        float or ndarray
            A scalar for ``axis=None``, else an array of shape (n_columns,) or (n_rows,).

        See Also
        --------
        mean : The same reductions divided by their counts.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices(
        ...     [np.array([[1.0], [2.0], [3.0]]), np.array([[10.0], [30.0]])],
        ...     [np.arange(3), [0, 1, 0]])
        >>> nm.sum(axis=0)
        array([ 6., 50.])
        >>> nm.sum(axis=1)
        array([11., 32., 13.])
        >>> float(nm.sum())
        56.0
        """
        if axis is None:
            return ops.column_sums(self).sum()
        if axis in (0, -2):
            return ops.column_sums(self)
        if axis in (1, -1):
            return ops.row_sums(self)
        raise ValueError(f"axis must be None, 0 or 1, got {axis!r}.")

    def mean(self, axis=None):
        """Mean of all cells, of each column or of each row.

        Parameters
        ----------
        axis : {None, 0, 1}, default=None
            None averages every cell, 0 each column, 1 each row.

        Returns
        -------
        float or ndarray
            A scalar for ``axis=None``, else an array of shape (n_columns,) or (n_rows,).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices(
        ...     [np.array([[1.0], [2.0], [3.0]]), np.array([[10.0], [40.0]])],
        ...     [np.arange(3), [0, 1, 0]])
        >>> nm.mean(axis=0)
        array([ 2., 20.])
        """
        count = {None: self.size, 0: self.shape[0], -2: self.shape[0]}.get(axis, self.shape[1])
        return self.sum(axis) / count

    def row_norms(self, squared=False):
        """Euclidean norm of each row, computed over the sources.

        Parameters
        ----------
        squared : bool, default=False
            Return the squared norms (no square root).

        Returns
        -------
        ndarray of shape (n_rows,)
            The norm (or squared norm) of each target row.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices(
        ...     [np.array([[3.0], [0.0]]), np.array([[4.0]])], [np.arange(2), [0, 0]])
        >>> nm.row_norms()
        array([5., 4.])
        >>> nm.row_norms(squared=True)
        array([25., 16.])
        """
        sq = ops.row_sums_of_squares(self)
        return sq if squared else self.backend.xp.sqrt(sq)

    def min(self, axis=None):
        """Smallest cell of the matrix, or of each column, computed over the sources.

        Each block reduces its source on its own device; the zero cells of missing rows
        count (a column that some row gets from no source has a 0 there).

        Parameters
        ----------
        axis : {None, 0}, default=None
            None for the smallest cell, 0 for that of each column.

        Returns
        -------
        scalar or ndarray of shape (n_columns,)
            A 0-d array for ``axis=None`` (a CuPy array on the GPU).

        See Also
        --------
        max : The largest cell.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices(
        ...     [np.array([[1.0], [2.0], [3.0]]), np.array([[5.0], [-4.0]])],
        ...     [np.arange(3), [0, -1, 0]])
        >>> nm.min(axis=0)  # the second row has no row of the dimension: a 0
        array([1., 0.])
        >>> float(nm.min())
        0.0
        """
        return self._extreme("min", axis)

    def max(self, axis=None):
        """Largest cell of the matrix, or of each column, computed over the sources.

        Parameters
        ----------
        axis : {None, 0}, default=None
            None for the largest cell, 0 for that of each column.

        Returns
        -------
        scalar or ndarray of shape (n_columns,)
            A 0-d array for ``axis=None`` (a CuPy array on the GPU).

        See Also
        --------
        min : The smallest cell, with the same rules.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices(
        ...     [np.array([[1.0], [2.0]]), np.array([[-5.0], [9.0]])], [np.arange(2), [0, 0]])
        >>> nm.max(axis=0)  # the dimension's second row is read by no target row
        array([ 2., -5.])
        """
        return self._extreme("max", axis)

    def _extreme(self, kind, axis):
        if axis not in (None, 0, -2):
            raise ValueError(
                f"axis must be None or 0, got {axis!r}: the {kind}imum of each row has no "
                "factorized form here; materialize() first."
            )
        columns = ops.column_extremes(self, kind)
        return columns if axis is not None else getattr(columns, kind)()

    def all_finite(self):
        """Whether every cell is finite (no NaN, no infinity), checked over the sources.

        Returns
        -------
        bool
            True when no cell, shift included, is NaN or infinite.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices([np.array([[1.0], [2.0]])], [np.arange(2)])
        >>> nm.all_finite()
        True
        """
        xp = self.backend.xp
        return bool(xp.isfinite(self.min()) and xp.isfinite(self.max()))

    # ------------------------------------------------------------------ materialization
    def materialize(self, sparse="auto"):
        """Join: build the target matrix ``T`` itself.

        Only the rows that ``T`` reads of each source are gathered, and sparse sources are
        gathered as CSR: materializing a few selected rows (``X[rows].materialize()``)
        costs those rows, and densifies no source.

        Parameters
        ----------
        sparse : "auto" or bool, default="auto"
            ``True`` returns a CSR matrix, ``False`` a dense array. ``"auto"`` returns CSR
            where some source is sparse and CSR takes less than half the memory of the dense
            array (the ``csr_join_max_share`` setting; a shifted matrix, whose shift fills
            every cell, is dense), the rule by which the materialized path of a fit builds
            its join.

        Returns
        -------
        ndarray or scipy.sparse.csr_matrix of shape (n_rows, n_columns)
            The joined matrix, shift included (CuPy arrays on the GPU).

        Raises
        ------
        ValueError
            When ``sparse`` is none of ``"auto"``, ``True`` and ``False``.

        See Also
        --------
        toarray : The dense join.

        Examples
        --------
        >>> import numpy as np
        >>> import scipy.sparse as sp
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices(
        ...     [np.array([[1.0], [2.0], [3.0]]), np.array([[10.0], [30.0]])],
        ...     [np.arange(3), [0, 1, 0]])
        >>> nm.materialize()
        array([[ 1., 10.],
               [ 2., 30.],
               [ 3., 10.]])
        >>> nm.materialize(sparse=True).nnz
        6

        A wide one-hot dimension joins as CSR; a few selected rows join alone:

        >>> dim = sp.csr_matrix(sp.eye(1000))
        >>> wide = NormalizedMatrix.from_matrices([dim], [np.array([5, 7, 5])])
        >>> joined = wide.materialize()
        >>> sp.issparse(joined), joined.nnz
        (True, 3)
        >>> wide[[0, 1]].materialize(sparse=False).argmax(axis=1)
        array([5, 7])
        """
        if not (isinstance(sparse, (bool, np.bool_)) or (
                isinstance(sparse, str) and sparse == "auto")):
            raise ValueError(f"materialize: sparse must be 'auto', True or False, got "
                             f"{sparse!r}.")
        return ops.materialize(self, sparse=sparse if isinstance(sparse, str) else bool(sparse))

    def toarray(self):
        """The joined matrix as a dense array: ``materialize(sparse=False)``.

        Returns
        -------
        ndarray of shape (n_rows, n_columns)
            The joined matrix (a CuPy array on the GPU).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices(
        ...     [np.array([[1.0], [2.0]]), np.array([[5.0]])], [np.arange(2), [0, 0]])
        >>> nm.toarray()
        array([[1., 5.],
               [2., 5.]])
        """
        return self.materialize(sparse=False)

    def __array__(self, dtype=None, copy=None):
        warnings.warn(
            f"Materializing a {self.shape[0]} x {self.shape[1]} NormalizedMatrix into one "
            "array; call materialize() to do so on purpose.",
            MaterializationWarning,
            stacklevel=2,
        )
        out = self.backend.to_numpy(self.materialize(sparse=False))
        return out if dtype is None else out.astype(dtype, copy=False)

    # ------------------------------------------------------------------ devices
    def to(self, device, *, cache=True):
        """This matrix with its sources and row maps on ``device`` ("cpu" or "gpu").

        The copy is kept on this matrix, so that repeated fits (a grid search, say) transfer
        once; pickling and copying drop it.

        Parameters
        ----------
        device : {"cpu", "gpu"}
            Where the returned matrix lives.
        cache : bool, default=True
            Use and keep the copy held on this matrix; ``False`` neither uses nor keeps it.

        Returns
        -------
        NormalizedMatrix
            This matrix when it is on ``device`` already, else its copy there.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices([np.ones((2, 1))], [np.arange(2)])
        >>> nm.to("cpu") is nm
        True
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

    def drop_device_copy(self):
        """Forget the copies that :meth:`to` keeps on this matrix, freeing their device memory.

        The next ``to(device)`` transfers again. Estimators call this before they fit again on
        the CPU after the GPU ran out of memory.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices([np.ones((2, 1))], [np.arange(2)])
        >>> nm.drop_device_copy()  # a no-op when no copy is kept
        """
        self.__dict__.pop("_device_copies", None)

    def __sklearn_ilargi_device__(self):
        """Where this matrix lives, for :func:`sklearn_ilargi.backend.device_of`."""
        return self.device

    def __narwhals_dataframe__(self):
        """This matrix as narwhals sees a dataframe, so that scikit-learn selects its columns
        by name (see :mod:`sklearn_ilargi.normalized._frame`)."""
        from ._frame import MatrixFrame  # imported when narwhals asks: it is there then

        return MatrixFrame(self)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_device_copies", None)  # device memory is a cache, not part of the matrix
        return state


# ---------------------------------------------------------------------- helpers
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
