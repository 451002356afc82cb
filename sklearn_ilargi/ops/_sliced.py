"""``T @ x + bias`` a slice of rows at a time, each slice reduced before the next.

K-means labels each sample with its closest center: the argmin over the centers of
``||c||^2 - 2 x.c``, a row of ``X @ (-2 C.T) + ||c||^2``. As scikit-learn's Lloyd does, the
product is taken a slice of rows at a time and each slice reduced at once (to its argmin,
:func:`argmin_of_product`, or by the caller, :func:`product_slices`), so the ``n x p``
product never exists and a slice stays in the cache from its product to its reduction.

Over a normalized matrix, the groups of blocks that do not have the identity row map (the
dimensions) are multiplied once, ``S_b @ x[cols_b]``, and gathered into each slice; the
blocks with the identity map (the fact table) are multiplied slice by slice. A slice is kept
transposed (``p x rows``), so that the gathers and the argmin (``column_argmin``) run along
its long side.
"""

import functools

from .._config import get_config
from ._products import _groups, _rows_between, _small
from ._pruned import Pruning


def argmin_of_product(nm, x, bias, values=True):
    """For each row of ``T @ x + bias``: the column of its smallest entry and that entry.

    The slices run side by side on the backend's threads where the target has at least
    ``parallel_slice_rows`` rows (a setting).

    Parameters
    ----------
    nm : NormalizedMatrix
    x : array of shape (c_T, p)
        Of the matrix's backend.
    bias : array of shape (p,)
        Added to every row, of the matrix's backend.
    values : bool, default=True
        Whether to return the smallest entries too. Without them, the rows that an exact
        bound labels from their dimension row alone (see ``ops._pruned``) skip their
        distances to the other centers; the squared norms of the fact rows that the bound
        takes are kept for as long as their source array lives, which must not change in
        place meanwhile.

    Returns
    -------
    columns : int32 array of shape (n_T,)
        The column of each row's smallest entry, the first one on ties.
    smallest : array of shape (n_T,) or None
        That entry; None where ``values`` is False.
    """
    return _ProductSlices.of(nm, x, bias).argmin(values)


def product_slices(nm, x, bias):
    """``(start, stop, (T[start:stop] @ x + bias).T)`` for consecutive slices of rows.

    Each slice is a ``p x (stop - start)`` array that the next one overwrites: reduce it
    before asking for the next.

    Parameters
    ----------
    nm : NormalizedMatrix
    x : array of shape (c_T, p)
    bias : array of shape (p,)

    Yields
    ------
    start, stop : int
    values : array of shape (p, stop - start)
    """
    return _ProductSlices.of(nm, x, bias).each()


def argmin_of_matrix_product(be, X, x, bias):
    """:func:`argmin_of_product` for one matrix ``X`` (dense or sparse) of backend ``be``."""
    return _ProductSlices(be, X.shape[0], [(X, x.T)], [], bias).argmin()


def matrix_product_slices(be, X, x, bias):
    """:func:`product_slices` for one matrix ``X`` (dense or sparse) of backend ``be``."""
    return _ProductSlices(be, X.shape[0], [(X, x.T)], [], bias).each()


class _ProductSlices:
    """``sum(direct rows @ x) + sum(gathered) + bias``, transposed, a slice of rows at a time.

    ``direct``: ``(source, x_part.T)`` for each block with the identity row map (its rows are
    the target's); ``gathered``: ``(row_map, product.T)`` for each other group of blocks,
    their product with ``x`` taken once. The bias goes once into a gathered product that
    covers every target row, where there is one, rather than into every slice.
    """

    def __init__(self, be, n_rows, direct, gathered, bias):
        self.be, self.n_rows, self.direct = be, n_rows, direct
        self.p = bias.shape[0]
        self.dtype = be.xp.result_type(bias.dtype, *[a.dtype for part in direct for a in part],
                                       *[z.dtype for _, z in gathered])
        covering = next((i for i, (row_map, _) in enumerate(gathered)
                         if not row_map.has_missing), None)
        if covering is not None:
            gathered = list(gathered)
            row_map, z = gathered[covering]
            gathered[covering] = (row_map, z + bias[:, None])
            bias = None
        self.gathered, self.bias = gathered, bias
        step = rows_per_slice(self.p, self.dtype.itemsize)
        self.bounds = [(start, min(start + step, n_rows)) for start in range(0, n_rows, step)]

    @classmethod
    def of(cls, nm, x, bias):
        """The slices of ``nm @ x + bias``, the dimensions' products taken here."""
        be = nm.backend
        if nm.shift is not None:
            bias = bias + nm.shift @ x
        direct, gathered = [], []
        groups = _groups(nm.blocks)
        apart = [b for group in groups if not group[0].row_map.is_identity for b in group]
        with be.one_thread(_small(apart)):
            for group in groups:
                if group[0].row_map.is_identity:
                    direct += [(block.source, x[block.columns].T) for block in group]
                else:
                    product = sum(be.dot(block.source, x[block.columns]) for block in group)
                    gathered.append((group[0].row_map, be.xp.ascontiguousarray(product.T)))
        return cls(be, nm.shape[0], direct, gathered, bias)

    def each(self):
        buffers = {}
        for start, stop in self.bounds:
            with self.be.one_thread():
                values = self.slice(start, stop, buffers)
            yield start, stop, values

    def argmin(self, values=True):
        be = self.be
        columns = be.xp.empty(self.n_rows, dtype=be.xp.int32)
        smallest = be.xp.empty(self.n_rows, dtype=self.dtype)
        # Without the entries, the bound may label rows from their dimension row alone.
        pruning = None if values else Pruning.of(be, self.direct, self.gathered, self.bias,
                                                 self.dtype)

        def reduce_share(share):
            buffers = {}
            for run in share:
                if pruning is None or not pruning.labels(run[0][0], run[-1][1], buffers,
                                                         columns):
                    for start, stop in run:
                        be.column_argmin(self.slice(start, stop, buffers),
                                         out=(columns[start:stop], smallest[start:stop]))

        runs = self._runs(1 if pruning is None else get_config()["pruned_slice_rows"])
        threaded = self.n_rows >= get_config()["parallel_slice_rows"]
        n_threads = max(1, min(be.threads() if threaded else 1, len(runs)))
        shares = [runs[i::n_threads] for i in range(n_threads)]
        if n_threads > 1:
            be.map_in_threads(reduce_share, shares)
        else:
            with be.one_thread():  # a slice's product is too small to share out
                reduce_share(shares[0])
        return columns, smallest if values else None

    def _runs(self, rows):
        """The slices in runs of consecutive ones of about ``rows`` rows (at least one slice
        each). The bound labels a run at once: its few calls over all of the run's rows would
        cost more than their work slice by slice; a run it does not decide is computed a
        slice at a time."""
        step = self.bounds[0][1] - self.bounds[0][0] if self.bounds else 1
        length = max(1, rows // step)
        return [self.bounds[i:i + length] for i in range(0, len(self.bounds), length)]

    def slice(self, start, stop, buffers):
        """The slice of rows ``start:stop`` in a buffer of ``buffers``, reused by the next.

        The first part is written into the buffer, each other part into a second buffer and
        added: fresh memory for every slice's parts would cost its first touch.
        """
        be, n = self.be, stop - start
        values = self._buffer(buffers, "values", n)
        parts = [functools.partial(be.gather_columns, z, _rows_between(row_map, start, stop))
                 for row_map, z in self.gathered]
        parts += [functools.partial(_product, be, x_t, source[start:stop])
                  for source, x_t in self.direct]
        for i, part in enumerate(parts):
            if i == 0:
                part(out=values)
            else:
                values += part(out=self._buffer(buffers, "part", n))
        if not parts:
            values[...] = self.bias[:, None]
        elif self.bias is not None:
            values += self.bias[:, None]
        return values

    def _buffer(self, buffers, key, n):
        """The first ``n`` columns of a ``p x step`` buffer kept in ``buffers``: every slice
        but the last has ``step`` rows."""
        buffer = buffers.get(key)
        if buffer is None or buffer.shape[1] < n:
            buffer = buffers[key] = self.be.xp.empty((self.p, n), dtype=self.dtype)
        return buffer[:, :n]


def _product(be, x_t, rows, out):
    """``(rows @ x).T`` into ``out``."""
    if be.is_sparse(rows):
        out[...] = be.dot(x_t, rows.T)
        return out
    return be.xp.matmul(x_t, rows.T, out=out)


def rows_per_slice(p, itemsize):
    """Target rows per slice, for ``p`` columns of ``itemsize`` bytes: as many as fit the
    ``slice_working_memory`` setting (MiB) with the slice's three buffers, as
    scikit-learn's ``get_chunk_n_rows`` fits its ``working_memory``; at least one."""
    row_bytes = 3 * max(p, 1) * itemsize
    return max(1, int(get_config()["slice_working_memory"] * 2**20) // row_bytes)
