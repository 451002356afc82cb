"""The training matrix as a solver sees it: operands in, numpy arrays out.

scikit-learn's ``LinearModelLoss`` reaches ``X`` only through ``X @ coef`` and ``X.T @ g``.
Every solver here reaches its training matrix only through :class:`TrainingMatrix`, whatever
the dispatcher prepared: a NormalizedMatrix (the factorized path), an ndarray or a
scipy.sparse matrix (the materialized path, or plain input), on the CPU or, as CuPy data, on
the GPU. Operands go to the device of ``X`` and results come back as numpy arrays, so that a
solver is written once, in numpy, for every path.
"""

import numpy as np

from .. import ops
from .._config import get_config
from ..backend import backend_of, get_backend, to_numpy
from ..normalized._blocks import Block
from ..normalized import _compact
from ..normalized._row_map import RowMap
from ..normalized._storage import storage_layout
from . import _cache
from ._validation import is_normalized, is_partitioned

#: A fingerprint not computed yet (None means that the cache does not apply).
_UNKNOWN = object()


class TrainingMatrix:
    """``X - 1 offset^T``, reached through products and reductions only.

    Parameters
    ----------
    X : NormalizedMatrix, ndarray or sparse matrix of shape (n_samples, n_features)
        On the CPU or the GPU.
    offset : ndarray of shape (n_features,), default=None
        Subtracted from every row (the centering of ``fit_intercept``), as a rank-one
        correction of each result: the centered matrix is never built. None for none.

    Attributes
    ----------
    X : NormalizedMatrix, ndarray or sparse matrix
        The matrix itself.
    offset : ndarray of shape (n_features,) or None
        The offset subtracted from every row.
    shape : tuple of int
        ``X.shape``.
    dtype : numpy.dtype
        ``X.dtype``.

    Notes
    -----
    :meth:`matmul` and :meth:`rmatmul` follow numpy's type promotion, like ``X @ W``: the
    operand's dtype sets the precision (float32 data times a float64 operand runs in
    float64). The reductions (gram, sums, norms, mean, minimum) come back as float64.

    With the ``cache`` setting on, the reductions and :meth:`reused_rmatmul` keep their
    results for the next fits over the same rows (the candidates of a search that share a
    fold; see :mod:`sklearn_ilargi.utils._cache`), and a :meth:`centered` matrix is built
    only when a result is not kept.

    The offset corrects every result that is linear in ``X``. The squares (gram, row norms,
    column sums of squares) take it only for a sparse ``X``, by rank-one terms, as
    scikit-learn centers sparse input: corrected that way, a square loses the digits of a
    column whose mean is large against its spread. :meth:`centered` centers dense data
    itself instead (for a NormalizedMatrix, its dense sources), and its squares keep every
    digit.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import NormalizedMatrix
    >>> from sklearn_ilargi.utils import TrainingMatrix
    >>> X = NormalizedMatrix.from_matrices(
    ...     [np.array([[1.0], [2.0], [3.0]]), np.array([[10.0], [30.0]])],
    ...     [np.arange(3), [0, 1, 0]])
    >>> TrainingMatrix(X).matmul(np.ones(2))
    array([11., 32., 13.])
    >>> TrainingMatrix(X, offset=np.array([2.0, 10.0])).matmul(np.ones(2))
    array([-1., 20.,  1.])
    >>> TrainingMatrix(X).min()
    1.0
    """

    def __new__(cls, X=None, offset=None):
        # Partitioned input (Dask) gets the training matrix that works per partition. X
        # defaults to None for pickle, which calls __new__ without arguments.
        if cls is TrainingMatrix and X is not None and is_partitioned(X):
            from ._partitioned import PartitionedTrainingMatrix

            return object.__new__(PartitionedTrainingMatrix)
        return object.__new__(cls)

    def __init__(self, X, offset=None):
        self._X, self._build, self._origin = X, None, None
        self.offset = offset
        self.shape = X.shape
        self.dtype = X.dtype
        self._backend = X.backend if is_normalized(X) else backend_of(X)
        self._row_norms_squared = None
        self._fingerprint = _UNKNOWN
        self._centered_from = None

    @property
    def X(self):
        """The matrix itself; a centered one is built when first needed (see
        :meth:`centered`)."""
        if self._X is None:
            self._X, self._build, self._centered_from = self._build(), None, None
        return self._X

    @property
    def is_sparse(self):
        """Whether the matrix is a sparse matrix of its backend (CSR, CSC, ...)."""
        return self._backend.is_sparse(self.X)

    def sparse_columns(self):
        """Whether a sparse source fills each column: every column of a sparse matrix, none
        of a dense one, and of a NormalizedMatrix those of its sparse blocks (found without
        building a deferred matrix).

        Returns
        -------
        ndarray of bool of shape (n_features,)
        """
        kind = self._kind_of_X()
        if is_partitioned(kind):
            kind = kind.template
        if not is_normalized(kind):
            return np.full(self.shape[1], self._backend.is_sparse(kind))
        out = np.zeros(self.shape[1], dtype=bool)
        for block in kind.blocks:
            if kind.backend.is_sparse(block.source):
                out[block.columns] = True
        return out

    @staticmethod
    def _deferred(parent, build, step):
        """``parent`` after ``step`` (a tuple naming it and its arguments), with no offset,
        whose matrix ``build()`` makes when first needed: never, where every result that it
        is asked for comes from the cache."""
        out = object.__new__(TrainingMatrix)
        out._X, out._build, out._origin = None, build, (parent, step)
        out.offset = None
        out.shape, out.dtype, out._backend = parent.shape, parent.dtype, parent._backend
        out._row_norms_squared = None
        out._fingerprint = _UNKNOWN
        out._centered_from = None
        return out

    # ------------------------------------------------------------------ pickling
    def __getstate__(self):
        """The state without what does not pickle: the backend travels by its name, and a
        deferred matrix is built (its build is a closure)."""
        state = dict(self.__dict__)
        state["_X"], state["_build"], state["_centered_from"] = self.X, None, None
        state["_backend"] = self._backend.name
        if state["_fingerprint"] is _UNKNOWN:  # a sentinel is another object once unpickled
            del state["_fingerprint"]
        return state

    def __setstate__(self, state):
        state = dict(state)
        state["_backend"] = get_backend(state["_backend"])
        state.setdefault("_fingerprint", _UNKNOWN)
        state.setdefault("_centered_from", None)
        self.__dict__.update(state)

    def _kind_of_X(self):
        """``X`` where it is built, else the built matrix that a deferred one derives from:
        of the same kind (a NormalizedMatrix, a sparse or a dense array), found without
        building anything."""
        matrix = self
        while matrix._X is None:
            matrix = matrix._origin[0]
        return matrix._X

    # ------------------------------------------------------------------ the cache
    def _key(self):
        """The fingerprint of ``X - 1 offset^T`` in the cache, or None where it does not
        apply (see :mod:`sklearn_ilargi.utils._cache`); a matrix derived from another one
        (:meth:`centered`) takes the other's and the step, and is not digested itself."""
        if self._fingerprint is _UNKNOWN:
            if self._origin is None:
                matrix = _cache.matrix_fingerprint(self._X)
                key = None if matrix is None else _cache.digest(matrix, self.offset)
            else:
                parent, step = self._origin
                parent_key = parent._key()
                key = None if parent_key is None else _cache.digest(parent_key, step)
            self._fingerprint = key
        return self._fingerprint

    def _reused(self, operation, compute, *arguments):
        """``compute()``, or what the ``cache`` setting kept of it from an earlier fit over
        the same matrix with the same ``arguments``."""
        return _cache.reuse(operation, self._key, arguments, compute)

    # ------------------------------------------------------------------ products
    def matmul(self, W, lazy=False):
        """``(X - 1 offset^T) @ W``.

        Parameters
        ----------
        W : ndarray of shape (n_features,) or (n_features, p)
        lazy : bool, default=False
            For a partitioned ``X`` (a PartitionedMatrix), keep the result a Dask array,
            its rows where they were computed (what ``predict`` and ``transform`` return);
            no effect otherwise.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, p)
        """
        W_here = self._backend.from_numpy(W)
        out = self.X @ W_here if is_normalized(self.X) else self._backend.dot(self.X, W_here)
        out = to_numpy(out)
        if self.offset is not None:
            out = out - self.offset @ W
        return out

    def rmatmul(self, R):
        """``(X - 1 offset^T).T @ R``.

        Parameters
        ----------
        R : ndarray of shape (n_samples,) or (n_samples, p)

        Returns
        -------
        ndarray of shape (n_features,) or (n_features, p)
        """
        R_here = self._backend.from_numpy(R)
        out = self.X.T @ R_here if is_normalized(self.X) else self._backend.dot(self.X.T, R_here)
        out = to_numpy(out)
        if self.offset is not None:
            out = out - np.multiply.outer(self.offset, R.sum(axis=0))
        return out

    def reused_rmatmul(self, R):
        """:meth:`rmatmul`, kept by the ``cache`` setting for the next fit over the same
        matrix that asks for it with the same ``R``.

        For the products that every candidate of a search computes again (the closed
        forms' ``X.T @ y``); the products of an iterative solver, whose operands change
        at every step, take :meth:`rmatmul`.

        Parameters
        ----------
        R : ndarray of shape (n_samples,) or (n_samples, p)

        Returns
        -------
        ndarray of shape (n_features,) or (n_features, p)
        """
        return self._reused("rmatmul", lambda: self._rmatmul_once(R), np.asarray(R))

    def _rmatmul_once(self, R):
        """:meth:`rmatmul`, for a product that a fit takes once: a dense array centered and not
        built yet (see :meth:`centered`) takes it from slices of its rows, and is not built."""
        if not self._in_centered_slices():
            return self.rmatmul(R)
        R_here = self._backend.from_numpy(R)
        return to_numpy(self._sum_over_rows(
            lambda start, stop, rows: self._backend.dot(rows.T, R_here[start:stop])))

    def argmin_of_product(self, W, bias, values=True):
        """For each row of ``(X - 1 offset^T) @ W + bias``: the column of its smallest entry
        and that entry.

        A slice of rows at a time (:func:`sklearn_ilargi.ops.argmin_of_product`): the
        ``n_samples x p`` product is never held. ``W`` and ``bias`` take ``X``'s dtype.

        Parameters
        ----------
        W : ndarray of shape (n_features, p)
        bias : ndarray of shape (p,)
        values : bool, default=True
            Whether the smallest entries are wanted too. Without them, on a NormalizedMatrix,
            the rows that an exact bound labels from their dimension row alone skip the
            other entries (see :func:`sklearn_ilargi.ops.argmin_of_product`).

        Returns
        -------
        columns : ndarray of int32 of shape (n_samples,)
            The column of each row's smallest entry, the first one on ties.
        smallest : ndarray of float64 of shape (n_samples,) or None
            That entry; None where ``values`` is False.
        """
        W_here, bias_here = self._product_operands(W, bias)
        if is_normalized(self.X):
            columns, smallest = ops.argmin_of_product(self.X, W_here, bias_here, values=values)
        else:
            columns, smallest = ops.argmin_of_matrix_product(self._backend, self.X, W_here,
                                                             bias_here)
        return to_numpy(columns), self._host(smallest) if values else None

    def product_slices(self, W, bias):
        """``(start, stop, ((X - 1 offset^T)[start:stop] @ W + bias).T)`` for consecutive
        slices of rows, each small enough to stay in the cache while it is reduced
        (:func:`sklearn_ilargi.ops.product_slices`). ``W`` and ``bias`` take ``X``'s dtype.

        Parameters
        ----------
        W : ndarray of shape (n_features, p)
        bias : ndarray of shape (p,)

        Yields
        ------
        start, stop : int
        values : ndarray of float64 of shape (p, stop - start)
            Overwritten by the next slice on the CPU: reduce it before asking for the next.
        """
        W_here, bias_here = self._product_operands(W, bias)
        if is_normalized(self.X):
            slices = ops.product_slices(self.X, W_here, bias_here)
        else:
            slices = ops.matrix_product_slices(self._backend, self.X, W_here, bias_here)
        for start, stop, values in slices:
            yield start, stop, self._host(values)

    def _product_operands(self, W, bias):
        """``W`` and the bias, with the offset's term, in ``X``'s dtype on its device."""
        if self.offset is not None:
            bias = bias - self.offset @ W
        return (self._backend.from_numpy(np.asarray(W, dtype=self.dtype)),
                self._backend.from_numpy(np.asarray(bias, dtype=self.dtype)))

    # ------------------------------------------------------------------ reductions
    def column_sums(self, sample_weight=None):
        """``(X - 1 offset^T).T @ sample_weight``: plain column sums without weights.

        Parameters
        ----------
        sample_weight : ndarray of shape (n_samples,), default=None

        Returns
        -------
        ndarray of shape (n_features,)
        """
        return self._reused("column_sums", lambda: self._column_sums(sample_weight),
                            sample_weight)

    def _column_sums(self, sample_weight):
        weights = self._on_device(sample_weight)
        if is_normalized(self.X):
            out = self.X.sum(axis=0) if weights is None else self.X.T @ weights
        else:
            out = self._backend.column_sums(self.X, weights)
        out = self._host(out)
        if self.offset is not None:
            total = self.shape[0] if sample_weight is None else sample_weight.sum()
            out = out - total * self.offset
        return out

    def group_sums(self, labels, n_groups, sample_weight=None):
        """``(X - 1 offset^T).T @ R`` for ``R`` the (weighted) one-hot of ``labels``.

        Parameters
        ----------
        labels : ndarray of int of shape (n_samples,)
            Each row's group, in ``[0, n_groups)``.
        n_groups : int
        sample_weight : ndarray of shape (n_samples,), default=None
            Each row's weight in its group's sums.

        Returns
        -------
        ndarray of shape (n_features, n_groups)
            Column ``g`` holds the (weighted) column sums of the rows labelled ``g``.
        """
        labels_here = self._on_device(labels)
        weights = self._on_device(sample_weight)
        if is_normalized(self.X):
            out = self.X.group_sums(labels_here, n_groups, weights)
        else:
            one_hot = self._backend.group_counts(RowMap.identity(self.shape[0]), labels_here,
                                                 n_groups, weights, self.dtype)
            out = self._backend.dot(self.X.T, one_hot)
        out = self._host(out)
        if self.offset is not None:
            totals = np.bincount(labels, weights=sample_weight, minlength=n_groups)
            out = out - np.multiply.outer(self.offset, totals)
        return out

    def gram(self, sample_weight=None):
        """``(X - 1 offset^T).T @ diag(sample_weight) @ (X - 1 offset^T)``; an offset only
        for a sparse ``X`` (see the notes).

        Parameters
        ----------
        sample_weight : ndarray of shape (n_samples,), default=None

        Returns
        -------
        ndarray of shape (n_features, n_features)
        """
        self._refuse_offset("gram")
        return self._reused("gram", lambda: self._gram(sample_weight), sample_weight)

    def _gram(self, sample_weight):
        weights = self._on_device(sample_weight)
        if is_normalized(self._kind_of_X()):  # a dense kind is not built: see centered
            out = self._host(self.X.gram(weights))
        else:
            out = self._host(self._sum_over_rows(
                lambda start, stop, rows: self._backend.weighted_gram(
                    rows, None if weights is None else weights[start:stop])))
        if self.offset is not None:
            sums = TrainingMatrix(self.X).column_sums(sample_weight)
            total = self.shape[0] if sample_weight is None else sample_weight.sum()
            outer = np.multiply.outer
            out += (total * outer(self.offset, self.offset) - outer(self.offset, sums)
                    - outer(sums, self.offset))
        return out

    def gram_with(self, E, sample_weight=None):
        """The gram of ``[X - 1 offset^T, E, 1]`` for dense columns ``E`` of the same rows and
        a column of ones: the gram of ``X``, ``X.T @ diag(sample_weight) @ E`` and ``E``'s
        own, and in the last row and column the (weighted) sums of every column and of the
        weights.

        A float64 NormalizedMatrix takes ``[E, 1]`` as one more table of its rows, so that
        these products and sums ride along the gram's pass over the sources instead of taking
        passes of their own (a fold's ``X.T W y`` and column sums, say); other matrices take
        the gram and a product.

        Parameters
        ----------
        E : ndarray of shape (n_samples, p)
        sample_weight : ndarray of shape (n_samples,), default=None

        Returns
        -------
        ndarray of shape (n_features + p + 1, n_features + p + 1)
        """
        beside = np.empty((self.shape[0], np.shape(E)[1] + 1))
        beside[:, :-1], beside[:, -1] = E, 1.0
        self._refuse_offset("gram")
        return self._reused("gram_with", lambda: self._gram_with(beside, sample_weight),
                            sample_weight, beside)

    def _gram_with(self, beside, sample_weight):
        n_columns = self.shape[1]
        kind = self._kind_of_X()  # a dense kind is not built: see centered
        if is_normalized(kind) and kind.dtype == np.float64 and not is_partitioned(kind):
            return self._host(_gram_beside(self.X, beside, self._on_device(sample_weight)))
        out = np.empty((n_columns + beside.shape[1],) * 2)
        weighted = beside if sample_weight is None else sample_weight[:, None] * beside
        out[:n_columns, :n_columns] = self.gram(sample_weight)
        out[:n_columns, n_columns:] = self._rmatmul_once(weighted)
        out[n_columns:, :n_columns] = out[:n_columns, n_columns:].T
        out[n_columns:, n_columns:] = beside.T @ weighted
        return out

    def centered(self, mean):
        """``X - 1 offset^T - 1 mean^T``, centered where that keeps the digits.

        A NormalizedMatrix has ``mean`` subtracted from its dense sources (a copy of each)
        and keeps a rank-one term for its sparse ones
        (``NormalizedMatrix.with_shift_in_sources``); a sparse matrix, which centering would
        fill, takes ``mean`` into its offset, as scikit-learn centers sparse input. A dense
        array is centered as scikit-learn centers dense input, but without its copy where it
        can: its sums over the rows (:meth:`gram`, :meth:`column_sums_of_squares`,
        :meth:`reused_rmatmul`, :meth:`gram_with`) are taken from slices of its rows, each
        centered as it is read; the other results (the products of an iterative solver,
        which read it many times) build the centered copy once.

        Parameters
        ----------
        mean : ndarray of shape (n_features,)

        Returns
        -------
        TrainingMatrix
            Whose squares (:meth:`gram`, :meth:`row_norms_squared`,
            :meth:`column_sums_of_squares`) and products keep the digits of columns whose
            mean is large against their spread (on a sparse ``X``, scikit-learn's own).
        """
        mean = np.asarray(mean, dtype=np.float64)
        if self.offset is not None:
            mean = self.offset + mean
        # The kind of X, without building a deferred one (a fold's rows, compacted).
        kind, backend = self._kind_of_X(), self._backend
        if backend.is_sparse(kind):
            return TrainingMatrix(self.X, mean)
        if is_normalized(kind):
            def build():
                return ops.centered(self.X, mean)
        else:
            mean_here = backend.asarray(mean, dtype=self.dtype)

            def build():
                return self.X - mean_here
        # Built when first needed: a fit whose centered results all come from the cache, or
        # (a dense array) from slices of its rows, copies no source.
        out = self._deferred(self, build, ("centered", mean))
        if not is_normalized(kind):
            out._centered_from = (self, mean_here)
        return out

    def centered_gram(self, mean, sample_weight=None):
        """``(X - 1 mean^T).T @ diag(sample_weight) @ (X - 1 mean^T)``, centered as
        :meth:`centered` centers (the offset counts into the mean).

        Parameters
        ----------
        mean : ndarray of shape (n_features,)
        sample_weight : ndarray of shape (n_samples,), default=None

        Returns
        -------
        ndarray of shape (n_features, n_features)
        """
        return self.centered(mean).gram(sample_weight)

    def column_sums_of_squares(self, sample_weight=None):
        """``((X - 1 offset^T) ** 2).T @ sample_weight``: each column's (weighted) sum of
        squares; an offset only for a sparse ``X`` (see the notes).

        Parameters
        ----------
        sample_weight : ndarray of shape (n_samples,), default=None

        Returns
        -------
        ndarray of shape (n_features,)
        """
        self._refuse_offset("column sums of squares")
        return self._reused("column_sums_of_squares",
                            lambda: self._column_sums_of_squares(sample_weight), sample_weight)

    def _column_sums_of_squares(self, sample_weight):
        weights = self._on_device(sample_weight)
        kind = self._kind_of_X()  # a dense kind is not built: see centered
        if is_normalized(kind):
            out = self._host(ops.column_sums_of_squares(self.X, weights))
        elif self._backend.is_sparse(kind):
            out = self._host(self._backend.column_sums(self.X.multiply(self.X), weights))
        else:
            out = self._host(self._sum_over_rows(
                lambda start, stop, rows: self._backend.column_sums(
                    rows * rows, None if weights is None else weights[start:stop])))
        if self.offset is not None:
            sums = TrainingMatrix(self.X).column_sums(sample_weight)
            total = self.shape[0] if sample_weight is None else sample_weight.sum()
            out += self.offset * (total * self.offset - 2 * sums)
        return out

    def row_norms_squared(self):
        """Squared Euclidean norm of each row of ``X - 1 offset^T``; an offset only for a
        sparse ``X`` (see the notes).

        Computed once: later calls return the same array.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        self._refuse_offset("row norms")
        if self._row_norms_squared is None:
            self._row_norms_squared = self._reused("row_norms_squared", self._row_norms)
        return self._row_norms_squared

    def _row_norms(self):
        if is_normalized(self.X):
            norms = self.X.row_norms(squared=True)
        else:
            norms = self._backend.row_sums_of_squares(self.X)
        norms = self._host(norms)
        if self.offset is not None:
            norms += self.offset @ self.offset - 2 * TrainingMatrix(self.X).matmul(
                self.offset.astype(self.dtype))
        return norms

    def mean(self):
        """Mean of all cells of ``X - 1 offset^T``, as a float."""
        value = self._reused("mean", lambda: float(to_numpy(self.X.mean())))
        return value if self.offset is None else value - float(np.mean(self.offset))

    def min(self):
        """Smallest cell of ``X - 1 offset^T``, as a float.

        A NormalizedMatrix reduces each source on its device (see
        ``NormalizedMatrix.min``); sparse matrices count their implicit zeros.
        """
        if self.offset is None:
            return self._reused("min", lambda: float(to_numpy(self.X.min())))
        minima = self._host(self._backend.to_dense(self.X.min(axis=0)).ravel())
        return float((minima - self.offset).min())

    def column_magnitudes(self):
        """Largest absolute value of each column of ``X - 1 offset^T``, as float64.

        From each column's minimum and maximum (for a NormalizedMatrix, reduced over its
        sources, see ``NormalizedMatrix.min``).

        Returns
        -------
        ndarray of shape (n_features,)
        """
        lowest, highest = self._column_extremes()
        if self.offset is not None:
            lowest, highest = lowest - self.offset, highest - self.offset
        return np.maximum(np.abs(lowest), np.abs(highest))

    def constant_columns(self):
        """Whether each column holds one value in every row (its minimum is its maximum).

        Returns
        -------
        ndarray of bool of shape (n_features,)
        """
        lowest, highest = self._column_extremes()
        return lowest == highest

    def _column_extremes(self):
        """Each column's minimum and maximum in ``X`` (without the offset), as float64.

        A sparse ``X`` is reduced by columns from one column-major copy (scipy would convert
        a CSR matrix for each reduction).
        """
        def extremes():
            columns = self.X.tocsc() if self._backend.is_sparse(self.X) else self.X
            return tuple(self._host(self._backend.to_dense(extreme).ravel())
                         for extreme in (columns.min(axis=0), columns.max(axis=0)))

        return self._reused("column_extremes", extremes)

    def all_finite(self):
        """Whether every value of ``X`` and of the offset is finite (no NaN, no infinity)."""
        if is_normalized(self.X):
            finite = self.X.all_finite()
        else:
            finite = self._backend.all_finite(self.X)
        return bool(finite and (self.offset is None or np.isfinite(self.offset).all()))

    # ------------------------------------------------------------------ rows and columns
    def scale_columns(self, factors):
        """This matrix with column ``j`` multiplied by ``factors[j]`` (the offset too).

        ``X`` keeps its kind and device: a NormalizedMatrix scales its sources' columns.

        Parameters
        ----------
        factors : ndarray of shape (n_features,)

        Returns
        -------
        TrainingMatrix
        """
        if is_normalized(self.X):
            scaled = self.X * factors
        else:
            scaled = self._backend.scale_columns(
                self.X, self._backend.asarray(factors, dtype=self.dtype))
        return TrainingMatrix(scaled, None if self.offset is None else self.offset * factors)

    def rows(self, indices):
        """The rows ``indices`` of ``X - 1 offset^T`` as a dense numpy array (a few rows).

        Parameters
        ----------
        indices : array-like of int

        Returns
        -------
        ndarray of shape (len(indices), n_features)
        """
        indices = np.asarray(indices)
        if is_normalized(self.X):  # a selection of rows shares the sources; join just those
            picked = self.X[indices].materialize()
        else:
            picked = self.X[self._backend.from_numpy(indices)]
        out = to_numpy(self._backend.to_dense(picked)).reshape(len(indices), self.shape[1])
        return out if self.offset is None else out - self.offset

    def select_rows(self, indices):
        """The rows ``indices`` of this matrix, in that order, as a TrainingMatrix (the same
        offset): a NormalizedMatrix selects them over its sources, which it shares, a plain
        matrix copies them.

        Parameters
        ----------
        indices : array-like of int

        Returns
        -------
        TrainingMatrix
        """
        indices = np.asarray(indices)
        if is_normalized(self.X):
            return TrainingMatrix(self.X[indices], self.offset)
        return TrainingMatrix(self.X[self._backend.from_numpy(indices)], self.offset)

    def locality_order(self, width):
        """An order of the rows in which consecutive rows read consecutive rows of the
        largest dimension, or None where its products fit in the cache.

        A product of ``width`` columns taken a slice of rows at a time
        (:meth:`argmin_of_product`) gathers, for every row, the ``width`` entries of its
        dimension row's product: in the order of the dimension's rows, each slice reads a
        narrow band of that product, which stays in the cache. Only a NormalizedMatrix held
        here has an order, where its largest dimension's product (``width`` entries per
        row) takes at least the ``locality_order_min_bytes`` setting, on the CPU (a core's
        cache).

        Parameters
        ----------
        width : int

        Returns
        -------
        ndarray of intp of shape (n_samples,) or None
            The rows by their largest dimension's row (a missing row first).
        """
        if not _compactable(self.X) or self._backend.name != "cpu":
            return None
        maps = [b.row_map for b in self.X.blocks if not b.row_map.is_identity]
        if not maps:
            return None
        largest = max(maps, key=lambda row_map: row_map.n_source)
        product_bytes = width * largest.n_source * np.dtype(self.dtype).itemsize
        if product_bytes < get_config()["locality_order_min_bytes"]:
            return None
        return np.argsort(to_numpy(largest.indices))

    def reordered(self, order):
        """This matrix with its rows in ``order`` (a permutation), the same offset.

        A NormalizedMatrix copies the sources that its fact table's map (the identity)
        reads, their rows in that order, so that its products read them in order, and takes
        the other row maps at ``order``, sharing their sources; a plain matrix is copied.
        The row norms, where computed, follow.

        Parameters
        ----------
        order : ndarray of int of shape (n_samples,)

        Returns
        -------
        TrainingMatrix
        """
        order = np.asarray(order)
        if is_normalized(self.X):
            X = _reordered(self.X, order)
        else:
            X = self.X[self._backend.from_numpy(order)]
        out = TrainingMatrix(X, self.offset)
        if self._row_norms_squared is not None:
            out._row_norms_squared = self._row_norms_squared[order]
        return out

    def compact_rows(self, indices):
        """:meth:`select_rows`, then :meth:`compacted`: for a selection that several
        products will read (a fold of cross-validation).

        Consecutive rows (``KFold``'s folds without shuffling) are taken as a view of this
        matrix instead: the sources and the row maps are shared, sliced, so that nothing is
        copied and the helpers that the products keep on each map (its positions, its
        slices) are the whole map's, not derived again for each selection.

        The selection's key in the cache is its parent's and the rows (the copies are not
        digested). Off the CPU (and for partitioned data), it is :meth:`select_rows`.

        Parameters
        ----------
        indices : array-like of int

        Returns
        -------
        TrainingMatrix
        """
        indices = np.asarray(indices)
        if not _compactable(self.X):
            return self.select_rows(indices)

        consecutive = _consecutive(indices)

        def build():
            if consecutive is not None:
                return _rows_between(self.X, *consecutive)
            return _compact.compacted(self.X[indices])

        out = self._deferred(self, build, ("compact_rows", indices))
        out.offset, out.shape = self.offset, (len(indices), self.shape[1])
        return out

    def compacted(self):
        """This matrix, with each source of a NormalizedMatrix that has more rows than the
        matrix cut down to the rows that it reads (a copy of those rows).

        A selection of rows (``X[rows]``) shares its sources, and a product over it reads
        every row of every source, then gathers; the gram cannot join the fact table's
        rows. Compacted, the fact table's rows, taken in order, are a table of their own
        again (no gather; consecutive rows are a view), and a dimension keeps only the rows
        that the selected rows reference. The copies cost about one read of the rows kept,
        and are made when a result is first computed: never, where every result comes from
        the cache. A matrix whose sources have no more rows than it is itself.

        Returns
        -------
        TrainingMatrix
        """
        if not (_compactable(self.X) and any(
                b.row_map.n_source > b.row_map.n_target for b in self.X.blocks)):
            return self
        X = self.X

        def build():
            return _compact.compacted(X)

        out = self._deferred(self, build, ("compacted",))
        out.offset = self.offset
        return out

    # ------------------------------------------------------------------ helpers
    def _on_device(self, a):
        return None if a is None else self._backend.from_numpy(a)

    @staticmethod
    def _host(a):
        return np.asarray(to_numpy(a), dtype=np.float64)

    def _in_centered_slices(self):
        """Whether this is a dense array centered and not built yet (see :meth:`centered`)."""
        return self._X is None and self._centered_from is not None

    def _sum_over_rows(self, term):
        """``term(0, n_samples, X)``; for a dense array centered and not built yet (see
        :meth:`centered`), the sum of ``term(start, stop, rows)`` over slices of the rows of
        the array it centers, each centered as it is read (the backend's
        ``sum_of_centered_slices``), so that it is not built."""
        if not self._in_centered_slices():
            return term(0, self.shape[0], self.X)
        return self.sum_over_row_slices(term)

    def sum_over_row_slices(self, term):
        """The sum of ``term(start, stop, rows)`` over consecutive slices of the rows of a
        dense ``X - offset``, each slice in a buffer that the next one overwrites, on the
        backend's threads (its ``sum_of_centered_slices``): a reduction over the rows that
        never holds an array of their size.

        Parameters
        ----------
        term : callable
            Returns an array of a shape that does not depend on the slice.

        Returns
        -------
        array
        """
        if self._in_centered_slices():
            parent, mean = self._centered_from
            return self._backend.sum_of_centered_slices(parent.X, mean, term)
        offset = np.zeros(self.shape[1]) if self.offset is None else self.offset
        return self._backend.sum_of_centered_slices(
            self.X, self._backend.asarray(offset, dtype=self.dtype), term)

    def _refuse_offset(self, what):
        """Refuse a square of dense data with an offset (a sparse ``X`` takes it)."""
        if self.offset is not None and not self._backend.is_sparse(self.X):
            raise ValueError(
                f"The {what} of a TrainingMatrix with an offset would be centered by a "
                "rank-one correction, which loses the digits of columns whose mean is large "
                "against their spread; on dense data, take centered(mean), which centers the "
                "data itself."
            )


def _compactable(X):
    """Whether ``X`` is a NormalizedMatrix held here, on the CPU (partitioned data keeps its
    rows where they are, and the rows that a compaction keeps are found on the host)."""
    return is_normalized(X) and not is_partitioned(X) and X.backend.name == "cpu"


def _gram_beside(nm, beside, weights):
    """The gram of ``[nm, beside]``, whose last column is ones, in one pass over the sources.

    The shift that the gram cannot move into the sources (on sparse columns, see
    ``NormalizedMatrix.with_shift_in_sources``) is corrected by its rank-one terms, as the
    gram corrects it, but with the sums that those terms need from the same pass: the column
    of ones.
    """
    nm = nm.with_shift_in_sources()
    if nm.shift is None:
        return _with_columns(nm, beside).gram(weights)
    xp = nm.backend.xp
    out = _with_columns(nm.with_shift(None), beside).gram(weights)
    sums, total = out[:, -1], out[-1, -1]  # of the unshifted columns, and the weights
    shift = xp.zeros(len(out), dtype=out.dtype)
    shift[:nm.shape[1]] = nm.shift
    out += (xp.multiply.outer(shift, sums) + xp.multiply.outer(sums, shift)
            + total * xp.multiply.outer(shift, shift))
    return out


def _with_columns(nm, E):
    """``nm`` with the columns of ``E`` after its own: one more block, read by every row
    through the identity (the fact table's map where it has one, which the products then
    share)."""
    be = nm.backend
    identity = next((b.row_map for b in nm.blocks if b.row_map.is_identity),
                    RowMap.identity(nm.shape[0]))
    n_columns = nm.shape[1]
    source = be.from_numpy(storage_layout(E.astype(nm.dtype, copy=False), is_fact=True))
    block = Block(source, identity, np.arange(n_columns, n_columns + E.shape[1]),
                  origin=max((b.origin for b in nm.blocks), default=-1) + 1)
    shift = None if nm.shift is None else be.xp.concatenate(
        [nm.shift, be.xp.zeros(E.shape[1], dtype=nm.shift.dtype)])
    return nm._like(nm.blocks + [block], shape=(nm.shape[0], n_columns + E.shape[1]),
                    shift=shift, feature_names=None)


def _reordered(nm, order):
    """``nm[order]`` for a permutation ``order``, its fact table's sources copied in that
    order (see ``TrainingMatrix.reordered``)."""
    be = nm.backend
    device_order = be.from_numpy(order)
    maps, blocks = {}, []
    for block in nm.blocks:
        key = id(block.row_map)
        if key not in maps:
            maps[key] = (RowMap.identity(len(order)) if block.row_map.is_identity
                         else block.row_map.take(device_order))
        source = block.source
        if block.row_map.is_identity:
            source = _compact.source_rows(be, source, device_order)
        blocks.append(block.with_(source=source, row_map=maps[key]))
    return nm._like(blocks)


def _consecutive(indices):
    """``(start, stop)`` where ``indices`` are the rows ``start:stop`` in order (at least
    one), else None."""
    if indices.ndim != 1 or not len(indices) or indices.dtype.kind not in "iu":
        return None
    start = int(indices[0])
    if start < 0 or int(indices[-1]) - start != len(indices) - 1:
        return None
    return (start, start + len(indices)) if bool((np.diff(indices) == 1).all()) else None


def _rows_between(nm, start, stop):
    """The rows ``start:stop`` of ``nm`` over its own sources: the identity's sources sliced
    (views), every other map sliced (``RowMap.rows_between``, a view). Blocks that share a
    row map share its slice, as the products group blocks by it."""
    maps = {}
    blocks = []
    for block in nm.blocks:
        row_map = block.row_map
        if id(row_map) not in maps:
            maps[id(row_map)] = (RowMap.identity(stop - start) if row_map.is_identity
                                 else row_map.rows_between(start, stop))
        source = block.source[start:stop] if row_map.is_identity else block.source
        blocks.append(block.with_(source=source, row_map=maps[id(row_map)]))
    return nm._like(blocks, shape=(stop - start, nm.shape[1]))
