"""GPU backend: CuPy for dense arrays, cupyx.scipy.sparse for sparse ones.

The same functions as :mod:`._numpy`, with the same meaning, so that the factorized operations
run unchanged on either. Imported only through ``get_backend("gpu")``: importing the package
never imports CuPy.

Helper data derived from a row map (its indices on the device, the CSR of ``I.T``, the row
counts) is built once per row map through ``row_map.cached`` and reused by every later product.
Row map indices may arrive as numpy arrays (rows selected on the host); they are copied to the
device once, on first use.

The dense cases of the products and sums are :mod:`._dense`'s, written once for both backends
through the array API (array-api-compat's CuPy namespace); this module handles the sparse
operands.
"""

import contextlib

import cupy as cp
import cupyx
import cupyx.scipy.sparse as csp
import numpy as np
import scipy.sparse as sp

from .._config import get_config
from . import _dense
from ._dense import add_at_columns  # noqa: F401  (a primitive with no sparse case)

name = "gpu"
xp = cp

_INT32_MAX = np.iinfo(np.int32).max


# ---------------------------------------------------------------------- arrays and transfers
def is_sparse(a):
    """Whether ``a`` is a sparse matrix (cupyx, or scipy on its way to the device)."""
    return csp.issparse(a) or sp.issparse(a)


def asarray(a, dtype=None):
    """``a`` as an array of this backend (copied to the device when it is on the host)."""
    if is_sparse(a):
        a = from_numpy(a)
        return a.astype(dtype) if dtype is not None and a.dtype != dtype else a
    return cp.asarray(a, dtype=dtype)


def to_numpy(a):
    """Host copy of ``a``: numpy for CuPy arrays, scipy.sparse for cupyx matrices."""
    if isinstance(a, cp.ndarray) or csp.issparse(a):
        return a.get()
    return a


def from_numpy(a):
    """Device copy of a host array or scipy.sparse matrix; device data is returned as is."""
    if isinstance(a, cp.ndarray) or csp.issparse(a):
        return a
    if sp.issparse(a):
        return _sparse_to_device(a)
    return cp.asarray(a)


def _sparse_to_device(a):
    fmt = "csc" if a.format == "csc" else "csr"
    a = a.asformat(fmt)
    if a.dtype.char not in "fdFD":
        a = a.astype(np.float64)  # cuSPARSE computes in floating point only
    if a.indices.dtype != np.int32 and max(a.shape + (a.nnz,)) < _INT32_MAX:
        a = type(a)((a.data, a.indices.astype(np.int32), a.indptr.astype(np.int32)),
                    shape=a.shape)
    return csp.csc_matrix(a) if fmt == "csc" else csp.csr_matrix(a)


def to_dense(a):
    """``a`` as a dense device array."""
    if csp.issparse(a):
        return a.toarray()
    if sp.issparse(a):
        return cp.asarray(a.toarray())
    return cp.asarray(a)


def as_csr(a, dtype):
    """``a`` (a dense or sparse array, or a shape for an empty matrix) as CSR of ``dtype``."""
    if isinstance(a, tuple):
        return csp.csr_matrix(a, dtype=dtype)
    if is_sparse(a):
        a = from_numpy(a).tocsr()
        return a if a.dtype == dtype else a.astype(dtype)
    return csp.csr_matrix(cp.asarray(a, dtype=dtype))


def all_finite(a):
    """Whether ``a`` (dense, or the stored values of a sparse ``a``) holds no NaN or infinity."""
    return _dense.all_finite(a.data if csp.issparse(a) else a)


# ---------------------------------------------------------------------- row map helpers
def _index_dtype(n):
    return np.int32 if n < _INT32_MAX else np.int64


def _indices(row_map):
    """The row map's indices on the device."""
    return row_map.cached(("gpu", "indices"), lambda: cp.asarray(row_map.indices))


def _explicit(row_map):
    if row_map.indices is None:
        return row_map.cached(
            ("gpu", "arange"),
            lambda: cp.arange(row_map.n_target, dtype=_index_dtype(row_map.n_target)),
        )
    return _indices(row_map)


def _gather_indices(row_map):
    """Indices with ``-1`` replaced by ``n_source``: the zero row appended before gathering."""

    def build():
        indices = _indices(row_map)
        return cp.where(indices < 0, row_map.n_source, indices).astype(indices.dtype)

    return row_map.cached(("gpu", "gather"), build)


def _present(row_map):
    """(target rows that have a source row, or None for all; their source rows)."""

    def build():
        indices = _indices(row_map)
        if not row_map.has_missing:
            return None, indices
        rows = cp.flatnonzero(indices >= 0).astype(_index_dtype(row_map.n_target))
        return rows, indices[rows]

    return row_map.cached(("gpu", "present"), build)


def _mark_canonical(matrix):
    """Record that a matrix built here has sorted, unique indices (skips a check on use)."""
    try:
        matrix.has_canonical_format = True
    except AttributeError:  # older cupyx: the flag is computed when needed
        pass
    return matrix


def _offsets(sizes, dtype):
    """``[0, cumsum(sizes)]``: the index pointer of rows with ``sizes`` entries each."""
    return cp.concatenate([cp.zeros(1, dtype), cp.cumsum(sizes).astype(dtype)])


def _transposed_structure(row_map):
    """(indices, indptr) of ``I.T`` as CSR (n_source x n_target), each row's columns sorted.

    Sorting the unique key ``source_row * n_target + target_row`` groups the target rows by
    source row in ascending order whatever the sort's stability.
    """

    def build():
        rows, sources = _present(row_map)
        n_target = row_map.n_target
        if rows is None:
            rows = cp.arange(n_target, dtype=_index_dtype(n_target))
        key = sources.astype(cp.int64) * n_target + rows.astype(cp.int64)
        order = cp.argsort(key)
        index_dtype = _index_dtype(max(n_target, rows.size))
        columns = rows[order].astype(index_dtype)
        per_source = cp.bincount(sources, minlength=row_map.n_source)
        return columns, _offsets(per_source, index_dtype)

    return row_map.cached(("gpu", "csr_of_transpose"), build)


def _transposed_indicator(row_map, dtype, weights=None):
    """``I.T @ diag(weights)`` as CSR (n_source x n_target)."""
    columns, indptr = _transposed_structure(row_map)
    shape = (row_map.n_source, row_map.n_target)
    if weights is None:
        return row_map.cached(
            ("gpu", "csr_of_transpose", np.dtype(dtype).str),
            lambda: _mark_canonical(
                csp.csr_matrix((cp.ones(columns.size, dtype), columns, indptr), shape=shape)
            ),
        )
    data = cp.asarray(weights)[columns].astype(dtype, copy=False)
    return _mark_canonical(csp.csr_matrix((data, columns, indptr), shape=shape))


def _indicator(row_map, dtype):
    """``I`` itself as CSR (n_target x n_source): one entry per target row that has a row."""

    def build():
        rows, sources = _present(row_map)
        n_target = row_map.n_target
        index_dtype = _index_dtype(max(n_target, row_map.n_source))
        if rows is None:
            indptr = cp.arange(n_target + 1, dtype=index_dtype)
        else:
            indptr = _offsets(_indices(row_map) >= 0, index_dtype)
        data = cp.ones(sources.size, dtype)
        return _mark_canonical(csp.csr_matrix(
            (data, sources.astype(index_dtype), indptr), shape=(n_target, row_map.n_source)
        ))

    return row_map.cached(("gpu", "indicator", np.dtype(dtype).str), build)


# ---------------------------------------------------------------------- gathers and scatters
def gather_rows(z, row_map, out=None):
    """``I @ z``: row ``row_map.indices[i]`` of ``z`` for each target row, zero where ``-1``.

    ``out``, an array of the result's shape and dtype, receives the rows when given.
    """
    if row_map.indices is None:
        rows = z
    elif row_map.has_missing:
        z = cp.concatenate([z, cp.zeros((1,) + z.shape[1:], dtype=z.dtype)])
        rows = cp.take(z, _gather_indices(row_map), axis=0)
    else:
        rows = cp.take(z, _indices(row_map), axis=0)
    if out is None:
        return rows
    out[...] = rows
    return out


def gather_columns(zt, row_map, out=None):
    """``(I @ zt.T).T``: column ``row_map.indices[i]`` of ``zt`` for each target row, zero
    where ``-1``; ``out`` receives the columns when given."""
    columns = gather_rows(zt.T, row_map).T
    if out is None:
        return columns
    out[...] = columns
    return out


def column_argmin(values, out=None):
    """For each column of a 2-D ``values`` (at least one row): the row of its smallest entry,
    the first one on ties, and that entry; written into ``out = (rows, smallest)`` when
    given."""
    rows, smallest = cp.argmin(values, axis=0).astype(cp.int32), values.min(axis=0)
    if out is None:
        return rows, smallest
    out[0][...], out[1][...] = rows, smallest
    return out


def add_gathered_rows(out, z, row_map):
    """``out += I @ z`` in place."""
    out += gather_rows(z, row_map)


def scatter_add_rows(y, row_map, weights=None, out=None):
    """``I.T @ diag(weights) @ y``: sum of the target rows that each source row feeds.

    ``y`` is dense (1-D or 2-D) or sparse; the result is dense for dense ``y``. ``out``, a dense
    array of the result's shape, has the result added to it, and is returned.

    Sparse operands always go through the CSR of ``I.T``; dense ones as the ``gpu_segment_sum``
    setting says. ``"csr"`` (the default) multiplies by a cached CSR of ``I.T`` whose rows are
    sorted: no atomics, so the result is the same bit for bit on every run. ``"scatter"`` adds
    rows with atomic additions (``cupyx.scatter_add``); ``"bincount"`` runs one weighted
    ``cupy.bincount`` per column. Both of those sum in an order the hardware picks; they exist
    to be measured against ``"csr"``.
    """
    result = _scatter_add_rows(y, row_map, weights)
    if out is None:
        return result
    out += result
    return out


def _scatter_add_rows(y, row_map, weights):
    if row_map.indices is None:
        return scale_rows(y, weights)
    dtype = np.result_type(y.dtype, np.float32)
    method = get_config()["gpu_segment_sum"]
    if csp.issparse(y) or method == "csr":
        it = _transposed_indicator(row_map, dtype, weights)
        if it.nnz == 0:  # no target row has a source row: skip cuSPARSE on an empty matrix
            if csp.issparse(y):
                return csp.csr_matrix((row_map.n_source, y.shape[1]), dtype=dtype)
            return cp.zeros((row_map.n_source,) + y.shape[1:], dtype=dtype)
        return it @ _cast(y, dtype)
    rows, sources = _present(row_map)
    values = y if rows is None else cp.take(y, rows, axis=0)
    if weights is not None:
        w = cp.asarray(weights)
        w = w if rows is None else w[rows]
        values = values * (w if values.ndim == 1 else w[:, None])
    values = values.astype(dtype, copy=False)
    if method == "scatter":
        out = cp.zeros((row_map.n_source,) + y.shape[1:], dtype=dtype)
        _add_at(out, sources, values)
        return out
    return _bincount_columns(sources, values, row_map.n_source, dtype)


def _add_at(out, index, values):
    add_at = getattr(cp.add, "at", None)
    if add_at is not None:
        add_at(out, index, values)
    else:
        cupyx.scatter_add(out, index, values)


def _bincount_columns(sources, values, n_source, dtype):
    if values.ndim == 1:
        return cp.bincount(sources, weights=values, minlength=n_source).astype(dtype)
    out = cp.empty((n_source, values.shape[1]), dtype=dtype)
    for j in range(values.shape[1]):
        out[:, j] = cp.bincount(sources, weights=values[:, j], minlength=n_source)
    return out


def counts(row_map, weights=None, dtype=np.float64):
    """How many (or how much weight of) target rows each source row feeds."""
    if row_map.indices is None:
        if weights is None:
            return cp.ones(row_map.n_target, dtype)
        return cp.asarray(weights).astype(dtype)
    if weights is None:
        return row_map.cached(
            ("gpu", "counts", np.dtype(dtype).str),
            lambda: cp.bincount(_present(row_map)[1], minlength=row_map.n_source).astype(dtype),
        )
    return scatter_add_rows(cp.asarray(weights).astype(dtype, copy=False), row_map)


def cooccurrence(row_map_a, row_map_b, weights=None, dtype=np.float64, *, dense=False):
    """``I_a.T @ diag(weights) @ I_b`` (n_a x n_b): CSR, or an array (one bincount) if ``dense``."""
    ia = _explicit(row_map_a)
    ib = _explicit(row_map_b)
    both = (ia >= 0) & (ib >= 0)
    shape = (row_map_a.n_source, row_map_b.n_source)
    data = None if weights is None else cp.asarray(weights)[both].astype(dtype)
    if dense:
        cells = ia[both].astype(np.int64) * shape[1] + ib[both]
        out = cp.bincount(cells, weights=data, minlength=shape[0] * shape[1])
        return out.reshape(shape).astype(dtype, copy=False)
    rows = ia[both].astype(np.int32 if row_map_a.n_source < _INT32_MAX else np.int64)
    cols = ib[both].astype(rows.dtype)
    if data is None:
        data = cp.ones(rows.size, dtype)
    if rows.size == 0:
        return csp.csr_matrix(shape, dtype=dtype)
    return csp.coo_matrix((data, (rows, cols)), shape=shape).tocsr()


def one_hot(labels, n_groups, weights=None, dtype=np.float64):
    """``R``: row ``i`` is ``weights[i]`` (or 1) in column ``labels[i]``, as CSR
    (n x n_groups)."""
    labels = cp.asarray(labels)
    n = labels.shape[0]
    data = cp.ones(n, dtype) if weights is None else cp.asarray(weights).astype(dtype)
    indptr = cp.arange(n + 1, dtype=_index_dtype(n))
    return csp.csr_matrix((data, labels.astype(indptr.dtype), indptr), shape=(n, n_groups))


def label_sums(y, labels, n_groups, weights=None):
    """``R.T @ diag(weights) @ y`` for ``R`` the one-hot of ``labels`` and a dense ``y``: as
    the CPU backend's, through the CSR of ``R`` (no atomics: the same sums on every run)."""
    dtype = np.result_type(y.dtype, np.float32)
    summed = one_hot(labels, n_groups, weights, dtype).T @ cp.asarray(y).astype(dtype,
                                                                                copy=False)
    return cp.asarray(summed)


def group_counts(row_map, labels, n_groups, weights=None, dtype=np.float64):
    """``I.T @ diag(weights) @ R`` for ``R`` the one-hot of ``labels`` (n_source x n_groups).

    As the CPU backend's: CSR for the identity map, else dense up to ``group_cells_per_row``
    (a setting) cells per target row, CSR beyond.
    """
    if row_map.indices is None:
        return one_hot(labels, n_groups, weights, dtype)
    labels = cp.asarray(labels)
    n = labels.shape[0]
    data = cp.ones(n, dtype) if weights is None else cp.asarray(weights).astype(dtype)
    rows, sources = _present(row_map)
    if rows is not None:
        labels, data = labels[rows], data[rows]
    shape = (row_map.n_source, n_groups)
    if shape[0] * shape[1] > get_config()["group_cells_per_row"] * n:
        index = _index_dtype(max(shape))
        return csp.coo_matrix((data, (sources.astype(index), labels.astype(index))),
                              shape=shape).tocsr()
    cells = sources.astype(np.int64) * n_groups + labels
    return cp.bincount(cells, weights=data, minlength=shape[0] * shape[1]).reshape(shape) \
        .astype(dtype, copy=False)


# ---------------------------------------------------------------------- products and sums
def _float_dtype(*dtypes):
    dtype = np.result_type(*dtypes)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _cast(a, dtype):
    if a.dtype == dtype:
        return a
    return a.astype(dtype) if csp.issparse(a) else a.astype(dtype, copy=False)


def scale_rows(y, weights):
    if weights is None:
        return y
    weights = cp.asarray(weights)
    if not csp.issparse(y):
        return _dense.scale_rows(y, weights)
    y = y.tocsr()
    dtype = np.result_type(y.dtype, weights.dtype)
    row_of_entry = cp.searchsorted(y.indptr, cp.arange(y.nnz), side="right") - 1
    data = y.data * weights[row_of_entry]
    return csp.csr_matrix((data.astype(dtype, copy=False), y.indices, y.indptr), shape=y.shape)


def dot(a, b):
    """``a @ b`` for any mix of dense and sparse operands, as a dense array.

    Both operands are cast to their common floating type first: cuSPARSE multiplies only
    operands of one type.
    """
    a_sparse, b_sparse = csp.issparse(a), csp.issparse(b)
    if not (a_sparse or b_sparse):
        return _dense.dot(a, b)
    dtype = _float_dtype(a.dtype, b.dtype)
    a, b = _cast(a, dtype), _cast(b, dtype)
    if a_sparse and b_sparse:
        return (a @ b).toarray()
    if b_sparse:
        return cp.asarray((b.T @ a.T).T)
    return cp.asarray(a @ b)


def weighted_gram(s, weights=None):
    """``s.T @ diag(weights) @ s`` as a dense array."""
    if csp.issparse(s):
        return dot(s.T, scale_rows(s, weights))
    return _dense.weighted_gram(s, _on_device(weights))


def sum_of_centered_slices(s, mean, term):
    """``term(0, n_rows, s - mean)``: one slice of every row, in a centered copy on the device,
    whose memory bandwidth leaves little to gain from slices that stay in a cache (the CPU
    backend's slices keep theirs in it)."""
    return term(0, s.shape[0], s - mean)


def column_sums(s, weights=None):
    """Column sums of ``diag(weights) @ s``."""
    weights = _on_device(weights)
    if not csp.issparse(s):
        return _dense.column_sums(s, weights)
    if weights is None:
        return cp.asarray(s.sum(axis=0)).ravel()
    return dot(weights[None, :], s).ravel()


def _on_device(weights):
    """Host weights copied to the device (device ones and None as they are)."""
    return None if weights is None else cp.asarray(weights)


def row_sums(s):
    if csp.issparse(s):
        return cp.asarray(s.sum(axis=1)).ravel()
    return _dense.row_sums(s)


def row_sums_of_squares(s):
    if csp.issparse(s):
        return cp.asarray(s.multiply(s).sum(axis=1)).ravel()
    return _dense.row_sums_of_squares(s)


def take_columns(s, columns):
    return s[:, cp.asarray(columns)]


def scale_columns(s, factors):
    factors = cp.asarray(factors)
    if not csp.issparse(s):
        return _dense.scale_columns(s, factors)
    s = s.tocsr()
    dtype = np.result_type(s.dtype, factors.dtype)
    data = (s.data * factors[s.indices]).astype(dtype, copy=False)
    return csp.csr_matrix((data, s.indices, s.indptr), shape=s.shape)


def map_values(s, func):
    """``func`` on every value of a dense ``s``, or on the stored values of a compressed sparse
    one (``func(0) == 0`` keeps its zeros exact), as a new array or matrix of its structure.

    ``func`` gets a copy of the values (CuPy arrays cannot be made read-only), so it cannot
    change ``s``, and returns new values of the same shape.
    """
    if csp.issparse(s):
        return type(s)((func(s.data.copy()), s.indices.copy(), s.indptr.copy()), shape=s.shape)
    return func(s.copy())


def add_to_stored(s, shift):
    """``s`` with ``shift[j]`` added to every stored value of its column ``j`` (every value of
    a dense ``s``), as a new array or CSR matrix."""
    if not csp.issparse(s):
        return s + shift
    out = as_csr(s, s.dtype).copy()
    out.data += shift[out.indices]
    return out


def gather_sparse_rows(s, row_map):
    """``I @ s`` as CSR, for a sparse or dense ``s``."""
    s = as_csr(s, s.dtype)
    if row_map.indices is None:
        return s
    indicator = _indicator(row_map, s.dtype)
    if indicator.nnz == 0 or s.nnz == 0:
        return csp.csr_matrix((row_map.n_target, s.shape[1]), dtype=s.dtype)
    return (indicator @ s).tocsr()


def placement(columns, n_columns, dtype):
    """``P.T`` (c_b x c_T, CSR): moves a block's columns to their target columns."""
    c = len(columns)
    index_dtype = _index_dtype(max(c, n_columns))
    return _mark_canonical(csp.csr_matrix(
        (cp.ones(c, dtype), cp.asarray(columns, dtype=index_dtype),
         cp.arange(c + 1, dtype=index_dtype)),
        shape=(c, n_columns),
    ))


def threads():
    """One: the device already runs each product in parallel, in queue order."""
    return 1


def map_in_threads(func, items):
    """``[func(item) for item in items]``, in order (see :func:`threads`)."""
    return [func(item) for item in items]


def one_thread(enabled=True):
    """A context that changes nothing: the device has no host threads to spare (the CPU
    backend's limits BLAS to one thread)."""
    return contextlib.nullcontext()


# ---------------------------------------------------------------------- device
def synchronize():
    """Wait for the work queued on the current device (for honest timings)."""
    cp.cuda.Device().synchronize()


def free_memory():
    """Bytes a new allocation can still get: free on the device plus CuPy's cached blocks."""
    free, _ = cp.cuda.Device().mem_info
    return int(free) + int(cp.get_default_memory_pool().free_bytes())


def release_memory():
    """Return CuPy's cached, unused blocks to the device (after an out-of-memory error)."""
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


def device_info():
    """What the cost model and the benchmarks record about the current device."""
    device = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(device.id)
    label = props.get("name", b"")
    _, total = device.mem_info
    return {
        "backend": name,
        "name": label.decode() if isinstance(label, bytes) else str(label),
        "memory_bytes": int(total),
        "multiprocessors": int(props.get("multiProcessorCount", 0)),
        "compute_capability": str(device.compute_capability),
        "cupy_version": cp.__version__,
    }
