"""Which solver a fit runs: a closed form over the dense gram, or iterations over products.

A closed form (least squares' normal equations, PCA's covariance) builds the dense ``c x c``
gram and factors it: its memory grows as ``c**2`` and its solve as ``c**3``, whatever the
data. A solver over the products ``X @ v`` and ``X.T @ r`` (LSQR, conjugate gradients, a
truncated SVD) costs a few passes over the data per iteration and never forms the gram. A fit
declares the solvers it may use as the alternatives of its
:class:`~sklearn_ilargi.cost.OperationProfile`, closed form first; :func:`choose_solver`
keeps the closed form where ``c`` is at most the ``closed_form_max_columns`` setting and its
gram fits in memory, else takes the next alternative. A fit with a single solver (one the
user named) is checked for memory only: one whose gram cannot fit is refused before anything
is allocated.
"""

from dataclasses import replace

from .._config import get_config
from ..exceptions import InsufficientMemoryError
from ._candidates import MEMORY_HEADROOM
from ._hardware import available_memory
from ._memory import GRAM_COPIES, closed_form_bytes, format_bytes

__all__ = ["GRAM_COPIES", "choose_solver", "closed_form_bytes"]


def choose_solver(n_columns, profile):
    """The profile of the solver a fit runs, among ``profile`` and its alternatives, and why.

    Parameters
    ----------
    n_columns : int
        Columns of the fit's matrix.
    profile : OperationProfile
        The fit's preferred solver; its ``alternatives`` are the others it may run, in order
        of preference. A profile that counts a gram (``gram > 0``) is a closed form.

    Returns
    -------
    profile : OperationProfile
        The chosen one, without alternatives.
    reason : str
        Why, in a few words ("" for a fit that names no solver).

    Raises
    ------
    MemoryError
        Where every solver left is a closed form whose gram does not fit in the memory
        available now, before the gram is allocated.
    """
    options = (profile, *profile.alternatives)
    if len(options) == 1:
        why_not = _memory_refusal(n_columns) if profile.gram else None
        if why_not is not None:
            raise _closed_form_error(profile, why_not)
        return _alone(profile), "set by the estimator's parameters" if profile.solver else ""
    refused = []
    for option in options:
        if not option.gram:
            return _alone(option), "; ".join(refused) or "preferred"
        why_not = _column_refusal(n_columns) or _memory_refusal(n_columns)
        if why_not is None:
            limit = get_config()["closed_form_max_columns"]
            return _alone(option), (f"{n_columns} columns, at most closed_form_max_columns="
                                    f"{limit}, and the gram fits in memory")
        refused.append(f"not {option.solver}: {why_not}")
    # Only closed forms to choose from: the column limit cannot send the fit elsewhere.
    why_not = _memory_refusal(n_columns)
    if why_not is not None:
        raise _closed_form_error(profile, why_not)
    return _alone(profile), "the only kind of solver the parameters allow"


def _alone(profile):
    return replace(profile, alternatives=()) if profile.alternatives else profile


def _column_refusal(n_columns):
    limit = get_config()["closed_form_max_columns"]
    if n_columns > limit:
        return f"X has {n_columns} columns, more than closed_form_max_columns={limit}"
    return None


def _memory_refusal(n_columns):
    needed, available = closed_form_bytes(n_columns), available_memory()
    if needed > MEMORY_HEADROOM * available:
        return (f"its dense {n_columns} x {n_columns} gram takes {format_bytes(needed)} with its "
                f"copies, and the host has {format_bytes(available)} available")
    return None


def _closed_form_error(profile, why_not):
    who = f"{profile.name} with" if profile.name else "The"
    return InsufficientMemoryError(
        f"{who} solver {profile.solver or 'closed form'!r} cannot run: {why_not}. A solver "
        f"over the products (see the {profile.solver_parameter} parameter) never forms the "
        "gram."
    )
