"""A cache of a training matrix's expensive results, shared by the fits of a search.

``GridSearchCV`` fits one estimator per candidate and fold, and every candidate of a fold asks
for the same gram, the same means and the same ``X.T @ y``: only the penalty differs. With
the ``cache`` setting on (:func:`~sklearn_ilargi.set_config`), a
:class:`~sklearn_ilargi.utils.TrainingMatrix` keeps those results (see
:meth:`TrainingMatrix._reused`) under a key made of

- a fingerprint of its matrix: for a NormalizedMatrix its shape, dtype and shift and, per
  block, a digest of the source, of the row map and the target columns (so that a fold's
  rows, ``X[train]``, have a key of their own, equal for the same rows; the maps of such a
  selection are digested as the maps they were taken from and the rows, which they share);
  for an ndarray or a sparse matrix a digest of its values;
- the operation and its arguments, sample weights included, by content;
- the settings that can change how a result is computed, and this package's version.

A digest is SHA-1 over the arrays' buffers. A source (or row map) is digested once per
process and the digest remembered for that object, by identity and while it lives (a weak
reference): the next fits over the same sources pay only for the rows they select.
Hence the one rule of safe use: **sources must not be changed in place after a fit has cached
results over them**; a changed source keeps its old digest and gets the old results (call
:func:`clear_cache` after changing one).

Results stay in this process (``cache="memory"``: at most ``cache_max_bytes``, the least
recently used going first) or on disk (a folder or a ``joblib.Memory``), where the worker
processes of ``GridSearchCV(n_jobs=...)`` share them. A result comes back bit for bit as the
fit that computed it got it. Data on the GPU is not cached (the cache is off there).
"""

import hashlib
import os
import threading
import weakref
from collections import Counter, OrderedDict
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp
from joblib import Memory

from .._config import get_config
from ..backend import get_backend
from ._validation import is_normalized

#: Settings that say where results are kept, or how much a fit reports, not what they are:
#: left out of the keys.
SETTINGS_NOT_IN_KEY = ("cache", "cache_max_bytes", "verbose")

_lock = threading.RLock()
_results = OrderedDict()  # key -> (result, bytes), least recently used first
_held = {"bytes": 0}
_hits, _misses = Counter(), Counter()
_digests = {}  # id(object) -> (weak reference to it, its digest)
_disk = {}  # folder -> its joblib.Memory


@dataclass(frozen=True)
class CacheInfo:
    """What the cache did in this process since it was last cleared.

    Attributes
    ----------
    hits : dict of str to int
        Per operation (``"gram"``, ``"column_sums"``, ``"rmatmul"``, ...), the results that
        came from the cache.
    misses : dict of str to int
        Per operation, the results computed (and stored) because the cache had none.
    entries : int
        Results held in this process (``cache="memory"``).
    nbytes : int
        Their bytes.
    max_bytes : int
        The ``cache_max_bytes`` setting: the most bytes held in this process.
    """

    hits: dict
    misses: dict
    entries: int
    nbytes: int
    max_bytes: int


def cache_info():
    """What the cache of expensive results did in this process: hits, misses, what it holds.

    Counts cover this process only: the fits of ``GridSearchCV(n_jobs=2)`` run in worker
    processes, which count for themselves (their results are shared through a folder cache).

    Returns
    -------
    CacheInfo
        With ``hits`` and ``misses`` per operation, and the ``entries`` and ``nbytes`` held
        in this process.

    See Also
    --------
    clear_cache : Forget the results held in this process, and the counts.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import (FactorizedRidge, NormalizedMatrix, cache_info,
    ...                             clear_cache, config_context)
    >>> X = NormalizedMatrix.from_matrices([np.arange(6.0).reshape(3, 2), np.eye(2)],
    ...                                    [np.arange(3), [0, 1, 0]])
    >>> y = np.array([1.0, 2.0, 4.0])
    >>> clear_cache()
    >>> with config_context(cache="memory"):
    ...     for alpha in (0.1, 1.0, 10.0):
    ...         _ = FactorizedRidge(alpha=alpha, strategy="factorized").fit(X, y)
    >>> cache_info().misses["gram"], cache_info().hits["gram"]
    (1, 2)
    >>> clear_cache()
    """
    with _lock:
        return CacheInfo(hits=dict(_hits), misses=dict(_misses), entries=len(_results),
                         nbytes=_held["bytes"], max_bytes=get_config()["cache_max_bytes"])


def clear_cache():
    """Forget the results held in this process, the digests of the sources, and the counts.

    A source changed in place after a fit cached results over it is digested again by the
    fits after this call. Results kept in a folder stay there (``joblib.Memory(folder).clear()``
    or deleting the folder removes them).

    See Also
    --------
    cache_info : What the cache did.

    Examples
    --------
    >>> from sklearn_ilargi import cache_info, clear_cache
    >>> clear_cache()
    >>> cache_info().entries
    0
    """
    with _lock:
        _results.clear()
        _held["bytes"] = 0
        _hits.clear()
        _misses.clear()
        _digests.clear()


# ---------------------------------------------------------------------- using it
def reuse(operation, matrix_key, arguments, compute):
    """``compute()``, or the result that the cache holds for it.

    Parameters
    ----------
    operation : str
        What is computed, as :func:`cache_info` counts it.
    matrix_key : callable
        Returns the fingerprint of the matrix (see :func:`matrix_fingerprint`), or None where
        the cache does not apply (data on the GPU); called only while the cache is on.
    arguments : tuple
        The operation's arguments (arrays by content, None, numbers, strings).
    compute : callable
        Computes the result: an ndarray, a tuple of them, or a number.

    Returns
    -------
    object
        ``compute()``'s result, or a copy of the one kept for the same key.
    """
    config = get_config()
    where = config["cache"]
    if where is None:
        return compute()
    fingerprint = matrix_key()
    if fingerprint is None:
        return compute()
    key = digest(operation, fingerprint, arguments, _settings_in_key(config), _version())
    if isinstance(where, str) and where == "memory":
        return _in_memory(operation, key, compute, config["cache_max_bytes"])
    return _on_disk(operation, key, compute, where)


def _in_memory(operation, key, compute, max_bytes):
    with _lock:
        held = _results.get(key)
        if held is not None:
            _results.move_to_end(key)
            _hits[operation] += 1
            return _copy(held[0])
    result = compute()
    size = _nbytes(result)
    with _lock:
        _misses[operation] += 1
        if size <= max_bytes and key not in _results:
            _results[key] = (_copy(result), size)
            _held["bytes"] += size
        while _held["bytes"] > max_bytes:  # the budget may have shrunk since
            _, (_, freed) = _results.popitem(last=False)
            _held["bytes"] -= freed
    return result


def _on_disk(operation, key, compute, where):
    memorized = _memory(where).cache(_computed, ignore=["compute"])
    found = memorized.check_call_in_cache(key, compute)
    result = memorized(key, compute)
    with _lock:
        (_hits if found else _misses)[operation] += 1
    return _copy(result) if found else result


def _computed(key, compute):
    """What a folder cache stores under ``key``: ``compute()``'s result."""
    return compute()


def _memory(where):
    """The ``joblib.Memory`` of the ``cache`` setting (a folder gets one, silent)."""
    if isinstance(where, Memory):
        return where
    folder = os.fspath(where)
    with _lock:
        if folder not in _disk:
            _disk[folder] = Memory(folder, verbose=0)
        return _disk[folder]


def _settings_in_key(config):
    return tuple(sorted((name, value) for name, value in config.items()
                        if name not in SETTINGS_NOT_IN_KEY))


def _version():
    from .. import __version__  # the package is imported by the time a fit runs

    return __version__


def _copy(result):
    """A copy that its user may change without changing the one kept (a plain ndarray)."""
    if isinstance(result, tuple):
        return tuple(_copy(part) for part in result)
    if isinstance(result, np.ndarray):
        return np.array(result, copy=True)
    return result


def _nbytes(result):
    if isinstance(result, tuple):
        return sum(_nbytes(part) for part in result)
    return int(result.nbytes) if isinstance(result, np.ndarray) else 0


# ---------------------------------------------------------------------- fingerprints
def matrix_fingerprint(X):
    """A digest of the content of ``X``, or None where the cache does not apply.

    Parameters
    ----------
    X : NormalizedMatrix, ndarray or sparse matrix
        On the CPU; anything else (data on the GPU, partitioned data) gets None.

    Returns
    -------
    str or None
    """
    if is_normalized(X):
        if X.device != "cpu":
            return None
        _digest_side_by_side([block.source for block in X.blocks]
                             + [a for block in X.blocks for a in _row_map_arrays(block.row_map)])
        blocks = tuple((_object_digest(block.source), _row_map_digest(block.row_map),
                        np.asarray(block.columns)) for block in X.blocks)
        return digest("normalized", X.shape, X.dtype.str, X.shift, blocks)
    if isinstance(X, np.ndarray) or sp.issparse(X):
        return _object_digest(X)
    return None


def digest(*parts):
    """SHA-1 of ``parts`` (strings, numbers, None, tuples, ndarrays and sparse matrices by
    content), as a hexadecimal string."""
    hasher = hashlib.sha1(usedforsecurity=False)
    _feed(hasher, parts)
    return hasher.hexdigest()


def _feed(hasher, part):
    if isinstance(part, (tuple, list)):
        hasher.update(f"({len(part)}".encode())
        for item in part:
            _feed(hasher, item)
    elif isinstance(part, np.ndarray):
        hasher.update(f"A{part.dtype.str}{part.shape}".encode())
        if part.flags.c_contiguous:
            hasher.update(part)
        elif part.flags.f_contiguous:
            hasher.update(b"F")
            hasher.update(part.T)
        else:
            hasher.update(np.ascontiguousarray(part))
    elif sp.issparse(part):
        if part.format not in ("csr", "csc"):
            part = part.tocsr()
        _feed(hasher, ("sparse", part.format, part.shape, part.data, part.indices,
                       part.indptr))
    elif hasattr(part, "__fspath__"):  # a path among the settings
        _feed(hasher, os.fspath(part))
    elif part is None or isinstance(part, (str, bool, int, float, np.number)):
        hasher.update(f"{type(part).__name__}:{part!r};".encode())
    else:
        raise TypeError(f"Cannot fingerprint a {type(part).__name__} for the cache.")


def _row_map_digest(row_map):
    """A map's fingerprint: of its indices, or, for a map taken at some rows of another
    one (``X[rows]``), of that map and the rows: the maps of one selection then digest its
    rows once between them, instead of their own indices each."""
    if row_map.indices is None:
        return ("identity", row_map.n_target)
    if row_map.taken_from is not None:
        parent, rows = row_map.taken_from
        return ("taken", _row_map_digest(parent), _object_digest(rows))
    return ("map", row_map.n_source, _object_digest(row_map.indices))


def _row_map_arrays(row_map):
    """The arrays whose digests make up :func:`_row_map_digest`."""
    if row_map.indices is None:
        return []
    if row_map.taken_from is not None:
        parent, rows = row_map.taken_from
        return _row_map_arrays(parent) + [rows]
    return [row_map.indices]


def _digest_side_by_side(objects):
    """Digest the arrays among ``objects`` that have no digest yet, on the process's threads
    (SHA-1 releases the GIL): a selection of rows brings new row maps to every fit."""
    new = {id(obj): obj for obj in objects if obj is not None}
    with _lock:
        new = [obj for key, obj in new.items()
               if _digests.get(key, (lambda: None,))[0]() is not obj]
    get_backend("cpu").map_in_threads(_object_digest, new)


def _object_digest(obj):
    """The digest of an array or sparse matrix, computed once per object while it lives."""
    with _lock:
        known = _digests.get(id(obj))
    if known is not None and known[0]() is obj:
        return known[1]
    value = digest(obj)
    try:
        reference = weakref.ref(obj, partial(_forget, id(obj)))
    except TypeError:  # an object without weak references is digested every time
        return value
    with _lock:
        _digests[id(obj)] = (reference, value)
    return value


def _forget(key, reference):
    """Drop the digest of an object that no longer exists (unless its id has a new one)."""
    with _lock:
        if _digests.get(key, (None,))[0] is reference:
            del _digests[key]
