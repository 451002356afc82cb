"""Warnings and errors of sklearn-ilargi."""


class MaterializationWarning(UserWarning):
    """A normalized matrix was joined into one array, e.g. by ``numpy.asarray(nm)``.

    Call :meth:`NormalizedMatrix.materialize` to join on purpose without the warning.
    """


class NotFactorizableError(ValueError):
    """The operation has no exact factorized form; materialize explicitly to run it."""
