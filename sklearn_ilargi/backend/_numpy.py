"""CPU backend: numpy for dense arrays, scipy.sparse for sparse ones.

A *row map* here is any object with ``indices`` (integer array of length n_target with ``-1``
for "no row", or ``None`` for the identity), ``n_source``, ``n_target``, ``has_missing`` and a
``cached(key, factory)`` method; see :class:`sklearn_ilargi.normalized.RowMap`.

The dense cases of the products and sums are written once for both backends in
:mod:`._dense`; this module handles the sparse operands.
"""

import functools
import operator
import os
import platform
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from .._config import get_config
from . import _dense
from ._dense import add_at_columns  # noqa: F401  (a primitive with no sparse case)

name = "cpu"
xp = np


def is_sparse(a):
    return sp.issparse(a)


def asarray(a, dtype=None):
    if sp.issparse(a):
        return a.astype(dtype) if dtype is not None and a.dtype != dtype else a
    return np.asarray(a, dtype=dtype)


def to_numpy(a):
    """Host copy of ``a`` (a no-op on the CPU)."""
    return a


def from_numpy(a):
    """This backend's copy of a host array or scipy.sparse matrix (a no-op on the CPU)."""
    return a


def to_dense(a):
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def as_csr(a, dtype):
    return sp.csr_matrix(a, dtype=dtype)


def all_finite(a):
    """Whether ``a`` (dense, or the stored values of a sparse ``a``) holds no NaN or infinity."""
    return _dense.all_finite(a.data if sp.issparse(a) else a)


def gather_rows(z, row_map, out=None):
    """``I @ z``: row ``row_map.indices[i]`` of ``z`` for each target row, zero where ``-1``.

    ``out``, an array of the result's shape and dtype, receives the rows instead of a new
    array (a reused buffer saves the first touch of fresh memory). A column-major ``z`` is
    gathered a column at a time, into a column-major result: give it a column-major ``out``.
    """
    if row_map.indices is None:
        if out is None:
            return z
        out[...] = z
        return out
    if z.shape[0] == 0:  # every target row is missing
        shape = (row_map.n_target,) + z.shape[1:]
        return np.zeros(shape, dtype=z.dtype) if out is None else _filled(out, 0)
    positions = _positions(row_map)
    if z.ndim == 2 and not z.flags.c_contiguous and z.flags.f_contiguous:
        if out is None:
            out = np.empty((row_map.n_target, z.shape[1]), dtype=z.dtype, order="F")
        for j in range(z.shape[1]):  # -1 picks row 0 here
            np.take(z[:, j], positions, out=out[:, j], mode="clip")
    else:
        out = np.take(z, positions, axis=0, out=out, mode="clip")
    if row_map.has_missing:
        out[row_map.indices < 0] = 0
    return out


def gather_columns(zt, row_map, out=None):
    """``(I @ zt.T).T``: column ``row_map.indices[i]`` of ``zt`` for each target row, zero
    where ``-1``.

    :func:`gather_rows` for a product kept transposed (``p x n_source``, row-major), as a
    slice of K-means' distances is (``p`` centers, a column per target row). ``out``, a
    ``p x n_target`` array of ``zt``'s dtype, receives the columns instead of a new array.
    """
    if row_map.indices is None:
        if out is None:
            return zt
        out[...] = zt
        return out
    if zt.shape[1] == 0:  # every target row is missing
        shape = (zt.shape[0], row_map.n_target)
        return np.zeros(shape, dtype=zt.dtype) if out is None else _filled(out, 0)
    # mode="clip" (-1 picks column 0, zeroed below): numpy buffers the default mode's output
    out = np.take(zt, _positions(row_map), axis=1, out=out, mode="clip")
    if row_map.has_missing:
        out[:, row_map.indices < 0] = 0
    return out


def column_argmin(values, out=None):
    """For each column of a 2-D ``values`` (at least one row): the row of its smallest entry,
    the first one on ties, and that entry.

    A sweep down the rows, each step a vector operation along the columns: for a few rows and
    many columns (K-means' partial distances to its centers, a column per sample) it beats
    ``argmin(axis=0)``, which numpy runs one short column at a time. The row of a column's
    minimum is the number of rows above it that do not hold the minimum.

    Parameters
    ----------
    values : array of shape (n_rows, n_columns)
    out : tuple of two arrays, optional
        ``(rows, smallest)`` to write the results into, of the shapes and dtypes returned.

    Returns
    -------
    rows : int32 array of shape (n_columns,)
    smallest : array of shape (n_columns,), of ``values``' dtype
    """
    n_rows, n_columns = values.shape
    if out is None:
        out = (np.empty(n_columns, dtype=np.int32), np.empty(n_columns, dtype=values.dtype))
    rows, smallest = out
    np.minimum.reduce(values, axis=0, out=smallest)
    # Every step writes into buffers of its own: fresh arrays would hold the GIL to allocate
    # (the slices of a product run on threads), and a count of bytes adds without casting.
    above = np.empty(n_columns, dtype=bool)  # no row so far holds the minimum
    differs = np.empty(n_columns, dtype=bool)
    count = np.zeros(n_columns, dtype=np.uint8 if n_rows <= 256 else np.int32)
    for i, row in enumerate(values[:-1]):
        np.not_equal(row, smallest, out=differs if i else above)
        if i:
            np.logical_and(above, differs, out=above)
        np.add(count, above.view(np.uint8) if count.dtype == np.uint8 else above, out=count)
    rows[...] = count
    return rows, smallest


def _positions(row_map):
    """The map's indices as ``np.intp``, kept on the map: ``np.take`` and ``np.bincount``
    would otherwise convert narrower indices (a copy of the whole map) on every call."""
    if row_map.indices.dtype == np.intp:
        return row_map.indices
    whole = row_map.sliced_from()
    if whole is not None:  # a slice of rows: a view of the whole map's positions
        parent, start, stop = whole
        return _positions(parent)[start:stop]
    return row_map.cached("intp", lambda: row_map.indices.astype(np.intp))


def _filled(out, value):
    out[...] = value
    return out


def add_gathered_rows(out, z, row_map):
    """``out += I @ z`` in place, a slice of target rows at a time.

    Slicing (``rows_per_gather`` rows, a setting) gathers into one small buffer, reused,
    instead of a fresh ``n_target``-row array whose first touch costs as much as the gather
    itself.
    """
    if row_map.indices is None:
        out += z
        return
    if z.shape[0] == 0:  # every target row is missing: nothing to add
        return
    positions = _positions(row_map)  # np.take of intp skips fancy indexing's int32 conversion
    step = get_config()["rows_per_gather"]
    buffer = np.empty((min(step, len(positions)),) + z.shape[1:], dtype=z.dtype)
    for start in range(0, len(positions), step):
        stop = min(start + step, len(positions))
        rows = buffer[:stop - start]
        # mode="clip": -1 picks row 0, zeroed below (the default mode buffers its output)
        np.take(z, positions[start:stop], axis=0, out=rows, mode="clip")
        if row_map.has_missing:
            rows[row_map.indices[start:stop] < 0] = 0
        out[start:stop] += rows


def _transposed_indicator(row_map, dtype):
    """``I.T`` as CSC (n_source x n_target): shares the row map, built without sorting."""

    def build():
        indices = row_map.indices
        if row_map.has_missing:
            present = indices >= 0
            indptr = np.concatenate([[0], np.cumsum(present)]).astype(indices.dtype)
            indices = indices[present]
        else:
            indptr = np.arange(row_map.n_target + 1, dtype=indices.dtype)
        data = np.ones(len(indices), dtype=dtype)
        return sp.csc_matrix((data, indices, indptr), shape=(row_map.n_source, row_map.n_target))

    return row_map.cached(("csc", np.dtype(dtype).str), build)


def scatter_add_rows(y, row_map, weights=None, out=None):
    """``I.T @ diag(weights) @ y``: sum of the target rows that each source row feeds.

    ``y`` is dense (1-D or 2-D) or sparse; the result is dense for dense ``y``, and for a
    sparse ``y`` whose result has at most 4 cells per stored value (a one-hot of a few
    labels), sparse otherwise. ``out``, a dense array of the result's shape, has the result
    added to it, and is returned.

    A dense ``y`` is multiplied by ``I.T`` held as CSC (built once, kept on the map). A
    row-major ``y`` of more than ``column_scatter_max_columns`` columns (a setting) goes in
    one product; any other a column at a time (:func:`_columns_times`), which reads each
    column in place, where scipy would copy a column-major operand to row-major first
    (``benchmarks/ops.py`` times ``T.T @ y``).
    """
    if row_map.indices is None:
        return _added(scale_rows(y, weights), out)
    dtype = np.result_type(y.dtype, np.float32)
    if sp.issparse(y) and row_map.n_source * y.shape[1] <= 4 * y.nnz:
        cells = _bincount_cells(sp.coo_matrix(y), row_map, weights).astype(dtype, copy=False)
        return _added(cells, out)
    if not sp.issparse(y) and (
            y.ndim == 1 or y.shape[1] <= get_config()["column_scatter_max_columns"]
            or not y.flags.c_contiguous):
        return _columns_times(_transposed_indicator(row_map, np.float64), y, weights, dtype,
                              out)
    it = _transposed_indicator(row_map, dtype)
    if weights is not None:
        data = weights[row_map.indices >= 0] if row_map.has_missing else weights
        it = sp.csc_matrix((np.asarray(data, dtype=dtype), it.indices, it.indptr), shape=it.shape)
    return _added(it @ y, out)


def _columns_times(matrix, y, weights, dtype, out=None):
    """``matrix @ diag(weights) @ y`` for a sparse ``matrix`` of float64 and a dense ``y``,
    a column of ``y`` at a time, as (matrix rows,) + ``y.shape[1:]`` of ``dtype``, added to
    ``out`` where given.

    scipy's product of a sparse matrix and a vector reads the column in place, sums in
    float64 in the order of its rows, and releases the GIL: where ``y`` has at least
    ``parallel_slice_rows`` rows (a setting), the columns run side by side on the backend's
    threads.
    """

    def column(values):
        return matrix @ (values if weights is None else values * weights)

    if out is None:
        out = np.zeros((matrix.shape[0],) + y.shape[1:], dtype=dtype)
    if y.ndim == 1:
        out += column(y)
        return out
    columns = range(y.shape[1])
    if y.shape[0] >= get_config()["parallel_slice_rows"]:
        sums = map_in_threads(lambda j: column(y[:, j]), columns)
    else:
        sums = (column(y[:, j]) for j in columns)
    for j, summed in zip(columns, sums):
        out[:, j] += summed
    return out


def _added(result, out):
    if out is None:
        return result
    out += result
    return out


def _present(row_map):
    """(the target rows that have a source row, or ``slice(None)`` for all; their source
    rows as ``np.intp``), kept on the map."""
    if not row_map.has_missing:
        return slice(None), _positions(row_map)

    def build():
        indices = _positions(row_map)
        rows = np.flatnonzero(indices >= 0)
        return rows, indices[rows]

    return row_map.cached("present", build)


def _bincount_cells(y, row_map, weights):
    """A sparse (COO) ``y`` scattered into a dense result by one ``np.bincount`` of its cells."""
    rows = row_map.indices[y.row]
    values = y.data if weights is None else y.data * weights[y.row]
    present = rows >= 0
    cells = rows[present].astype(np.int64) * y.shape[1] + y.col[present]
    out = np.bincount(cells, weights=values[present], minlength=row_map.n_source * y.shape[1])
    return out.reshape(row_map.n_source, y.shape[1])


def counts(row_map, weights=None, dtype=np.float64):
    """How many (or how much weight of) target rows each source row feeds."""
    if row_map.indices is None:
        return np.ones(row_map.n_target, dtype) if weights is None else weights.astype(dtype)
    if weights is not None:
        return np.asarray(scatter_add_rows(weights.astype(dtype, copy=False), row_map))

    def count():
        indices = _positions(row_map)
        present = indices[indices >= 0] if row_map.has_missing else indices
        return np.bincount(present, minlength=row_map.n_source).astype(dtype)

    if row_map.n_source > row_map.n_target:
        # Fewer target rows than source rows (a row partition's share of a large
        # dimension): kept, the counts would outweigh the map, once per partition.
        return count()
    return row_map.cached(("counts", np.dtype(dtype).str), count)


def cooccurrence(row_map_a, row_map_b, weights=None, dtype=np.float64, *, dense=False):
    """``I_a.T @ diag(weights) @ I_b`` (n_a x n_b): CSR, or an array (one bincount) if ``dense``.

    The CSR matrix holds one value per target row, each pair of source rows as often as it
    occurs: summing them would sort every row, the larger part of building it; its products
    are the same.
    """
    shape = (row_map_a.n_source, row_map_b.n_source)
    if not dense:
        indptr, rows = _target_rows_by_source(row_map_a)
        columns = _explicit(row_map_b)[rows]
        data = np.ones(len(rows), dtype) if weights is None else weights[rows].astype(dtype)
        if row_map_b.has_missing:  # a zero in column 0 keeps the rows' extents
            missing = columns < 0
            columns[missing], data[missing] = 0, 0
        return sp.csr_matrix((data, columns, indptr), shape=shape)
    ia = _explicit(row_map_a)
    ib = _explicit(row_map_b)
    if row_map_a.has_missing or row_map_b.has_missing:
        both = (ia >= 0) & (ib >= 0)
        ia, ib = ia[both], ib[both]
        weights = None if weights is None else weights[both]
    cells = ia * shape[1]
    cells += ib
    out = np.bincount(cells, weights=weights, minlength=shape[0] * shape[1])
    return out.reshape(shape).astype(dtype, copy=False)


def _target_rows_by_source(row_map):
    """``(indptr, rows)``: the target rows that each source row feeds, in CSR layout (the
    structure of ``I.T``), kept on the map."""
    if row_map.indices is None:
        return np.arange(row_map.n_target + 1), np.arange(row_map.n_target)

    def build():
        by_source = _transposed_indicator(row_map, np.float64).tocsr()  # a counting sort
        return by_source.indptr, by_source.indices

    return row_map.cached("target rows by source", build)


def one_hot(labels, n_groups, weights=None, dtype=np.float64):
    """``R``: row ``i`` is ``weights[i]`` (or 1) in column ``labels[i]``, as CSR
    (n x n_groups); its transpose is CSC, with no sorting."""
    n = len(labels)
    index = np.int32 if n < np.iinfo(np.int32).max else np.int64
    data = np.ones(n, dtype) if weights is None else np.asarray(weights, dtype=dtype)
    return sp.csr_matrix((data, np.asarray(labels, dtype=index), np.arange(n + 1, dtype=index)),
                         shape=(n, n_groups))


def label_sums(y, labels, n_groups, weights=None):
    """``R.T @ diag(weights) @ y`` for ``R`` the one-hot of ``labels`` and a dense ``y``:
    each group's (weighted) sum of the rows of ``y``, (n_groups,) + ``y.shape[1:]``.

    ``R.T`` (CSC, built without sorting) multiplies ``y`` a column at a time
    (:func:`_columns_times`: a column-major ``y`` is read in place)."""
    return _columns_times(one_hot(labels, n_groups).T, y, weights,
                          np.result_type(y.dtype, np.float32))


def group_counts(row_map, labels, n_groups, weights=None, dtype=np.float64):
    """``I.T @ diag(weights) @ R`` for ``R`` the one-hot of ``labels`` (n_source x n_groups).

    The (weight of the) target rows of each group that each source row feeds: for the
    identity map, ``R`` itself as CSR; otherwise a dense array, or CSR where that would hold
    more than ``group_cells_per_row`` (a setting) cells per target row (many groups over a
    large source).
    """
    n = len(labels)
    if row_map.indices is None:
        return one_hot(labels, n_groups, weights, dtype)
    data = None if weights is None else np.asarray(weights, dtype=dtype)
    present, rows = _present(row_map)
    labels = labels[present]
    data = None if data is None else data[present]
    shape = (row_map.n_source, n_groups)
    if shape[0] * shape[1] > get_config()["group_cells_per_row"] * n:
        data = np.ones(len(rows), dtype) if data is None else data
        return sp.coo_matrix((data, (rows, labels)), shape=shape).tocsr()
    cells = rows * n_groups
    cells += labels
    # Without weights, an integer count: no array of ones to build and read.
    return np.bincount(cells, weights=data, minlength=shape[0] * shape[1]).reshape(shape) \
        .astype(dtype, copy=False)


def _explicit(row_map):
    if row_map.indices is None:
        return np.arange(row_map.n_target)
    return _positions(row_map)


def scale_rows(y, weights):
    if weights is None or not sp.issparse(y):
        return _dense.scale_rows(y, weights)
    return sp.diags_array(weights) @ y


def dot(a, b):
    """``a @ b`` for any mix of dense and sparse operands, as a dense array.

    A dense ``a`` times a sparse ``b`` is ``(b.T @ a.T).T``; where ``a.T`` is column-major
    (``a`` the transpose of a column-major source, say, times a one-hot), scipy would copy it
    to row-major first, so ``a`` goes a row at a time instead: each row is read in place,
    with the same sums in the same order.
    """
    if sp.issparse(a) and sp.issparse(b):
        return (a @ b).toarray()
    if sp.issparse(b):
        if a.ndim == 2 and a.flags.c_contiguous and not a.flags.f_contiguous:
            b_t = b.T
            return np.stack([b_t @ row for row in a]) if len(a) else np.asarray((b_t @ a.T).T)
        return np.asarray((b.T @ a.T).T)
    if sp.issparse(a):
        return np.asarray(a @ b)
    return _dense.dot(a, b)


def weighted_gram(s, weights=None):
    """``s.T @ diag(weights) @ s`` as a dense array.

    A dense ``s`` whose columns are contiguous (column-major, or rows of a column-major
    array) and at most ``gram_column_dots_max_columns`` (a setting) takes one dot product
    per pair of its columns: BLAS's symmetric product of so few columns runs well below
    the speed of reading them, while a dot product of two long columns runs near it.
    """
    if sp.issparse(s):
        rows = sp.csr_matrix(s)  # a view of a CSR matrix; the product would convert others
        if _densified_slices_pay(rows):
            return _sparse_gram_by_dense_slices(rows, weights)
        return dot(rows.T, scale_rows(rows, weights))
    if _columns_contiguous(s) and s.shape[1] <= get_config()["gram_column_dots_max_columns"]:
        return _gram_of_column_pairs(s, weights)
    return _dense.weighted_gram(s, weights)


def _densified_slices_pay(s):
    """Whether the gram of the CSR matrix ``s`` is faster over dense copies of slices of its rows:
    where they multiply at most ``sparse_gram_densify_ratio`` (a setting) times the pairs of
    entries that scipy's sparse product multiplies (the sum over rows of their nonzeros
    squared)."""
    ratio = get_config()["sparse_gram_densify_ratio"]
    if ratio <= 0 or s.nnz == 0:
        return False
    per_row = np.diff(s.indptr).astype(np.float64)
    return s.shape[1] * float(s.nnz) <= ratio * float(per_row @ per_row)


def _sparse_gram_by_dense_slices(s, weights):
    """``s.T @ diag(weights) @ s`` for a CSR matrix ``s`` as the sum over slices of its rows of
    ``slice.T @ dense(diag(w) slice)``: a sparse times dense product per slice, whose dense
    copy (``sparse_gram_slice_values`` values, a setting) stays in the cache. A matrix of at
    least ``parallel_slice_rows`` rows (a setting) is cut into one range of rows per thread,
    summed side by side. Without weights the result is exactly symmetric: entries ``(j, k)``
    and ``(k, j)`` add the same products in the same order."""
    return _sum_over_row_ranges(s.shape[0], lambda first, end: _gram_of_dense_slices(
        s, weights, first, end))


def _sum_over_row_ranges(n_rows, func):
    """``func(first_row, end_row)`` summed over one range of the ``n_rows`` rows per thread,
    side by side, where there are at least ``parallel_slice_rows`` (a setting); else
    ``func(0, n_rows)``."""
    parts = threads() if n_rows >= get_config()["parallel_slice_rows"] else 1
    bounds = np.linspace(0, n_rows, parts + 1).astype(np.int64)
    return functools.reduce(operator.add, map_in_threads(lambda part: func(*part),
                                                         zip(bounds[:-1], bounds[1:])))


def _gram_of_dense_slices(s, weights, first_row, end_row):
    """The gram of rows ``first_row:end_row`` of ``s``, a dense slice of them at a time."""
    n_columns = s.shape[1]
    step = max(1, get_config()["sparse_gram_slice_values"] // max(n_columns, 1))
    dtype = s.dtype if weights is None else np.result_type(s.dtype, weights.dtype)
    out = np.zeros((n_columns, n_columns), dtype=dtype)
    buffer = np.empty((max(min(step, end_row - first_row), 0), n_columns), dtype=s.dtype)
    for start in range(first_row, end_row, step):
        stop = min(start + step, end_row)
        rows = _row_slice(s, start, stop)
        dense = buffer[:stop - start]  # one buffer, reused: it stays in the cache
        dense.fill(0)
        rows.toarray(out=dense)
        if weights is not None:
            dense = dense * weights[start:stop, None]
        out += rows.T @ dense
    return out


def _row_slice(s, start, stop):
    """Rows ``start:stop`` of the CSR matrix ``s``, sharing its values and indices."""
    first, last = s.indptr[start], s.indptr[stop]
    return sp.csr_matrix((s.data[first:last], s.indices[first:last],
                          s.indptr[start:stop + 1] - first), shape=(stop - start, s.shape[1]))


def _columns_contiguous(s):
    return s.ndim == 2 and s.shape[1] > 1 and s.strides[0] == s.itemsize


def _gram_of_column_pairs(s, weights):
    """``s.T @ diag(weights) @ s`` by a dot product per pair of columns, mirrored.

    On one BLAS thread: each dot product reads its two columns at memory speed already, and
    threads that start and meet again for each would only wait on each other.
    """
    scaled = _dense.scale_rows(s, weights)
    out = np.empty((s.shape[1], s.shape[1]), dtype=np.result_type(s.dtype, scaled.dtype))
    with one_thread():
        for i, j in zip(*np.triu_indices(s.shape[1])):
            out[i, j] = out[j, i] = _dense.dot(s[:, i], scaled[:, j])
    return out


def sum_of_centered_slices(s, mean, term):
    """The sum of ``term(start, stop, s[start:stop] - mean)`` over consecutive slices of the
    rows of a dense ``s``: a reduction over ``s - 1 mean^T`` without its copy.

    Each slice is centered into a buffer that the next one reuses, of about
    ``slice_working_memory`` MiB (a setting; at least as many rows as ``s`` has columns, so
    that a gram's work per slice outweighs adding it up), so it is still in the cache when
    ``term`` reads it, and ``s`` is read once whatever ``term`` does with its slices. A matrix
    of at least ``parallel_slice_rows`` rows (a setting) is cut into one range of rows per
    thread, summed side by side (BLAS on one thread in each); a smaller one is one range,
    whose slices BLAS shares out on its own threads.

    Parameters
    ----------
    s : ndarray of shape (n_rows, n_columns)
    mean : ndarray of shape (n_columns,)
        Of ``s``'s dtype.
    term : callable
        ``term(start, stop, centered)``, with ``centered`` the rows ``start:stop`` of
        ``s - mean`` (a buffer that the next slice overwrites), returns an array of a
        shape that does not depend on the slice. It is called once, on no rows, where
        ``s`` has none.

    Returns
    -------
    ndarray
    """
    n_rows, n_columns = s.shape
    budget = int(get_config()["slice_working_memory"] * 2**20) // max(n_columns * s.itemsize, 1)
    step = max(budget, n_columns, 1)
    return _sum_over_row_ranges(n_rows, lambda first, end: _sum_of_centered_slices(
        s, mean, term, step, first, end))


def _sum_of_centered_slices(s, mean, term, step, first_row, end_row):
    """:func:`sum_of_centered_slices` over the rows ``first_row:end_row`` of ``s``."""
    buffer = np.empty((min(step, end_row - first_row), s.shape[1]), dtype=s.dtype)
    total = None
    for start in range(first_row, max(end_row, first_row + 1), step):
        stop = min(start + step, end_row)
        centered = np.subtract(s[start:stop], mean, out=buffer[:stop - start])
        value = term(start, stop, centered)
        total = value if total is None else total + value
    return total


def column_sums(s, weights=None):
    """Column sums of ``diag(weights) @ s``."""
    if not sp.issparse(s):
        return _dense.column_sums(s, weights)
    if weights is None:
        return np.asarray(s.sum(axis=0)).ravel()
    return dot(weights[None, :], s).ravel()


def row_sums(s):
    if sp.issparse(s):
        return np.asarray(s.sum(axis=1)).ravel()
    return _dense.row_sums(s)


def row_sums_of_squares(s):
    if sp.issparse(s):
        return np.asarray(s.multiply(s).sum(axis=1)).ravel()
    return _dense.row_sums_of_squares(s)


def take_columns(s, columns):
    return s[:, columns]


def scale_columns(s, factors):
    if sp.issparse(s):
        return (s @ sp.diags_array(factors)).tocsr()
    return _dense.scale_columns(s, factors)


def map_values(s, func):
    """``func`` on every value of a dense ``s``, or on the stored values of a compressed sparse
    one (``func(0) == 0`` keeps its zeros exact), as a new array or matrix of its structure.

    ``func`` gets a read-only view of the values, so it cannot change ``s`` (writing raises
    numpy's "read-only" ``ValueError``), and returns new values of the same shape; values it
    returns that share memory with ``s`` (``lambda v: v``) are copied.
    """
    values = s.data if sp.issparse(s) else s
    view = values.view()
    view.flags.writeable = False
    mapped = func(view)
    if np.may_share_memory(mapped, values):
        mapped = np.array(mapped)
    if sp.issparse(s):
        return type(s)((mapped, s.indices.copy(), s.indptr.copy()), shape=s.shape)
    return mapped


def add_to_stored(s, shift):
    """``s`` with ``shift[j]`` added to every stored value of its column ``j`` (every value of
    a dense ``s``), as a new array or CSR matrix."""
    if not sp.issparse(s):
        return s + shift
    out = sp.csr_matrix(s, copy=True)
    out.data += shift[out.indices]
    return out


def gather_sparse_rows(s, row_map):
    """``I @ s`` as CSR, for a sparse or dense ``s``."""
    s = sp.csr_matrix(s)
    if row_map.indices is None:
        return s
    if not row_map.has_missing:  # scipy's own gather of rows, without the product's sort
        return s[row_map.indices]
    return (_transposed_indicator(row_map, s.dtype).T @ s).tocsr()


def placement(columns, n_columns, dtype):
    """``P.T`` (c_b x c_T, CSR): moves a block's columns to their target columns."""
    c = len(columns)
    return sp.csr_matrix(
        (np.ones(c, dtype), (np.arange(c), np.asarray(columns))), shape=(c, n_columns)
    )


def threads():
    """How many threads :func:`map_in_threads` runs at most: one per usable core."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _WorkerPool:
    """One pool of :func:`threads` threads for the whole process, started on first use.

    Starting threads for every product costs more than a product of a few milliseconds
    takes, so the pool lives as long as the process. A child made by ``fork`` inherits the
    pool's object but not its threads: the pool remembers the process that started it and a
    child starts its own. Work submitted from inside the pool runs in the submitting thread,
    since queueing it behind the thread that waits for it could never finish.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._pool = None
        self._pid = None
        self._inside = threading.local()

    def _mark_inside(self):
        self._inside.active = True

    def map(self, func, items):
        if getattr(self._inside, "active", False):
            return [func(item) for item in items]
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._pool = ThreadPoolExecutor(
                    threads(), thread_name_prefix="sklearn-ilargi", initializer=self._mark_inside
                )
                self._pid = os.getpid()
            pool = self._pool
        return list(pool.map(func, items))


_WORKERS = _WorkerPool()


def map_in_threads(func, items):
    """``[func(item) for item in items]``, on the process's pool of threads (one per core).

    numpy's gathers, scipy's sparse products and BLAS release the GIL, so independent slices of
    rows run side by side; BLAS is kept to one thread meanwhile, not to oversubscribe the cores.
    Called from one of those threads, it runs the items in that thread, one after the other.
    """
    from ..utils._threads import one_blas_thread  # here: utils imports this package

    items = list(items)
    if len(items) <= 1:
        return [func(item) for item in items]
    with one_blas_thread():
        return _WORKERS.map(func, items)


def one_thread(enabled=True):
    """A context in which BLAS runs on one thread (or, with ``enabled=False``, as it is).

    For products too small to gain from more threads: BLAS's idle threads keep spinning a
    while after each product, on the cores that the next work (the threads of
    :func:`map_in_threads`, or single-threaded numpy) needs.
    """
    from ..utils._threads import one_blas_thread  # here: utils imports this package

    return one_blas_thread(enabled)


def synchronize():
    """Wait for queued work (nothing is queued on the CPU)."""


def free_memory():
    """Bytes of host memory a new allocation can still get (Linux ``MemAvailable``)."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def release_memory():
    """Give cached memory back (numpy keeps no pool: nothing to do)."""


def device_info():
    """What the cost model and the benchmarks record about the host."""
    return {
        "backend": name,
        "name": platform.processor() or platform.machine(),
        "cores": os.cpu_count() or 1,
        "numpy_version": np.__version__,
    }
