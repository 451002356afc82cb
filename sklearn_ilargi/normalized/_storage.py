"""How each block's source is stored for computing: dense or sparse, row- or column-major.

Decided once, when a matrix is built, from the settings (``sklearn_ilargi.set_config``):

- a sparse source at least ``dense_storage_density`` full becomes dense: at most 4x the bytes
  of CSR there (8 bytes a cell against 12 a stored value), and its products run in
  multi-threaded BLAS instead of single-threaded sparse kernels. So does a small one (at most
  ``dense_storage_max_cells`` cells), where scipy.sparse's fixed cost per product is more than
  its work;
- a tall, narrow fact table (``column_major_min_rows``, ``column_major_max_columns``) is
  stored column-major: BLAS's matrix-vector products then sweep long columns instead of a
  short dot product per row;
- a dimension narrow enough for the gram to join it (``gram_join_max_columns``) is
  column-major too, since the gram gathers it a column at a time. Wider ones stay row-major,
  so that gathering a row reads one contiguous run.
"""

import numpy as np
import scipy.sparse as sp

from .._config import get_config
from ._parse import check_source


def dense_enough(nnz, shape):
    """Whether a block with ``nnz`` stored values is best kept dense."""
    config = get_config()
    cells = shape[0] * shape[1]
    return nnz >= config["dense_storage_density"] * cells or \
        cells <= config["dense_storage_max_cells"]


def column_major(shape, *, is_fact):
    """Whether a dense block is best kept column-major."""
    config = get_config()
    if is_fact:
        return (shape[0] >= config["column_major_min_rows"]
                and shape[1] <= config["column_major_max_columns"])
    return 1 < shape[1] <= config["gram_join_max_columns"]


def storage_layout(source, *, is_fact):
    """A block's source as it is best stored (at most one copy, at construction)."""
    order = "F" if column_major(source.shape, is_fact=is_fact) else "C"
    if sp.issparse(source):
        return source.toarray(order=order) if dense_enough(source.nnz, source.shape) else source
    return np.asfortranarray(source) if order == "F" else source


def stored_dimension(source, dtype, where):
    """A dimension source checked, cast to ``dtype`` and in its storage layout: as every
    matrix built over it stores it, so that the matrices that share the result (the
    partitions of a PartitionedMatrix) store it without a copy each."""
    source = check_source(source, where)
    return storage_layout(source.astype(dtype, copy=False), is_fact=False)
