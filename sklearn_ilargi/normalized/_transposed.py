"""The transpose of a normalized matrix, a lazy view whose products run the transposed
rewrites."""

import numpy as np

from .. import ops


class TransposedView:
    """The transpose of a matrix held by reference: its shape, dtype and ``.T``; subclasses
    give it the products."""

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


class TransposedNormalizedMatrix(TransposedView):
    """``nm.T``: a lazy view whose products run the transposed rewrites."""

    def __matmul__(self, y):
        """``T.T @ y``; for a NormalizedMatrix ``y`` over the same target rows, a dense
        (n_columns, y.n_columns) array computed over both matrices' sources (the gram when
        ``y`` is this matrix, or one of the same sources, row maps and shift)."""
        from ._matrix import NormalizedMatrix  # here: that module imports this one

        if isinstance(y, NormalizedMatrix):
            return self._cross_product(y)
        return _transpose(self.matrix.__rmatmul__(_transpose(y)))

    def _cross_product(self, other):
        matrix = self.matrix
        if other.shape[0] != matrix.shape[0]:
            raise ValueError(
                f"matmul: A.T @ B needs A and B over the same target rows; A has "
                f"{matrix.shape[0]} rows, B has {other.shape[0]}."
            )
        if other.device != matrix.device:
            raise ValueError(
                f"matmul: A is on the {matrix.device} and B on the {other.device}; move one "
                "with .to(device)."
            )
        if _same_matrix(matrix, other):
            return matrix.gram()
        return ops.cross_product(matrix, other)

    def __rmatmul__(self, z):
        """``z @ T.T`` = ``(T @ z.T).T``."""
        return _transpose(self.matrix @ _transpose(z))

    def __repr__(self):
        return f"{self.matrix!r}.T"

    def __sklearn_ilargi_device__(self):
        return self.matrix.device

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.matrix, dtype=dtype).T


def _same_matrix(a, b):
    """Whether ``a`` and ``b`` are one matrix: the same source objects in the same columns,
    row maps equal in value, equal shifts (then ``a.T @ b`` is ``a``'s gram)."""
    if a is b:
        return True
    if a.shape != b.shape or len(a.blocks) != len(b.blocks):
        return False
    if (a.shift is None) != (b.shift is None) or (
            a.shift is not None and not bool((a.shift == b.shift).all())):
        return False
    return all(
        x.source is y.source and np.array_equal(x.columns, y.columns)
        and x.row_map.equals(y.row_map)
        for x, y in zip(a.blocks, b.blocks)
    )


def _transpose(a):
    return a.T if getattr(a, "ndim", 0) == 2 else a
