"""Moving results between devices without importing CuPy unless the data is CuPy's."""


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

    A NormalizedMatrix counts as "gpu" when its ``device`` says so or when it holds CuPy
    sources; anything else is "cpu".

    Parameters
    ----------
    X : array-like, sparse matrix or NormalizedMatrix

    Returns
    -------
    {"cpu", "gpu"}
    """
    if _is_cupy(X):
        return "gpu"
    if getattr(X, "device", None) == "gpu" and hasattr(X, "blocks"):
        return "gpu"
    if any(_is_cupy(block.source) for block in getattr(X, "blocks", ())):
        return "gpu"
    return "cpu"


def like_input(a, X):
    """``a`` as the caller of a fit on ``X`` expects it: numpy unless ``X`` was on the GPU.

    Estimators pass every fitted array through this, so that fitted attributes are numpy
    arrays (what scikit-learn users expect) unless the training input was CuPy data.

    Parameters
    ----------
    a : object
        A fitted value (array, scalar, or a list/tuple/dict of them).
    X : object
        The input the user passed to ``fit``.

    Returns
    -------
    object
    """
    if device_of(X) == "gpu":
        return a
    return to_numpy(a)

