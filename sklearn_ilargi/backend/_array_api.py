"""The array API namespace of an array, through the array-api-compat that scikit-learn vendors.

``sklearn.externals.array_api_compat`` gives numpy, CuPy and other array libraries one
namespace each that follows the array API standard (for numpy and CuPy: mostly their own
functions, so that code written against it adds no copies or conversions). It is imported
here, not in ``utils/_sklearn_compat.py`` with scikit-learn's private APIs, because ``utils``
imports this package: the backend sits below it and must not import ``utils`` on import.
"""

from sklearn.externals.array_api_compat import array_namespace

# The namespace depends on the array's type only; looking it up once per type keeps
# array-api-compat's checks off the hot paths, where a product of small blocks is only a
# few times their cost.
_NAMESPACE_OF_TYPE = {}


def get_namespace(array):
    """Return the array API namespace of ``array``.

    Parameters
    ----------
    array : array
        A dense array of a library that array-api-compat knows (numpy, CuPy, ...) or that
        has ``__array_namespace__``.

    Returns
    -------
    module
        array-api-compat's namespace for ``array``'s library.

    Raises
    ------
    TypeError
        For an object that is not such an array (a list, a scipy.sparse matrix, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi.backend._array_api import get_namespace
    >>> xp = get_namespace(np.ones(3))
    >>> xp.__name__
    'sklearn.externals.array_api_compat.numpy'
    >>> xp.sum(np.ones(3))
    np.float64(3.0)
    """
    kind = type(array)
    xp = _NAMESPACE_OF_TYPE.get(kind)
    if xp is None:
        xp = _NAMESPACE_OF_TYPE[kind] = array_namespace(array)
    return xp
