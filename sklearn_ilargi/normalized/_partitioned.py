"""PartitionedMatrix: a NormalizedMatrix whose target rows are split into Dask partitions.

The fact side (the fact table, or the row maps of a wide many-to-many target) is cut into row
partitions that Dask holds, on its workers where a distributed client is active; the dimension
sources, small by nature, are sent to the workers once. Each partition *is* an ordinary
in-memory :class:`NormalizedMatrix` over the shared dimensions, built lazily where it runs, so
every factorized operation is reused as it is: per row partition, then reduce (DESIGN.md,
section 5c). Row-shaped results (``T @ W``, row norms, the joined matrix) are dask arrays of
the target's rows; reductions (``T.T @ Y``, the gram, column and group sums) are sums of
per-partition results, added as a tree and returned as numpy arrays. Nothing collects the
fact table or joins it in one place.

Dask is imported only here and only when partitioned input is given: it is the
``distributed`` extra (``pip install "sklearn-ilargi[distributed]"``).
"""

import operator
import sys
import warnings
import weakref

import numpy as np

from ..backend import get_backend
from ..exceptions import MaterializationWarning
from ..ops._products import join_is_sparse
from ._compact import compacted, detached
from ._matrix import NormalizedMatrix
from ._parse import check_source, result_dtype, source_name
from ._selection import _is_single, _row_indices, _split_key
from ._transposed import TransposedView
from ._row_map import RowMap
from ._storage import stored_dimension


def import_dask():
    """``dask``, ``dask.array`` and ``dask.delayed``, or an ImportError naming the extra."""
    try:
        import dask
        import dask.array as da
    except ImportError as error:  # pragma: no cover - the extra is installed in CI
        raise ImportError(
            "Partitioned input needs Dask: pip install \"sklearn-ilargi[distributed]\"."
        ) from error
    return dask, da, dask.delayed


def is_dask_collection(x):
    """Whether ``x`` is a Dask array, DataFrame or Series (never imports Dask itself:
    without Dask imported, nothing can be one)."""
    dask = sys.modules.get("dask")
    return dask is not None and dask.is_dask_collection(x)


def distributed_client():
    """The ``distributed.Client`` that computations run on now, or None (no cluster, no
    ``distributed``, or another scheduler chosen with ``dask.config.set(scheduler=...)``)."""
    if "distributed" not in sys.modules:
        return None
    from dask.base import get_scheduler
    from distributed import get_client

    try:
        client = get_client()
    except ValueError:
        return None
    return client if get_scheduler() == client.get else None


def broadcast(value):
    """``value`` as one Dask object that every partition's task reads: scattered to every
    worker of an active distributed client (sent once per worker, not once per task), else
    one key of the graph.

    The client sends it straight to a worker, which copies it to the others, unless the
    client was made with ``direct_to_workers=False``: through the scheduler, the client and
    the scheduler would each hold a serialized copy of it (the dimensions, at once) while
    it is sent."""
    client = distributed_client()
    if client is not None:  # a list is scattered item by item: wrap it to send it whole
        _warn_of_in_process_monitors(client)
        direct = client.direct_to_workers is not False
        return client.scatter([value], broadcast=True, hash=False, direct=direct)[0]
    _, _, delayed = import_dask()
    return delayed(value, traverse=False)


#: The clients whose workers :func:`_warn_of_in_process_monitors` has checked.
_CHECKED_CLIENTS = weakref.WeakSet()


def _warn_of_in_process_monitors(client):
    """Warns, once per client, where its workers are threads of this process whose memory
    monitors spill or pause: each reads the memory of the whole process (the client, the
    dimensions and every worker), and would spill and pause for memory that is not its own."""
    if client in _CHECKED_CLIENTS:
        return
    _CHECKED_CLIENTS.add(client)
    monitors = client.run(_memory_monitor)
    if any(address.startswith("inproc://") and limit and any(fractions)
           for address, (limit, *fractions) in monitors.items()):
        warnings.warn(
            "The workers of this Dask client are threads of this process (LocalCluster("
            "processes=False)) with a memory limit and spilling or pausing on: each worker's "
            "memory monitor reads the whole process (the client, the dimensions and every "
            "worker), and would spill and pause for memory that is not its own. Turn them "
            "off before the cluster starts: dask.config.set({f\"distributed.worker.memory."
            "{k}\": False for k in (\"target\", \"spill\", \"pause\", \"terminate\")}).",
            UserWarning, stacklevel=3)


def _memory_monitor(dask_worker):
    """A worker's memory limit and the fractions of it at which it spills or pauses."""
    memory = dask_worker.memory_manager
    return (memory.memory_limit, memory.memory_target_fraction,
            memory.memory_spill_fraction, memory.memory_pause_fraction)


class PartitionedMatrix:
    """A NormalizedMatrix whose target rows are held as Dask partitions.

    Each partition is an in-memory :class:`NormalizedMatrix` (or, once
    :meth:`materialize_partitions` joined it, that partition's joined matrix) over the
    dimension sources, which all partitions share. Build one with
    :meth:`NormalizedMatrix.from_matrices` from Dask arrays, or with
    :func:`~sklearn_ilargi.from_tables` from a ``dask.dataframe.DataFrame`` fact table.

    Parameters
    ----------
    partitions : list of dask.delayed.Delayed
        One per row partition, in row order: what each holds.
    row_counts : sequence of int
        The rows of each partition.
    template : NormalizedMatrix, ndarray or sparse matrix
        A matrix with no rows and the same columns, dimensions and kind as every partition:
        what an operation gives on a partition is what it gives on the template (its shape,
        dtype, feature names), so that results are described, and operands checked, before
        anything runs.

    Attributes
    ----------
    shape : tuple of int
    dtype : numpy.dtype
    feature_names : ndarray of str or None
    npartitions : int

    See Also
    --------
    NormalizedMatrix.from_matrices : Builds one from Dask arrays.

    Examples
    --------
    >>> import dask
    >>> import dask.array as da
    >>> import numpy as np
    >>> from sklearn_ilargi import NormalizedMatrix
    >>> fact = da.from_array(np.arange(8.0).reshape(4, 2), chunks=(2, 2))
    >>> keys = da.from_array(np.array([0, 1, 1, 0]), chunks=2)
    >>> X = NormalizedMatrix.from_matrices([fact, np.array([[10.0], [20.0]])],
    ...                                    [da.arange(4, chunks=2), keys])
    >>> X
    PartitionedMatrix(shape=(4, 3), dtype=float64, npartitions=2, partitions='lazy')
    >>> with dask.config.set(scheduler="synchronous"):
    ...     (X @ np.ones(3)).compute()
    array([11., 25., 29., 23.])
    """

    __array_ufunc__ = None  # ndarray @ X defers to __rmatmul__

    def __init__(self, partitions, row_counts, template):
        self.partitions = list(partitions)
        self.row_counts = tuple(int(n) for n in row_counts)
        if len(self.partitions) != len(self.row_counts):
            raise ValueError("A PartitionedMatrix needs one row count per partition.")
        self.template = template
        self.shape = (sum(self.row_counts), int(template.shape[1]))
        self.dtype = np.dtype(template.dtype)
        self.device = "cpu"
        self._persisted = False

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_matrices(cls, sources, indicators, mappings=None, **options):
        """Build from sources and indicators of which some are Dask arrays.

        The Dask sources are the partitioned ones (the fact table): their rows are target
        rows, cut into the row partitions of the first Dask object among the sources and
        the indicators. Their indicators must reference rows of the same partition (a fact
        table's is the identity, ``dask.array.arange(n)``). The other sources are held in
        memory and broadcast. Indicators may be Dask arrays or in-memory arrays of ``n``
        rows; each is cut into the same row partitions. Unknown partition sizes are
        computed once, here.

        Parameters
        ----------
        sources : list of array-like, sparse matrix or dask.array.Array
            As for :meth:`NormalizedMatrix.from_matrices`; the Dask arrays are partitioned.
        indicators : list of array-like or dask.array.Array
            Row maps of ``n_rows`` entries (or indicator matrices), in memory or Dask.
        mappings : list or None, default=None
            As for :meth:`NormalizedMatrix.from_matrices`.
        **options : dict
            ``n_columns``, ``feature_names``, ``source_names``, as there.

        Returns
        -------
        PartitionedMatrix
            Its template (zero rows) checked every in-memory part at once: the dimension
            sources, the column maps, the feature names. The partitions' own values and row
            maps are checked where each is built.

        Examples
        --------
        >>> import dask.array as da
        >>> import numpy as np
        >>> from sklearn_ilargi.normalized import PartitionedMatrix
        >>> X = PartitionedMatrix.from_matrices(
        ...     [da.ones((5, 2), chunks=3), np.eye(2)],
        ...     [da.arange(5, chunks=3), np.array([0, 1, 1, 0, 1])])
        >>> X.row_counts, X.shape
        ((3, 2), (5, 4))
        """
        dask, da, delayed = import_dask()
        sources, indicators = list(sources), list(indicators)
        if len(indicators) != len(sources):
            raise ValueError(
                f"Got {len(sources)} sources but {len(indicators)} indicators; give one each."
            )
        row_chunks = _row_chunks(sources, indicators, options.get("source_names"))
        n_rows = sum(row_chunks)
        partitioned = [_is_dask_array(s) for s in sources]
        names = _names(len(sources), options.get("source_names"))
        for k, source in enumerate(sources):
            if partitioned[k]:
                sources[k] = _aligned(source, row_chunks, names[k], "rows")
        indicators = [_plain_indicator(g) for g in indicators]
        for k, indicator in enumerate(indicators):
            if partitioned[k] and indicator.ndim != 1:
                raise ValueError(
                    f"The indicator of the partitioned {names[k]} must be a row map (1-D: "
                    "its rows are the target's, e.g. dask.array.arange(n)), not a matrix."
                )
            if indicator.shape[0] != n_rows:
                raise ValueError(
                    f"The indicator of {names[k]} has {indicator.shape[0]} rows but the "
                    f"partitioned target has {n_rows}; all must cover the same target rows."
                )
        source_parts = [_pieces(s, row_chunks) if is_p else s
                        for s, is_p in zip(sources, partitioned)]
        indicator_parts, seen = [], {}
        for indicator in indicators:  # one split per object: sharing it shares its gathers
            if id(indicator) not in seen:
                seen[id(indicator)] = _pieces(indicator, row_chunks)
            indicator_parts.append(seen[id(indicator)])
        return cls._from_pieces(
            source_parts, indicator_parts, row_chunks,
            [_meta(s) if is_p else s for s, is_p in zip(sources, partitioned)],
            [_no_rows(g) for g in indicators], mappings, **options)

    @classmethod
    def _from_pieces(cls, sources, indicators, row_counts, template_sources,
                     template_indicators, mappings=None, bundles=None, **options):
        """Build from sources and indicators already cut into the row partitions.

        ``sources[k]`` is a list of one piece per partition (a partitioned source) or one
        in-memory matrix (a dimension, broadcast); ``indicators[k]`` a list of pieces. Pieces
        are arrays or Delayed objects: each partition's task reads its own, so that pieces
        that one task computes together (one fact partition's values and row maps) are
        computed once. With ``bundles`` (one Delayed per partition, of a tuple), a piece may
        be a :class:`Picked` position in its partition's bundle: the partition's task then
        takes it from there, so that no task holds the piece apart from the task that uses
        it. ``template_sources`` and ``template_indicators`` are the same with zero rows,
        which check the in-memory parts before anything runs.
        """
        _, _, delayed = import_dask()
        partitioned = [isinstance(s, list) for s in sources]
        names = [source_name(k, options.get("source_names")) for k in range(len(sources))]
        dtype = result_dtype([check_source(t if is_p else s, name) for s, t, is_p, name
                              in zip(sources, template_sources, partitioned, names)])
        # The dimensions as every partition stores them, checked and laid out once, here:
        # each partition's matrix then holds the broadcast arrays themselves, not a copy
        # per partition. They are sent to the workers and not kept here: the template
        # holds none of their rows.
        shared = [None if is_p else stored_dimension(s, dtype, name)
                  for s, is_p, name in zip(sources, partitioned, names)]
        template = _without_source_rows(NormalizedMatrix.from_matrices(
            [t if is_p else d for t, d, is_p in zip(template_sources, shared, partitioned)],
            template_indicators, mappings, **options))
        shared = broadcast(shared)
        starts = np.cumsum((0,) + tuple(row_counts)[:-1])
        build = delayed(_build_partition, pure=True)
        partitions = [
            build(shared, [parts[i] if is_p else None
                           for parts, is_p in zip(sources, partitioned)],
                  [parts[i] for parts in indicators], partitioned, int(starts[i]),
                  mappings, options, None if bundles is None else bundles[i])
            for i in range(len(row_counts))
        ]
        return cls(partitions, row_counts, template)

    def _like(self, partitions, row_counts=None, template=None):
        return PartitionedMatrix(partitions, self.row_counts if row_counts is None
                                 else row_counts, self.template if template is None
                                 else template)

    # ------------------------------------------------------------------ map and reduce
    def map_partitions(self, func, *args, rows=()):
        """``func(partition, *row_pieces, *args)`` on every partition, lazily.

        Parameters
        ----------
        func : callable
            Maps a partition (and the pieces of ``rows`` that belong to it) to a matrix of
            the partition's rows. A module-level function, so that tasks pickle.
        *args : object
            Passed to every call as they are (small operands).
        rows : sequence of array-like, default=()
            Operands of ``n_rows`` rows (numpy or Dask arrays, sparse matrices, None), each
            cut into the partitions' rows (:meth:`split_rows`).

        Returns
        -------
        PartitionedMatrix
            Over the same row partitions; its template is ``func`` of this one's template,
            which checks the operands before anything runs.

        Examples
        --------
        >>> import operator
        >>> import dask
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 2), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> doubled = X.map_partitions(operator.mul, 2.0)
        >>> with dask.config.set(scheduler="synchronous"):
        ...     doubled.sum(axis=0)
        array([8., 8.])
        """
        template = func(self.template, *[_no_rows(r) for r in rows], *args)
        return self._like(self._calls(func, args, rows), template=template)

    def _calls(self, func, args, rows):
        _, _, delayed = import_dask()
        call = delayed(on_partition, pure=True)
        pieces = [self.split_rows(r) for r in rows]
        return [call(func, part, *[p[i] for p in pieces], *args)
                for i, part in enumerate(self.partitions)]

    def reduce_partitions(self, func, *args, rows=(), combine=operator.add, skip_empty=False):
        """``func`` of every partition, combined pairwise as a tree, computed.

        Parameters
        ----------
        func : callable
            ``func(partition, *row_pieces, *args)``: a partial result (a sum, say).
        *args : object
            As for :meth:`map_partitions`.
        rows : sequence of array-like, default=()
            As for :meth:`map_partitions`.
        combine : callable, default=operator.add
            Joins two partial results; each task combines two, so that no worker receives
            every partition's result.
        skip_empty : bool, default=False
            Leave out the partitions without rows (for reductions without an identity, a
            minimum); where every partition is empty, ``func`` of the template is returned
            (or raises, as the in-memory matrix does).

        Returns
        -------
        object
            The combined value (a numpy array for the sums).

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((6, 1), chunks=2)],
        ...                                    [da.arange(6, chunks=2)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.reduce_partitions(len)
        6
        """
        dask, _, delayed = import_dask()
        partials = [call for call, n in zip(self._calls(func, args, rows), self.row_counts)
                    if n or not skip_empty]
        if not partials:
            return func(self.template, *[_no_rows(r) for r in rows], *args)
        join = delayed(combine, pure=True)
        while len(partials) > 1:
            partials = [join(*partials[i:i + 2]) if i + 1 < len(partials) else partials[i]
                        for i in range(0, len(partials), 2)]
        (value,) = dask.compute(partials[0])
        return value

    def concatenate_partitions(self, func, *args, rows=()):
        """``func`` of every partition, each a result of the partition's rows, stacked.

        Parameters
        ----------
        func : callable
            ``func(partition, *row_pieces, *args)``: an array (or sparse matrix) whose
            first axis is the partition's rows.
        *args : object
            As for :meth:`map_partitions`.
        rows : sequence of array-like, default=()
            As for :meth:`map_partitions`.

        Returns
        -------
        dask.array.Array
            Of ``n_rows`` rows, lazy: its blocks are computed where the partitions live.
            Empty partitions contribute no block.

        Examples
        --------
        >>> import operator
        >>> import dask
        >>> import dask.array as da
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 2), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> rows = X.concatenate_partitions(operator.matmul, np.array([1.0, 2.0]))
        >>> with dask.config.set(scheduler="synchronous"):
        ...     rows.compute()
        array([3., 3., 3., 3.])
        """
        _, da, _ = import_dask()
        meta = func(self.template, *[_no_rows(r) for r in rows], *args)
        blocks = [da.from_delayed(call, shape=(n,) + meta.shape[1:], dtype=meta.dtype,
                                  meta=meta)
                  for call, n in zip(self._calls(func, args, rows), self.row_counts)]
        if not blocks:
            return da.from_array(meta, chunks=meta.shape or (0,))
        return da.concatenate(blocks, axis=0)

    def on_largest_partition(self, func, *args):
        """``func(partition, *args)`` for the partition with the most rows, computed where
        that partition lives: only the result travels.

        Parameters
        ----------
        func : callable
            ``func(partition, *args)``; its result is what travels back.
        *args : object
            Passed to ``func`` as they are.

        Returns
        -------
        object
            What ``func`` returns (of the template where there is no partition).

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((5, 1), chunks=3)],
        ...                                    [da.arange(5, chunks=3)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.on_largest_partition(len)
        3
        """
        if not self.partitions:
            return func(self.template, *args)
        dask, _, delayed = import_dask()
        largest = int(np.argmax(self.row_counts))
        (value,) = dask.compute(
            delayed(on_partition, pure=True)(func, self.partitions[largest], *args))
        return value

    def split_rows(self, a):
        """``a``, of ``n_rows`` rows, cut into the partitions' rows.

        Parameters
        ----------
        a : ndarray, dask.array.Array, sparse matrix, PartitionedMatrix or None
            A Dask array is rechunked to the partitions' rows (its blocks stay where they
            are); a PartitionedMatrix over the same partitions gives its partitions. An
            array in memory is cut into slices, scattered to the workers of an active
            distributed client.

        Returns
        -------
        list
            One piece per partition (numpy slices or, on a cluster, their futures; Dask
            blocks as Delayed; or None).

        Examples
        --------
        >>> import dask.array as da
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((5, 1), chunks=3)],
        ...                                    [da.arange(5, chunks=3)])
        >>> X.split_rows(np.arange(5))
        [array([0, 1, 2]), array([3, 4])]
        """
        if a is None:
            return [None] * self.npartitions
        if isinstance(a, PartitionedMatrix):
            if a.row_counts != self.row_counts:
                raise ValueError("Two partitioned matrices meet only over the same row "
                                 "partitions.")
            return a.partitions
        if _is_dask_array(a):
            return _pieces(_aligned(a, self.row_counts, "operand", "rows"), self.row_counts)
        if not hasattr(a, "shape"):
            a = np.asarray(a)
        if a.shape[0] != self.shape[0]:
            raise ValueError(
                f"An operand of {a.shape[0]} rows cannot be cut into the partitions of a "
                f"matrix of {self.shape[0]} rows."
            )
        pieces = _pieces(a, self.row_counts)
        client = distributed_client()
        if client is not None:  # sent to the workers once, not inside every graph
            pieces = client.scatter(pieces, hash=False)
        return pieces

    # ------------------------------------------------------------------ where the data is
    @property
    def npartitions(self):
        """The number of row partitions."""
        return len(self.partitions)

    @property
    def feature_names(self):
        """One name per target column (ndarray of str), or None."""
        return getattr(self.template, "feature_names", None)

    @property
    def backend(self):
        """The backend that runs every partition: the CPU's."""
        return get_backend("cpu")

    @property
    def ndim(self):
        """2: a matrix."""
        return 2

    @property
    def size(self):
        """The number of cells, ``n_rows * n_columns``."""
        return self.shape[0] * self.shape[1]

    @property
    def T(self):
        """The transpose, for ``X.T @ Y``: a TransposedPartitionedMatrix."""
        return TransposedPartitionedMatrix(self)

    @property
    def is_factorized(self):
        """Whether the partitions are normalized matrices (else: joined matrices)."""
        return isinstance(self.template, NormalizedMatrix)

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        where = "persisted" if self._persisted else "lazy"
        kind = "" if self.is_factorized else ", joined"
        return (f"PartitionedMatrix(shape={self.shape}, dtype={self.dtype}, "
                f"npartitions={self.npartitions}, partitions={where!r}{kind})")

    def __sklearn_ilargi_device__(self):
        return "cpu"

    def persist(self):
        """This matrix with its partitions built and kept, on the workers of an active
        distributed client: later operations (an iterative fit's passes) start from them
        instead of reading and matching the fact table again.

        Returns
        -------
        PartitionedMatrix
            Over the same rows, its partitions in memory (``repr`` says ``'persisted'``).

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 1), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.persist()
        PartitionedMatrix(shape=(4, 1), dtype=float64, npartitions=2, partitions='persisted')
        """
        dask, _, _ = import_dask()
        out = self._like(dask.persist(*self.partitions))
        out._persisted = True
        return out

    def to(self, device, *, cache=True):
        """This matrix on ``device``: a PartitionedMatrix runs on the CPU only.

        Parameters
        ----------
        device : {"cpu"}
            Anything else is refused.
        cache : bool, default=True
            Unused (there is no device copy to keep).

        Returns
        -------
        PartitionedMatrix
            This matrix.

        Examples
        --------
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 1), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> X.to("cpu") is X
        True
        """
        if device != "cpu":
            raise ValueError(
                f"A PartitionedMatrix runs on the CPU; got device={device!r}. GPU partitions "
                "are not supported yet."
            )
        return self

    def drop_device_copy(self):
        """Nothing to drop: a PartitionedMatrix holds no device copy.

        Returns
        -------
        None
            There is nothing to return: this method exists so that a fit's fallback to the
            CPU treats every matrix alike.

        Examples
        --------
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 1), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> X.drop_device_copy()
        """

    # ------------------------------------------------------------------ products
    def __matmul__(self, W):
        """``T @ W`` for ``W`` of shape (n_columns,) or (n_columns, p): a Dask array of
        ``n_rows`` rows."""
        return self.concatenate_partitions(operator.matmul, _small(W))

    def __rmatmul__(self, Z):
        """``Z @ T`` for ``Z`` of shape (n_rows,) or (q, n_rows): a numpy array."""
        Z_rows = Z.T if getattr(Z, "ndim", 1) == 2 else Z
        out = self.T @ Z_rows
        return out.T if getattr(Z, "ndim", 1) == 2 else out

    def gram(self, sample_weight=None):
        """``T.T @ diag(sample_weight) @ T``: the sum of the partitions' grams.

        Parameters
        ----------
        sample_weight : array-like of shape (n_rows,), default=None
            Numpy or Dask; None weighs every row 1.

        Returns
        -------
        ndarray of shape (n_columns, n_columns)
            The weighted gram of the joined matrix, never joined.

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 1), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.gram()
        array([[4.]])
        """
        return self.reduce_partitions(_gram, rows=(sample_weight,))

    def group_sums(self, labels, n_groups, sample_weight=None):
        """``T.T @ R`` for ``R`` the (weighted) one-hot of ``labels``: the sum of the
        partitions' group sums.

        Parameters
        ----------
        labels : array-like of int of shape (n_rows,)
            Each row's group, in ``[0, n_groups)``; numpy or Dask.
        n_groups : int
            The number of groups.
        sample_weight : array-like of shape (n_rows,), default=None
            Each row's weight in its group's sums; None weighs every row 1.

        Returns
        -------
        ndarray of shape (n_columns, n_groups)
            Column ``g``: the (weighted) column sums of the rows labelled ``g``.

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 1), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.group_sums(np.array([0, 1, 1, 1]), 2)
        array([[1., 3.]])
        """
        return self.reduce_partitions(_group_sums, n_groups, rows=(labels, sample_weight))

    def sum(self, axis=None):
        """Sum of every cell, of each column or of each row.

        Parameters
        ----------
        axis : {None, 0, 1}, default=None
            None for every cell, 0 for each column, 1 for each row.

        Returns
        -------
        float, ndarray of shape (n_columns,) or dask.array.Array of shape (n_rows,)
            The row sums (``axis=1``) stay a Dask array.

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 2), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.sum(), X.sum(axis=0)
        (8.0, array([4., 4.]))
        """
        if axis in (1, -1):
            return self.concatenate_partitions(_sum, 1)
        if axis is None:
            return float(self.reduce_partitions(_sum, 0).sum())
        if axis not in (0, -2):
            raise ValueError(f"axis must be None, 0 or 1, got {axis!r}.")
        return self.reduce_partitions(_sum, 0)

    def mean(self, axis=None):
        """Mean of every cell, of each column or of each row.

        Parameters
        ----------
        axis : {None, 0, 1}, default=None
            None for every cell, 0 for each column, 1 for each row.

        Returns
        -------
        float, ndarray of shape (n_columns,) or dask.array.Array of shape (n_rows,)
            The sum or mean over the axis; the row sums or means stay a Dask array.

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 2), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.mean(axis=0)
        array([1., 1.])
        """
        if axis in (1, -1):
            return self.sum(axis=1) / self.shape[1]
        if axis is None:
            return self.sum() / self.size if self.size else float("nan")
        return self.sum(axis=0) / self.shape[0] if self.shape[0] else np.full(
            self.shape[1], np.nan)

    def row_norms(self, squared=False):
        """The Euclidean norm of each row.

        Parameters
        ----------
        squared : bool, default=False
            Return the squared norms.

        Returns
        -------
        dask.array.Array of shape (n_rows,)
            One norm per row, computed where the partitions live.

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 2), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.row_norms(squared=True).compute()
        array([2., 2., 2., 2.])
        """
        return self.concatenate_partitions(_row_norms, squared)

    def min(self, axis=None):
        """Smallest cell, or of each column.

        Parameters
        ----------
        axis : {None, 0}, default=None
            None for every cell, 0 for each column.

        Returns
        -------
        float or ndarray of shape (n_columns,)
            The extreme of every cell, or of each column.

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.arange(4.0, chunks=2)[:, None]],
        ...                                    [da.arange(4, chunks=2)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.min()
        0.0
        """
        return self._extreme("min", axis)

    def max(self, axis=None):
        """Largest cell, or of each column.

        Parameters
        ----------
        axis : {None, 0}, default=None
            None for every cell, 0 for each column.

        Returns
        -------
        float or ndarray of shape (n_columns,)
            The extreme of every cell, or of each column.

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.arange(4.0, chunks=2)[:, None]],
        ...                                    [da.arange(4, chunks=2)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.max(axis=0)
        array([3.])
        """
        return self._extreme("max", axis)

    def _extreme(self, kind, axis):
        if axis not in (None, 0, -2):
            return getattr(self.template, kind)(axis=axis)  # the in-memory matrix's error
        columns = self.reduce_partitions(_extreme, kind, 0, skip_empty=True,
                                         combine=np.minimum if kind == "min" else np.maximum)
        columns = get_backend("cpu").to_dense(columns).ravel()
        return columns if axis in (0, -2) else float(getattr(columns, kind)())

    def all_finite(self):
        """Whether every value is finite.

        Returns
        -------
        bool
            True when no value is NaN or infinite.

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 1), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.all_finite()
        True
        """
        return bool(self.reduce_partitions(_all_finite, combine=operator.and_, skip_empty=True))

    # ------------------------------------------------------------------ per partition
    def _elementwise(self, func, *args):
        """``func(partition, *args)`` on factorized partitions (joined ones, CSR among them,
        do not share the normalized matrix's operators)."""
        if not self.is_factorized:
            raise TypeError("Arithmetic on a PartitionedMatrix of joined partitions is not "
                            "supported; apply it before materialize_partitions().")
        return self.map_partitions(func, *args)

    def __mul__(self, other):
        return self._elementwise(operator.mul, _small(other))

    def __truediv__(self, other):
        return self._elementwise(operator.truediv, _small(other))

    def __add__(self, other):
        return self._elementwise(operator.add, _small(other))

    def __sub__(self, other):
        return self._elementwise(operator.sub, _small(other))

    def __rsub__(self, other):
        return self._elementwise(_reversed_sub, _small(other))

    def __neg__(self):
        return self._elementwise(operator.neg)

    def __pos__(self):
        return self

    def __pow__(self, power):
        return self._elementwise(operator.pow, power)

    def __abs__(self):
        return self._elementwise(operator.abs)

    __rmul__ = __mul__
    __radd__ = __add__

    def apply(self, func, *, name=None):
        """``func`` element-wise on every partition (see :meth:`NormalizedMatrix.apply`).

        Parameters
        ----------
        func : callable
            A numpy ufunc or function with ``func(0) == 0`` (checked on the template).
        name : str, optional
            Its name in error messages.

        Returns
        -------
        PartitionedMatrix
            Over the same row partitions, each partition transformed where it lives.

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 1), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.apply(np.square).sum()
        4.0
        """
        return self._elementwise(_apply, func, name)

    def with_shift(self, shift):
        """This matrix with ``shift`` added to every row: each partition's rank-one shift.

        Parameters
        ----------
        shift : array-like of shape (n_columns,)
            Added to every row.

        Returns
        -------
        PartitionedMatrix
            Over the same row partitions, each partition transformed where it lives.

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 1), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.with_shift(np.array([-1.0])).sum()
        0.0
        """
        return self._elementwise(NormalizedMatrix.with_shift, _small(shift))

    def with_shift_in_sources(self):
        """Each partition with its shift moved into its dense sources (see
        :meth:`NormalizedMatrix.with_shift_in_sources`).

        Returns
        -------
        PartitionedMatrix
            Over the same row partitions, each partition transformed where it lives.

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 1), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.with_shift(np.array([-1.0])).with_shift_in_sources().gram()
        array([[0.]])
        """
        return self._elementwise(NormalizedMatrix.with_shift_in_sources)

    def __getitem__(self, key):
        """Rows and columns, selected as :meth:`NormalizedMatrix.__getitem__` selects them.

        A selection of rows keeps their order: each run of consecutive selected rows that
        fall in one partition becomes a partition of the result. A single row is joined
        here (a numpy row); a single column stays a Dask array.
        """
        rows, columns = _split_key(key)
        one_row, one_column = _is_single(rows), _is_single(columns)
        out = self
        if columns is not None:
            out = out.map_partitions(_columns, [columns] if one_column else columns)
        if rows is not None:
            out = out._select_rows(_row_indices([rows] if one_row else rows, self.shape[0]))
        if not (one_row or one_column):
            return out
        joined = out.materialize(sparse=False)
        if one_row:
            row = np.asarray(joined.compute())[0]
            return row[0] if one_column else row
        return joined[:, 0]

    def _select_rows(self, indices, take=None):
        """The rows ``indices`` in their order: each run of them within one partition is
        ``take(partition, local_indices)`` (``partition[local_indices]`` by default)."""
        _, _, delayed = import_dask()
        starts = np.cumsum((0,) + self.row_counts)
        owner = np.searchsorted(starts, indices, side="right") - 1
        take = delayed(_take_rows if take is None else take, pure=True)
        partitions, counts = [], []
        runs = np.split(np.arange(len(indices)), np.flatnonzero(np.diff(owner)) + 1)
        for run in runs if len(indices) else []:
            part = owner[run[0]]
            partitions.append(take(self.partitions[part], indices[run] - starts[part]))
            counts.append(len(run))
        return self._like(partitions, counts)

    # ------------------------------------------------------------------ materialization
    def materialize_partitions(self, sparse="auto"):
        """Every partition joined with the broadcast dimensions, where it lives: the
        materialized path of a fit, which never collects the join.

        Parameters
        ----------
        sparse : "auto" or bool, default="auto"
            As for :meth:`NormalizedMatrix.materialize`; ``"auto"`` is decided once for
            every partition (see :meth:`join_is_sparse`).

        Returns
        -------
        PartitionedMatrix
            Whose partitions are ndarrays, or CSR matrices, all of one kind (``repr`` says
            ``joined``).

        Examples
        --------
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 1), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> X.materialize_partitions(sparse=False)
        PartitionedMatrix(shape=(4, 1), dtype=float64, npartitions=2, partitions='lazy', joined)
        """
        if not self.is_factorized:
            return self
        return self.map_partitions(_materialize, self._join_kind(sparse))

    def join_is_sparse(self):
        """Whether ``materialize(sparse="auto")`` builds CSR: the rule of
        :meth:`NormalizedMatrix.materialize` (some source sparse, no shift, and CSR takes
        less than the ``csr_join_max_share`` setting of the dense bytes), on the partition
        with the most rows, where it lives.

        One decision for every partition, as the dispatcher prices a fit on that partition,
        so that every chunk of the join is of one kind and the Dask array's ``meta`` says
        which. Reads one partition, not all of them.

        Returns
        -------
        bool
            True where the chunks of ``materialize()`` are CSR matrices, False where they
            are dense arrays.

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> import scipy.sparse as sp
        >>> from sklearn_ilargi import NormalizedMatrix, config_context
        >>> with config_context(dense_storage_max_cells=0):
        ...     X = NormalizedMatrix.from_matrices(
        ...         [da.ones((6, 1), chunks=3), sp.identity(500, format="csr")],
        ...         [da.arange(6, chunks=3), da.arange(6, chunks=3)])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.join_is_sparse()
        True
        """
        if not self.is_factorized:
            return get_backend("cpu").is_sparse(self.template)
        return bool(self.on_largest_partition(join_is_sparse))

    def _join_kind(self, sparse):
        """``sparse``, with ``"auto"`` decided once for every partition."""
        if isinstance(sparse, str) and sparse == "auto" and self.is_factorized:
            return self.join_is_sparse()
        return sparse

    def materialize(self, sparse="auto"):
        """The joined matrix as a Dask array, built partition by partition where they live.

        Parameters
        ----------
        sparse : "auto" or bool, default="auto"
            As for :meth:`NormalizedMatrix.materialize`: CSR chunks where sparse;
            ``"auto"`` is decided once for every partition (see :meth:`join_is_sparse`).

        Returns
        -------
        dask.array.Array of shape (n_rows, n_columns)
            The joined rows, each block joined where its partition lives; its ``meta`` is
            of the chunks' kind (an empty CSR matrix where they are CSR).

        Examples
        --------
        >>> import dask
        >>> import dask.array as da
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices(
        ...     [da.ones((3, 1), chunks=2), np.array([[5.0], [7.0]])],
        ...     [da.arange(3, chunks=2), np.array([0, 1, 0])])
        >>> with dask.config.set(scheduler="synchronous"):
        ...     X.materialize(sparse=False).compute()
        array([[1., 5.],
               [1., 7.],
               [1., 5.]])
        """
        return self.concatenate_partitions(_materialize, self._join_kind(sparse))

    def toarray(self):
        """The dense joined matrix: ``materialize(sparse=False)``.

        Returns
        -------
        dask.array.Array of shape (n_rows, n_columns)
            The joined rows, each block joined where its partition lives.

        Examples
        --------
        >>> import dask.array as da
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> X = NormalizedMatrix.from_matrices([da.ones((4, 1), chunks=2)],
        ...                                    [da.arange(4, chunks=2)])
        >>> X.toarray().shape
        (4, 1)
        """
        return self.materialize(sparse=False)

    def __array__(self, dtype=None, copy=None):
        warnings.warn(
            f"Collecting a {self.shape[0]} x {self.shape[1]} PartitionedMatrix into one "
            "array; call materialize() to build the join as a Dask array instead.",
            MaterializationWarning,
            stacklevel=2,
        )
        out = np.asarray(self.materialize(sparse=False).compute())
        return out if dtype is None else out.astype(dtype, copy=False)


class TransposedPartitionedMatrix(TransposedView):
    """``T.T`` of a PartitionedMatrix: ``T.T @ Y`` sums the partitions' ``T_p.T @ Y_p``."""

    def __matmul__(self, Y):
        """``T.T @ Y`` for ``Y`` of ``n_rows`` rows (numpy or Dask, chunks of any size), or
        ``A.T @ B`` for two partitioned matrices over the same row partitions."""
        return self.matrix.reduce_partitions(_transposed_matmul, rows=(Y,))

    def __repr__(self):
        return f"TransposedPartitionedMatrix(shape={self.shape})"

    def __sklearn_ilargi_device__(self):
        return "cpu"


# ---------------------------------------------------------------------- per-partition kernels
# Module functions (not lambdas), so that the tasks pickle to worker processes.
def on_partition(func, part, *args):
    """``func(part, *args)`` on the partition's working copy (:func:`working_copy`): every
    task over a partition runs through here."""
    return func(working_copy(part), *args)


def working_copy(part):
    """What a task over ``part`` computes on: for a NormalizedMatrix, its rows over copies
    of only the dimension rows that they read (``compacted``), with row maps of their own
    (``detached``); a joined partition as it is.

    A partition shares the whole dimensions: without the copy, every product would read
    every dimension row, the centering would copy every dimension whole, and the helpers
    that the products derive from the row maps would stay on the partition (a persisted one
    keeps them on its worker). The copy costs one read of the rows that the partition reads,
    and is dropped with the task's result.
    """
    if isinstance(part, NormalizedMatrix):
        return compacted(detached(part))
    return part


class Picked:
    """The piece at ``position`` of a partition's bundle (see
    ``PartitionedMatrix._from_pieces``)."""

    def __init__(self, position):
        self.position = position


def _build_partition(shared, source_parts, indicator_parts, partitioned, start, mappings,
                     options, bundle=None):
    if bundle is not None:
        def pick(part):
            return bundle[part.position] if isinstance(part, Picked) else part

        source_parts = [pick(part) for part in source_parts]
        indicator_parts = [pick(part) for part in indicator_parts]
    sources = [part if is_p else dim
               for part, dim, is_p in zip(source_parts, shared, partitioned)]
    indicators, rebased = [], {}
    for indicator, is_p in zip(indicator_parts, partitioned):
        if is_p:  # a partitioned source's rows are this partition's: count from its start
            key = id(indicator)
            if key not in rebased:
                g = np.asarray(indicator)
                rebased[key] = np.where(g >= 0, g - start, -1)
            indicator = rebased[key]
        indicators.append(indicator)
    return NormalizedMatrix.from_matrices(sources, indicators, mappings, **options)


def _without_source_rows(template):
    """``template`` (a matrix of no rows, which reads no row of its sources) with sources of
    no rows, each stored as before: it describes the partitions' results without holding
    the dimensions, which live on the workers."""
    emptied = {}
    blocks = []
    for block in template.blocks:
        if not block.source.shape[0]:  # the fact's: no rows already
            blocks.append(block)
            continue
        key = id(block.row_map)
        if key not in emptied:
            emptied[key] = RowMap(np.empty(0, dtype=np.int32), 0, has_missing=False)
        blocks.append(block.with_(source=block.source[:0].copy(), row_map=emptied[key]))
    return template._like(blocks)


def _transposed_matmul(part, rows):
    return _dense(part.T @ rows)


def _gram(part, weights):
    if isinstance(part, NormalizedMatrix):
        return part.gram(weights)
    return _dense(get_backend("cpu").weighted_gram(part, weights))


def _group_sums(part, labels, weights, n_groups):
    labels = np.asarray(labels)
    weights = None if weights is None else np.asarray(weights)
    if isinstance(part, NormalizedMatrix):
        return _dense(part.group_sums(labels, n_groups, weights))
    be = get_backend("cpu")
    one_hot = be.group_counts(RowMap.identity(part.shape[0]), labels, n_groups, weights,
                              part.dtype)
    return _dense(be.dot(part.T, one_hot))


def _sum(part, axis):
    return np.asarray(get_backend("cpu").to_dense(part.sum(axis=axis))).ravel()


def _row_norms(part, squared):
    if isinstance(part, NormalizedMatrix):
        return part.row_norms(squared=squared)
    sums = get_backend("cpu").row_sums_of_squares(part)
    return sums if squared else np.sqrt(sums)


def _extreme(part, kind, axis):
    return get_backend("cpu").to_dense(getattr(part, kind)(axis=axis)).ravel()


def _all_finite(part):
    if isinstance(part, NormalizedMatrix):
        return bool(part.all_finite())
    return bool(get_backend("cpu").all_finite(part))


def _reversed_sub(part, other):
    return other - part


def _apply(part, func, name):
    return part.apply(func, name=name)


def _columns(part, columns):
    return part[:, columns]


def _take_rows(part, local):
    return part[local]


def _materialize(part, sparse):
    if isinstance(part, NormalizedMatrix):
        return part.materialize(sparse=sparse)
    if isinstance(sparse, str):  # a joined partition is already as "auto" built it
        return part
    be = get_backend("cpu")
    return be.as_csr(part, part.dtype) if sparse else be.to_dense(part)


def _dense(a):
    return get_backend("cpu").to_dense(a)


# ---------------------------------------------------------------------- construction helpers
def _is_dask_array(x):
    if not is_dask_collection(x):
        return False
    _, da, _ = import_dask()
    return isinstance(x, da.Array)


def _names(count, source_names):
    return [f"source {k}" if source_names is None else repr(source_names[k])
            for k in range(count)]


def _row_chunks(sources, indicators, source_names):
    """The row partitions: those of the first Dask array among the sources, else among the
    indicators; unknown sizes (from a DataFrame) are computed once."""
    for x in [*sources, *indicators]:
        if is_dask_collection(x):
            if not _is_dask_array(x):
                raise TypeError(
                    "from_matrices takes Dask arrays; convert a Dask DataFrame with "
                    "to_dask_array(lengths=True), or pass it to from_tables."
                )
            if any(np.isnan(c) for c in x.chunks[0]):
                x = x.compute_chunk_sizes()
            return tuple(int(c) for c in x.chunks[0])
    raise ValueError("PartitionedMatrix.from_matrices needs at least one Dask array.")


def _plain_indicator(indicator):
    """An indicator as an array (numpy, scipy.sparse or Dask with known chunk sizes): a
    RowMap becomes its row map."""
    if isinstance(indicator, RowMap):
        return (np.arange(indicator.n_target) if indicator.indices is None
                else indicator.indices)
    if _is_dask_array(indicator):
        return (indicator.compute_chunk_sizes()
                if any(np.isnan(c) for c in indicator.chunks[0]) else indicator)
    return indicator if hasattr(indicator, "shape") else np.asarray(indicator)


def _aligned(a, row_chunks, name, what):
    """Dask array ``a`` with the given row chunks and its columns in one chunk."""
    if any(np.isnan(c) for c in a.chunks[0]):
        a = a.compute_chunk_sizes()
    if a.shape[0] != sum(row_chunks):
        raise ValueError(
            f"{name} has {a.shape[0]} {what} but the partitioned target has "
            f"{sum(row_chunks)}."
        )
    chunks = (row_chunks,) + tuple((size,) for size in a.shape[1:])
    return a if a.chunks == chunks else a.rechunk(chunks)


def _pieces(a, row_chunks):
    """``a`` cut into pieces of ``row_chunks`` rows: the blocks of a Dask array (as
    Delayed), slices of anything else."""
    if _is_dask_array(a):
        return list(_aligned(a, row_chunks, "operand", "rows").to_delayed().reshape(-1))
    starts = np.cumsum((0,) + tuple(row_chunks))
    return [a[start:stop] for start, stop in zip(starts[:-1], starts[1:])]


def _meta(a):
    """A Dask array's rows, none of them: an empty numpy array of its dtype and width."""
    return np.empty((0,) + a.shape[1:], dtype=a.dtype)


def _no_rows(a):
    """The first zero rows of ``a`` (numpy, Dask, sparse or None), in memory."""
    if a is None:
        return None
    if isinstance(a, PartitionedMatrix):
        return a.template
    if _is_dask_array(a):
        return _meta(a)
    return a[:0]


def _small(operand):
    """A small operand in memory (a Dask array is computed: it has no row partitions)."""
    if _is_dask_array(operand):
        return np.asarray(operand.compute())
    return operand
