"""The training matrix of a fit over Dask partitions: per row partition, then reduce.

:class:`~sklearn_ilargi.utils.TrainingMatrix` of a
:class:`~sklearn_ilargi.normalized.PartitionedMatrix` is a :class:`PartitionedTrainingMatrix`:
each partition is an ordinary in-memory ``TrainingMatrix`` (over a NormalizedMatrix on the
factorized path, over that partition's join on the materialized one), built where the
partition lives, and every method runs on each partition and adds the results up as a tree
(``PartitionedMatrix.reduce_partitions``). The solvers therefore run unchanged: they receive
numpy reductions (``c`` or ``c x c`` numbers) and numpy vectors of ``n`` rows; the ``n x c``
data stay on the workers.
"""

import operator

import numpy as np

from ..normalized._partitioned import import_dask, on_partition
from ._training_matrix import TrainingMatrix


class PartitionedTrainingMatrix(TrainingMatrix):
    """``X - 1 offset^T`` for a PartitionedMatrix ``X``, one TrainingMatrix per partition.

    Made by ``TrainingMatrix(X)`` for partitioned ``X``; the methods and their results are
    those of :class:`~sklearn_ilargi.utils.TrainingMatrix`, except that :meth:`matmul` with
    ``lazy=True`` keeps its rows a Dask array. Each task builds its partition's
    TrainingMatrix from the partition's data and replays the derivations (centering,
    scaling) on it, so that only matrices and arrays travel between processes.

    Parameters
    ----------
    X : PartitionedMatrix
    offset : ndarray of shape (n_features,), default=None
    source : PartitionedMatrix, default=None
        The data the partitions' TrainingMatrix objects start from (``X`` when None).
    base_offset : ndarray, default=None
        Their offset.
    steps : tuple of (str, tuple), default=()
        The derivations replayed on them: ``(method, args)``.
    """

    def __new__(cls, X=None, offset=None, source=None, base_offset=None, steps=()):
        return object.__new__(cls)

    def __init__(self, X, offset=None, source=None, base_offset=None, steps=()):
        super().__init__(X, offset)
        self._source = X if source is None else source
        self._base_offset = offset if source is None else base_offset
        self._steps = tuple(steps)

    def _derived(self, method, *args):
        """A PartitionedTrainingMatrix of every partition's ``method(*args)``."""
        steps = self._steps + ((method, args),)
        data = self._source.map_partitions(_derived_data, self._base_offset, steps)
        template = _replayed(self._source.template, self._base_offset, steps)
        return PartitionedTrainingMatrix(data, template.offset, self._source,
                                         self._base_offset, steps)

    def _reduce(self, method, *args, rows=(), combine=operator.add, source=None,
                skip_empty=False):
        source = self._source if source is None else source
        return source.reduce_partitions(_run, self._base_offset, self._steps, method, args,
                                        rows=rows, combine=combine, skip_empty=skip_empty)

    def reduce(self, func, *args, rows=(), combine=operator.add):
        """``func(matrix, *row_pieces, *args)`` of every non-empty partition's
        TrainingMatrix, combined pairwise as a tree: a reduction that the methods do not
        cover, in one pass over the partitions.

        Parameters
        ----------
        func : callable
            A module-level function (tasks pickle it) of a partition's TrainingMatrix, the
            pieces of ``rows`` that belong to it, and ``args``.
        *args : object
            Passed to every call as they are.
        rows : sequence of array-like, default=()
            Operands of ``n_samples`` rows, cut into the partitions' rows.
        combine : callable, default=operator.add
            Joins two partial results.

        Returns
        -------
        object
            The combined value.
        """
        return self._reduce(func, *args, rows=rows, combine=combine, skip_empty=True)

    def _stacked(self, method, *args, source=None):
        source = self._source if source is None else source
        return source.concatenate_partitions(_run, self._base_offset, self._steps, method,
                                             args)

    def on_heaviest_partition(self, func, sample_weight=None):
        """``func(matrix, weights)`` of the TrainingMatrix of the partition whose rows weigh
        the most (without weights, the one with the most rows, and None), and of their
        weights, computed where that partition lives: only the result travels."""
        source = self._source
        if sample_weight is None:
            pieces = [None] * source.npartitions
            heaviest = int(np.argmax(source.row_counts))
        else:
            pieces = np.split(np.asarray(sample_weight), np.cumsum(source.row_counts)[:-1])
            heaviest = int(np.argmax([piece.sum() for piece in pieces]))
        (value,) = _compute_on(source.partitions[heaviest], _run, pieces[heaviest],
                               self._base_offset, self._steps, func, ())
        return value

    # ------------------------------------------------------------------ products
    def matmul(self, W, lazy=False):
        """``(X - 1 offset^T) @ W``: a numpy array, or with ``lazy`` a Dask array whose
        rows stay where they were computed (predictions)."""
        out = self._stacked("matmul", np.asarray(W))
        return out if lazy else np.asarray(out.compute())

    def rmatmul(self, R):
        return self._reduce("rmatmul", rows=(R,))

    def argmin_of_product(self, W, bias, values=True):
        pairs = np.asarray(self._stacked("_argmin_pairs", W, bias).compute())
        return pairs[:, 0].astype(np.int32), pairs[:, 1] if values else None

    def product_slices(self, W, bias):
        """As :meth:`TrainingMatrix.product_slices`, one partition at a time: each
        partition's slices are computed where it lives and brought here together (``p``
        values per row of that partition), then handed on in row order."""
        source = self._source
        start_of_partition = 0
        for part, n_rows in zip(source.partitions, source.row_counts):
            if n_rows:
                (slices,) = _compute_on(part, _run, self._base_offset, self._steps,
                                        "_copied_product_slices", (W, bias))
                for start, stop, values in slices:
                    yield start_of_partition + start, start_of_partition + stop, values
            start_of_partition += n_rows

    # ------------------------------------------------------------------ reductions
    def column_sums(self, sample_weight=None):
        return self._reduce("column_sums", rows=(sample_weight,))

    def group_sums(self, labels, n_groups, sample_weight=None):
        return self._reduce("_group_sums", n_groups, rows=(labels, sample_weight))

    def gram(self, sample_weight=None):
        return self._reduce("gram", rows=(sample_weight,))

    def centered(self, mean):
        return self._derived("centered", np.asarray(mean, dtype=np.float64))

    def column_sums_of_squares(self, sample_weight=None):
        return self._reduce("column_sums_of_squares", rows=(sample_weight,))

    def row_norms_squared(self):
        if self._row_norms_squared is None:
            self._row_norms_squared = np.asarray(self._stacked("row_norms_squared").compute())
        return self._row_norms_squared

    # ------------------------------------------------------------------ rows and columns
    def scale_columns(self, factors):
        return self._derived("scale_columns", np.asarray(factors))

    def rows(self, indices):
        picked = self._source._select_rows(np.asarray(indices))
        return np.asarray(self._stacked("_all_rows", source=picked).compute())

    def compacted(self):
        """This matrix: every task already computes on its partition compacted (the
        partition's working copy, see ``normalized._partitioned.working_copy``), while the
        partitions themselves keep sharing the dimensions."""
        return self

    def compact_rows(self, indices):
        """:meth:`select_rows` (see :meth:`compacted`)."""
        return self.select_rows(indices)

    def select_rows(self, indices):
        indices = np.asarray(indices)
        return PartitionedTrainingMatrix(self.X[indices], self.offset,
                                         self._source._select_rows(indices),
                                         self._base_offset, self._steps)


def _replayed(part, offset, steps):
    """The TrainingMatrix of one partition's data, with the derivations replayed."""
    matrix = TrainingMatrix(part, offset)
    for method, args in steps:
        matrix = getattr(matrix, method)(*args)
    return matrix


def _derived_data(part, offset, steps):
    return _replayed(part, offset, steps).X


def _run(part, *rest):
    """``method(*rows, *args)`` of one partition's TrainingMatrix (see :func:`_replayed`), or
    ``method(matrix, *rows, *args)`` for a function."""
    *rows, offset, steps, method, args = rest
    matrix = _replayed(part, offset, steps)
    if callable(method):
        return method(matrix, *rows, *args)
    if method == "_argmin_pairs":
        columns, smallest = matrix.argmin_of_product(*args)
        return np.column_stack([columns, smallest])
    if method == "_copied_product_slices":
        return [(start, stop, values.copy())
                for start, stop, values in matrix.product_slices(*args)]
    if method == "_group_sums":
        labels, weights = rows
        return matrix.group_sums(labels, args[0], weights)
    if method == "_all_rows":
        return matrix.rows(np.arange(matrix.shape[0]))
    return getattr(matrix, method)(*rows, *args)


def _compute_on(part, func, *args):
    """``func(part, *args)`` computed where ``part`` lives (on its working copy)."""
    dask, _, delayed = import_dask()
    return dask.compute(delayed(on_partition, pure=True)(func, part, *args))


__all__ = ["PartitionedTrainingMatrix"]
