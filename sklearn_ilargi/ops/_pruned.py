"""The closest center of most samples from their dimension row alone (an exact bound).

K-means labels sample ``i`` with the argmin over the centers ``c`` of
``z[c, g_i] + w_c . f_i``: ``z`` the dimension's part (its product with the centers, plus
their squared norms), taken once per dimension row ``g``, and ``w_c . f_i`` the fact table's
part, a product per sample. Where the dimension row's own closest center ``b_g`` leads every
other center ``c`` by more than the fact part can make up,

    ``z[c, g] - z[b_g, g] > ||f_i|| * ||w_c - w_b||``  (Cauchy-Schwarz),

the sample's label is ``b_g`` without its ``p`` entries: a radius per dimension row,
``r_g = min_c (z[c, g] - z[b_g, g]) / ||w_c - w_b||``, and a sample whose fact row is
shorter than its dimension row's radius keeps ``b_g``. Clusters that the dimension separates
leave most samples inside their radius once the centers settle.

The test keeps the labels of the full argmin exactly: the gaps are narrowed, and the
spreads widened, by a bound on the rounding of the entries that the full argmin compares
(relative to the largest ones), so that a sample within rounding of a tie is computed in
full and takes the lowest index, as the full argmin does.
"""

import functools
import weakref

import numpy as np

from .._config import get_config


class Pruning:
    """The radii of one product's dimension rows, and the labels they decide.

    Parameters
    ----------
    z : array of shape (p, n_source)
        The dimension's part, the bias included, of every center and dimension row.
    positions : array of intp of shape (n_target,)
        The dimension row of each target row (none missing).
    direct : list of (source, x_part.T)
        The fact table's blocks: dense sources with the identity row map, and their part of
        the centers, of shape (p, c_b).
    """

    def __init__(self, z, positions, direct):
        self.z, self.positions, self.direct = z, positions, direct
        w = np.hstack([x_t for _, x_t in direct])
        # Twice a bound on the relative rounding of an entry that the full argmin compares:
        # its products (a term per column) and the sums of its parts.
        delta = 4 * (w.shape[1] + len(direct) + 2) * np.finfo(z.dtype).eps
        self.floor = 2 * delta * float(np.abs(z).max(initial=0.0))
        w_max = float(np.sqrt((w**2).sum(axis=1).max(initial=0.0)))
        spread = np.sqrt(((w[:, None, :] - w[None, :, :]) ** 2).sum(axis=2))
        self.spread = spread * (1 + delta) + 2 * delta * w_max
        self.scale = 1 + delta
        self.min_share = get_config()["pruned_argmin_min_share"]
        self.best = self.radius_squared = None

    @functools.cached_property
    def norms(self):
        """``||f_i||^2`` of every target row, widened by the rounding (kept while the fact
        sources live: every iteration of a fit asks for the same ones)."""
        norms = [_row_norms(source, self.scale) for source, _ in self.direct]
        return norms[0] if len(norms) == 1 else sum(norms)

    def sampled_norms(self, step):
        """:attr:`norms` of every ``step``-th row alone, computed alike: a fit whose bound
        decides too few rows never computes the others."""
        return sum(_squares(source[::step]) for source, _ in self.direct) * self.scale

    @classmethod
    def of(cls, be, direct, gathered, bias, dtype):
        """The pruning of a product's slices, or None where it does not apply: on the CPU,
        with one dimension that covers every target row (its part holds the bias) and dense
        fact blocks, all of ``dtype``, where the bound decides at least the
        ``pruned_argmin_min_share`` setting of a sample of the rows (every 256th)."""
        if (be.name != "cpu" or len(gathered) != 1 or bias is not None or not direct
                or get_config()["pruned_argmin_min_share"] > 1
                or any(be.is_sparse(source) or source.dtype != dtype or x_t.dtype != dtype
                       for source, x_t in direct)):
            return None
        row_map, z = gathered[0]
        if (row_map.indices is None or row_map.has_missing or z.shape[1] == 0
                or z.shape[0] < 2 or z.dtype != dtype):
            return None
        positions = row_map.indices
        if positions.dtype != np.intp:
            positions = row_map.cached("intp", lambda: row_map.indices.astype(np.intp))
        pruning = cls(np.ascontiguousarray(z), positions, direct)
        sample = np.take(z, positions[::256], axis=1)
        decided = pruning.sampled_norms(256) < pruning.radii(sample)[1]
        if np.count_nonzero(decided) < pruning.min_share * len(decided):
            return None
        pruning.best, pruning.radius_squared = pruning.radii(pruning.z)
        return pruning

    def radii(self, z):
        """The closest center of each column of ``z`` (dimension rows) and its squared
        radius (-1 where there is none)."""
        best, best_value = _column_argmin(z)
        # radius = min over c != best of gap / spread, a center at a time (c = best: inf).
        floor = best_value + self.floor
        radius = np.full(z.shape[1], np.inf, dtype=z.dtype)
        gap, ratio = np.empty_like(radius), np.empty_like(radius)
        for c in range(z.shape[0]):
            np.subtract(z[c], floor, out=gap)
            denominator = self.spread[c][best]
            ratio.fill(np.inf)
            np.divide(gap, denominator, out=ratio, where=denominator > 0)
            ratio[(denominator <= 0) & (gap <= 0)] = -np.inf
            ratio[best == c] = np.inf
            np.minimum(radius, ratio, out=radius)
        return best, np.where(radius > 0, radius * radius, -1.0)

    def decided(self, start, stop, buffers):
        """Whether the bound labels each of the rows ``start:stop``."""
        n = stop - start
        radius = _scratch(buffers, "radius", n, self.radius_squared.dtype)
        np.take(self.radius_squared, self.positions[start:stop], out=radius, mode="clip")
        return np.less(self.norms[start:stop], radius, out=_scratch(buffers, "inside", n, bool))

    def labels(self, start, stop, buffers, columns):
        """Label the rows ``start:stop`` into ``columns`` as the full argmin does; False
        (nothing written) where the bound decides too few of them."""
        n = stop - start
        inside = self.decided(start, stop, buffers)
        n_inside = int(np.count_nonzero(inside))
        if n_inside < self.min_share * n:
            return False
        rows = self.positions[start:stop]
        np.take(self.best, rows, out=columns[start:stop], mode="clip")
        if n_inside < n:
            outside = np.flatnonzero(~inside)
            values = np.take(self.z, rows[outside], axis=1, mode="clip")
            chosen = start + outside
            for source, x_t in self.direct:
                values += np.matmul(x_t, source[chosen].T)
            columns[chosen] = _column_argmin(values)[0]
        return True


def _row_norms(source, scale):
    """``||f_i||^2`` of a dense source's rows times ``scale``, kept while ``source`` lives:
    every iteration of a fit asks for the same ones."""
    key = id(source)
    entry = _NORMS.get(key)
    if entry is not None and entry[0]() is source and entry[1] == scale:
        return entry[2]
    norms = _squares(source)
    norms *= scale
    _NORMS[key] = (weakref.ref(source, lambda _, key=key: _NORMS.pop(key, None)), scale,
                   norms)
    return norms


_NORMS = {}


def _squares(source):
    """The sum of squares of each row of a dense ``source``, in float64, a column at a
    time."""
    norms = np.zeros(source.shape[0])
    for column in np.asarray(source).T:
        norms += column.astype(np.float64) ** 2
    return norms


def _column_argmin(values, out=None):
    from ..backend._numpy import column_argmin  # here: the backend imports the ops

    return column_argmin(values, out=out)


def _scratch(buffers, key, n, dtype):
    """The first ``n`` entries of a buffer kept in ``buffers`` (every slice but the last
    has the most rows)."""
    buffer = buffers.get(key)
    if buffer is None or buffer.shape[0] < n:
        buffer = buffers[key] = np.empty(n, dtype=dtype)
    return buffer[:n]
