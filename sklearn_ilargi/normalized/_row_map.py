"""The indicator matrix ``I_k`` (n_target x n_source), stored as a row map."""

import weakref

import numpy as np

_INT32_MAX = np.iinfo(np.int32).max


def index_dtype(n):
    """int32 when indices below ``n`` fit, int64 beyond."""
    return np.int32 if n < _INT32_MAX else np.int64


class RowMap:
    """For each target row, the source row that feeds it, or ``-1`` for none.

    Parameters
    ----------
    indices : ndarray of int or None
        Length ``n_target``; ``None`` means the identity (``n_target == n_source``).
    n_source : int
        Number of rows of the source.
    n_target : int, optional
        Needed only for the identity.
    has_missing : bool, optional
        Whether ``indices`` holds a ``-1``; computed when not given.
    taken_from : tuple of (RowMap, ndarray), optional
        ``(map, rows)`` where this map is ``map.take(rows)``: the cache's fingerprint of the
        map is then made of those two, whose digests the other maps of the same selection
        share (see :mod:`sklearn_ilargi.utils._cache`).
    """

    __slots__ = ("indices", "n_source", "n_target", "has_missing", "taken_from", "_cache",
                 "_sliced_from", "__weakref__")

    def __init__(self, indices, n_source, *, n_target=None, has_missing=None,
                 taken_from=None):
        self.indices = indices
        self.taken_from = taken_from
        self._sliced_from = None
        self.n_source = int(n_source)
        if indices is None:
            self.n_target = self.n_source if n_target is None else int(n_target)
            self.has_missing = False
        else:
            self.n_target = int(indices.shape[0])
            self.has_missing = bool((indices < 0).any()) if has_missing is None else has_missing
        self._cache = {}

    @classmethod
    def identity(cls, n):
        return cls(None, n, n_target=n)

    @property
    def is_identity(self):
        return self.indices is None

    def cached(self, key, factory):
        """Helper data that a backend derives once from this map (an ``I.T`` CSC, say)."""
        if key not in self._cache:
            self._cache[key] = factory()
        return self._cache[key]

    def equals(self, other):
        """Whether ``other`` maps every target row to the same source row (of as many rows)."""
        if other is self:
            return True
        if (self.n_source, self.n_target) != (other.n_source, other.n_target):
            return False
        if self.indices is None or other.indices is None:
            return self.indices is None and other.indices is None
        return bool((self.indices == other.indices).all())

    def present(self):
        """Boolean mask of the target rows that have a row of this source (numpy)."""
        if self.indices is None:
            return np.ones(self.n_target, dtype=bool)
        return self.indices >= 0

    def take(self, rows):
        """The map of the target rows ``rows`` (an integer array, not changed afterwards:
        the map remembers it, see ``taken_from``), in that order."""
        rows = np.asarray(rows)
        if self.indices is None:  # a copy: the caller's array stays the caller's
            indices = rows.astype(index_dtype(self.n_source), copy=True)
            return RowMap(indices, self.n_source, has_missing=False)
        indices = self.indices[rows]
        has_missing = bool((indices < 0).any()) if self.has_missing else False
        return RowMap(indices, self.n_source, has_missing=has_missing,
                      taken_from=(self, rows))

    def rows_between(self, start, stop):
        """The map of the target rows ``start:stop`` (a view where the map is explicit)."""
        if self.indices is None:
            indices = np.arange(start, stop, dtype=index_dtype(self.n_source))
            return RowMap(indices, self.n_source, has_missing=False)
        rows = RowMap(self.indices[start:stop], self.n_source,
                      has_missing=None if self.has_missing else False)
        # Held weakly: the slices are kept in this map's cache, which a strong reference
        # would make a cycle that outlives the map.
        rows._sliced_from = (weakref.ref(self), start, stop)
        return rows

    def sliced_from(self):
        """``(map, start, stop)`` where this map is ``map.rows_between(start, stop)`` and
        that map still exists, else None: a backend derives a slice's helpers as views of
        the whole map's (one ``np.intp`` copy of the map, not one more per slice)."""
        if self._sliced_from is None:
            return None
        parent, start, stop = self._sliced_from
        parent = parent()
        return None if parent is None else (parent, start, stop)

    def compose(self, inner):
        """Chain two maps: target -> ``self``'s source rows -> ``inner``'s source rows.

        ``inner`` maps the rows of this map's source (e.g. orders -> customer); ``-1`` on
        either level gives ``-1``.
        """
        if inner.n_target != self.n_source:
            raise ValueError(
                f"Cannot compose row maps: the outer map points into {self.n_source} rows, "
                f"the inner one maps {inner.n_target}."
            )
        if inner.indices is None:
            return self
        if self.indices is None:
            return inner
        indices = np.take(np.append(inner.indices, -1).astype(inner.indices.dtype), self.indices)
        return RowMap(indices, inner.n_source)

    def mask(self, hidden):
        """This map with ``-1`` wherever ``hidden`` (a boolean mask over target rows) is set."""
        indices = np.arange(self.n_target) if self.indices is None else self.indices
        out = np.where(hidden, -1, indices).astype(index_dtype(self.n_source))
        return RowMap(out, self.n_source, has_missing=bool(hidden.any()) or self.has_missing)

    def to_backend(self, backend):
        """A copy whose arrays live on ``backend`` (shares nothing cached)."""
        indices = None if self.indices is None else backend.from_numpy(self.indices)
        return RowMap(indices, self.n_source, n_target=self.n_target, has_missing=self.has_missing)

    def to_numpy(self):
        """The row map as a plain numpy vector (``-1`` for missing), the identity made explicit."""
        if self.indices is None:
            return np.arange(self.n_target, dtype=index_dtype(self.n_source))
        return np.asarray(self.indices)

    def __getstate__(self):
        return {"indices": self.indices, "n_source": self.n_source, "n_target": self.n_target,
                "has_missing": self.has_missing}

    def __setstate__(self, state):
        for key, value in state.items():
            setattr(self, key, value)
        self.taken_from = None  # the map's own indices make its fingerprint then
        self._sliced_from = None
        self._cache = {}

    def __repr__(self):
        kind = "identity" if self.indices is None else "map"
        return f"RowMap({kind}, n_target={self.n_target}, n_source={self.n_source})"
