"""The backends' dense array code, written once against the array API.

Each function here is the dense case of a backend primitive of the same name. Its operands
are dense arrays of one library (numpy on the CPU, CuPy on the GPU: the backend moves host
weights to the device first), and it computes with operators and with the array API namespace
of its first operand (:func:`._array_api.get_namespace`), whose functions for numpy and CuPy are
those libraries' own: nothing is copied or converted that the library's own code would not.

The backend modules keep what differs per library: the sparse kernels, gathers, scatters,
bincounts, transfers and device queries. Each of their primitives that also takes sparse
operands handles those itself and hands dense ones to the function here; a primitive with no
sparse case (:func:`add_at_columns`) is this module's function, re-exported. One indexing
expression for dense and sparse operands alike stays in the backends (``take_columns``, whose
index the GPU copies to the device), as do transfers (``to_dense``).

Beyond the array API standard, three habits that numpy and CuPy share are used:
``einsum`` in :func:`row_sums_of_squares` (a sum of products without the temporary of the
products), an index array next to a slice in :func:`add_at_columns` (for columns that do not
run consecutively), and ``numpy.errstate`` in :func:`all_finite` (which silences numpy's
overflow warnings and does nothing for other libraries). One choice is numpy's alone:
:func:`dot` hands numpy's products of small results to ``numpy.dot``, which releases the GIL
where ``@`` holds it.

Examples
--------
>>> import numpy as np
>>> from sklearn_ilargi.backend import _dense
>>> s = np.array([[1.0, 2.0], [3.0, 4.0]])
>>> _dense.weighted_gram(s, np.array([1.0, 4.0]))
array([[37., 50.],
       [50., 68.]])
>>> _dense.row_sums_of_squares(s)
array([ 5., 25.])
"""

import numpy as np

from .._config import get_config
from ._array_api import get_namespace


def all_finite(values):
    """Whether the dense array ``values`` holds no NaN or infinity.

    A finite sum proves it without the temporary mask that ``isfinite`` makes; only a sum
    that is not finite (a NaN, an infinity, or an overflow) looks at each value.
    """
    xp = get_namespace(values)
    with np.errstate(over="ignore", invalid="ignore"):
        if bool(xp.isfinite(xp.sum(values))):
            return True
    return bool(xp.all(xp.isfinite(values)))


def dot(a, b):
    """``a @ b`` for dense ``a`` and ``b``.

    A numpy product of a small result (at most ``small_product_cells`` cells, a setting: a
    gram, a transposed product, a dot product of two columns) goes through ``numpy.dot``,
    which releases the GIL while BLAS runs; numpy's ``matmul`` holds it for such products,
    so that the products of the backend's threads would run one after the other. A larger
    product stays with ``matmul``, which releases the GIL for it too and keeps a
    column-major matrix times a vector on BLAS, where ``numpy.dot`` does not.
    """
    if (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
            and _cells(a, b) <= get_config()["small_product_cells"]
            and (b.ndim == 2 or a.ndim == 1 or a.flags.c_contiguous)):
        return np.dot(a, b)
    return a @ b


def _cells(a, b):
    """The number of cells of ``a @ b``."""
    return (a.shape[0] if a.ndim == 2 else 1) * (b.shape[-1] if b.ndim == 2 else 1)


def scale_rows(y, weights):
    """``diag(weights) @ y`` for a 1-D or 2-D ``y``; ``y`` itself when ``weights`` is None."""
    if weights is None:
        return y
    return y * (weights if y.ndim == 1 else weights[:, None])


def scale_columns(s, factors):
    """``s @ diag(factors)``."""
    return s * factors


def weighted_gram(s, weights=None):
    """``s.T @ diag(weights) @ s``.

    Non-negative weights go to both sides as their square roots: one operand times its own
    transpose, which numpy hands to BLAS's symmetric rank-k update, half the work of a
    general product.
    """
    if weights is not None:
        xp = get_namespace(s)
        if bool(xp.all(weights >= 0)):
            s, weights = scale_rows(s, xp.sqrt(weights)), None
    return dot(s.T, scale_rows(s, weights))


def column_sums(s, weights=None):
    """Column sums of ``diag(weights) @ s`` for a 2-D ``s``."""
    if weights is None:
        return get_namespace(s).sum(s, axis=0)
    return dot(weights[None, :], s)[0, :]


def row_sums(s):
    """Row sums of a 2-D ``s``."""
    return get_namespace(s).sum(s, axis=1)


def row_sums_of_squares(s):
    """Row sums of ``s * s`` for a 2-D ``s``, without forming ``s * s``."""
    return get_namespace(s).einsum("ij,ij->i", s, s)


def add_at_columns(out, columns, values):
    """``out[:, columns] += values`` (``columns``, host integers, has no repeats).

    Consecutive columns are a slice; others an index array of ``out``'s library.
    """
    index = _column_slice(columns)
    if not isinstance(index, slice):
        index = get_namespace(out).asarray(index)
    out[:, index] += values


def _column_slice(columns):
    """Host ``columns`` as a slice where they run consecutively: a view in place of the
    copy and write-back of a fancy index."""
    columns = np.asarray(columns)
    if columns.size and columns[-1] - columns[0] == columns.size - 1 and (
            np.diff(columns) == 1).all():
        return slice(int(columns[0]), int(columns[-1]) + 1)
    return columns
