"""How much memory a path takes at its peak: the check that runs before a fit allocates.

The cost model's ``path_memory`` feature is an input of the trained time model and keeps the
meaning it was trained with (the sources, the joined matrix, the work arrays of the target's
rows, one gram). The memory check needs more: what the path allocates besides, which
decides whether it can run at all. :func:`peak_bytes` adds the dense copies of the join that
the materialized path makes (the centered copy that scikit-learn, or this library, takes of
dense data; a full SVD's workspace and factors), which an estimator declares as its
profile's ``join_copies``, the copies of the sources that the factorized path makes (its
``source_copies``), and the copies of a closed form's dense gram (its centered or penalized
copy, the factor, a temporary of the solve).
"""

#: Dense ``c x c`` arrays a closed form holds at once: the gram, its centered or penalized
#: copy, the factor (or the eigenvectors) and a temporary of the solve.
GRAM_COPIES = 4


def closed_form_bytes(n_columns):
    """Peak bytes of a closed form over ``n_columns`` columns: :data:`GRAM_COPIES` float64
    ``c x c`` arrays."""
    return GRAM_COPIES * 8.0 * float(n_columns) ** 2


def peak_bytes(shared, candidate, profile):
    """Peak bytes that one candidate path needs on its device.

    Parameters
    ----------
    shared : dict
        The fit's features (:func:`sklearn_ilargi.cost._features.fit_features`).
    candidate : dict
        The candidate's features (:func:`~sklearn_ilargi.cost._features.candidate_features`).
    profile : OperationProfile
        The fit's operations: ``gram`` (a dense ``c x c`` gram), ``join_copies`` (dense
        copies of a dense join on the materialized path) and ``source_copies`` (copies of
        the sources on the factorized path).

    Returns
    -------
    float
        ``path_memory``, plus the gram's other copies where the fit forms one, plus
        ``join_copies`` copies of the join where the materialized path builds it dense (a
        CSR join is never copied dense), plus ``source_copies`` copies of the sources on the
        factorized path.
    """
    peak = candidate["path_memory"]
    if shared["gram"]:
        # path_memory counts one float64 gram; the closed form holds GRAM_COPIES of them.
        peak += closed_form_bytes(shared["n_columns"]) - 8.0 * shared["n_columns"] ** 2
    if not candidate["is_factorized"] and not shared["mat_sparse"]:
        peak += getattr(profile, "join_copies", 0) * shared["mat_bytes"]
    if candidate["is_factorized"]:
        peak += getattr(profile, "source_copies", 0) * shared["fact_bytes"]
    return peak


def format_bytes(n_bytes):
    """``n_bytes`` in GiB, MiB or KiB (two decimals), for messages."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20)):
        if n_bytes >= size:
            return f"{n_bytes / size:.2f} {unit}"
    return f"{n_bytes / 2**10:.2f} KiB"
