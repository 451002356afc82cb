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

    Returns
    -------
    object

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
    """Where ``X`` lives: "gpu" for CuPy arrays, cupyx matrices and GPU normalized matrices.

    A NormalizedMatrix (an object with a list of ``blocks``) counts as "gpu" when its
    ``device`` says so or when it holds CuPy sources; anything else (a DataFrame with a column
    called ``device`` or ``blocks`` too) is "cpu".

    Parameters
    ----------
    X : array-like, sparse matrix or NormalizedMatrix

    Returns
    -------
    {"cpu", "gpu"}
    """
    if _is_cupy(X):
        return "gpu"
    blocks = getattr(X, "blocks", None)
    if not isinstance(blocks, (list, tuple)):
        return "cpu"
    if getattr(X, "device", None) == "gpu":
        return "gpu"
    if any(_is_cupy(getattr(block, "source", None)) for block in blocks):
        return "gpu"
    return "cpu"


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
