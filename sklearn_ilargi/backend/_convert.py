"""Moving results between devices without importing CuPy unless the data is CuPy's."""

import numpy as np
import scipy.sparse as sp

from ._registry import get_backend


def _is_cupy(a):
    return type(a).__module__.startswith(("cupy", "cupyx"))


def to_numpy(a):
    """A host copy of ``a``: numpy for CuPy arrays, scipy.sparse for cupyx matrices.

    Anything else (numpy arrays, scipy.sparse matrices, Python and numpy scalars, None) comes
    back unchanged; lists, tuples and dicts are converted item by item.

    Parameters
    ----------
    a : object
        An array, a sparse matrix, a scalar, None, or a list, tuple or dict of them.

    Returns
    -------
    object
        ``a`` with every CuPy array and cupyx matrix replaced by its host copy.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi.backend import to_numpy
    >>> to_numpy(np.arange(3))
    array([0, 1, 2])
    >>> to_numpy(1.5)
    1.5
    """
    if _is_cupy(a) and hasattr(a, "get"):
        return a.get()
    if isinstance(a, (list, tuple)):
        return type(a)(to_numpy(item) for item in a)
    if isinstance(a, dict):
        return {key: to_numpy(value) for key, value in a.items()}
    return a


def device_of(X):
    """Where ``X`` lives: "gpu" for CuPy arrays and cupyx matrices, "cpu" for the rest.

    An object that holds arrays without being one (a NormalizedMatrix) says where it lives
    through a method ``__sklearn_ilargi_device__()`` returning "cpu" or "gpu". The method is
    looked up on the type, as Python looks up special methods, so that data that merely has
    an item of that name (a DataFrame column) is host data.

    Parameters
    ----------
    X : array-like, sparse matrix or NormalizedMatrix
        The data to locate.

    Returns
    -------
    {"cpu", "gpu"}
        Where ``X``'s values live.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi.backend import device_of
    >>> device_of(np.ones(3))
    'cpu'
    """
    if _is_cupy(X):
        return "gpu"
    declared = getattr(type(X), "__sklearn_ilargi_device__", None)
    return "cpu" if declared is None else declared(X)


def like_input(a, X):
    """``a`` where the caller of a fit on ``X`` expects it: numpy, or CuPy for GPU input.

    Estimators pass their fitted arrays and the outputs of ``predict``, ``transform``, ...
    through this, so that these are numpy arrays (what scikit-learn users expect) unless
    ``X`` is on the GPU (:func:`device_of`). For host ``X``, ``a`` comes back as
    :func:`to_numpy` gives it. For GPU ``X``, numeric numpy arrays and scipy.sparse matrices
    are copied to the device; device data, scalars and arrays of strings or objects come back
    unchanged. Lists, tuples and dicts are converted item by item.

    Parameters
    ----------
    a : object
        A fitted value or a result (array, scalar, or a list/tuple/dict of them).
    X : object
        The input the user passed to the estimator.

    Returns
    -------
    object
        ``a`` on the host for host ``X``, on the device for GPU ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi.backend import like_input
    >>> like_input([np.arange(2), 3.0], X=np.ones((2, 2)))
    [array([0, 1]), 3.0]
    """
    if device_of(X) != "gpu":
        return to_numpy(a)
    return _to_device(a)


def _to_device(a):
    if (isinstance(a, np.ndarray) and a.dtype.kind in "biufc") or sp.issparse(a):
        return get_backend("gpu").from_numpy(a)
    if isinstance(a, (list, tuple)):
        return type(a)(_to_device(item) for item in a)
    if isinstance(a, dict):
        return {key: _to_device(value) for key, value in a.items()}
    return a
