"""Warnings and errors of sklearn-ilargi."""


class MaterializationWarning(UserWarning):
    """A normalized matrix was joined into one array, e.g. by ``numpy.asarray(nm)``.

    Call :meth:`NormalizedMatrix.materialize` to join on purpose without the warning.

    See Also
    --------
    NormalizedMatrix.materialize : Join on purpose.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sklearn_ilargi import MaterializationWarning, NormalizedMatrix
    >>> nm = NormalizedMatrix.from_matrices([np.ones((2, 1))], [np.arange(2)])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     joined = np.asarray(nm)
    >>> caught[0].category is MaterializationWarning
    True
    """


class NotFactorizableError(ValueError):
    """The operation has no exact factorized form; materialize explicitly to run it.

    A subclass of ``ValueError``: raised, for instance, by an element-wise function that maps
    0 to something else, since the missing cells of a left join are zeros.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ilargi import NormalizedMatrix, NotFactorizableError
    >>> nm = NormalizedMatrix.from_matrices(
    ...     [np.ones((2, 1)), np.ones((1, 1))], [np.arange(2), [0, -1]])
    >>> try:
    ...     nm.apply(np.cos)
    ... except NotFactorizableError as error:
    ...     print(error)  # doctest: +ELLIPSIS
    Element-wise cos maps 0 to ...; only functions with f(0) == 0 are exact ...
    >>> np.cos(nm.materialize())
    array([[0.54030231, 0.54030231],
           [0.54030231, 1.        ]])
    """


class InsufficientMemoryError(MemoryError):
    """A fit's path needs more memory than it may take, found before anything is allocated.

    A subclass of ``MemoryError``: raised where the strategy is forced (the ``strategy``
    parameter or ``set_config(strategy=...)``) and every path it leaves needs more than the
    80% of the memory available that a fit may plan to take (see the ``memory_limit``
    setting); under ``strategy="auto"``, where every path needs more than all of it; or
    where a closed-form solver's dense gram does not fit. The message names the estimator,
    the strategy or solver, and each path with the bytes it needs; ``strategy="auto"`` runs
    a path that fits instead, where there is one.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sklearn_ilargi import (FactorizedPCA, InsufficientMemoryError, NormalizedMatrix,
    ...                             config_context)
    >>> dim = sp.random(1000, 1000, density=0.002, format="csr", random_state=0)
    >>> X = NormalizedMatrix.from_matrices(
    ...     [np.ones((50_000, 1)), dim], [np.arange(50_000), np.arange(50_000) % 1000])
    >>> try:
    ...     with config_context(memory_limit=2**28):
    ...         FactorizedPCA(2, svd_solver="full", strategy="materialized").fit(X)
    ... except InsufficientMemoryError as error:
    ...     print(error)  # doctest: +ELLIPSIS
    FactorizedPCA cannot run with strategy='materialized' (solver 'full'): cpu/materialized: ...
    """
