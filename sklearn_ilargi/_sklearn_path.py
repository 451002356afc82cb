"""For estimators that extend a scikit-learn estimator: running its own code on one matrix.

Plain numpy or scipy.sparse input, and a NormalizedMatrix that the dispatcher chose to join,
take scikit-learn's path unchanged; these helpers record that choice and keep what the
NormalizedMatrix knew (its feature names) on the fitted estimator.
"""

from .base import to_host
from .cost import decide


def record_host_dispatch(estimator, X):
    """Record the dispatcher's verdict for plain input, which scikit-learn fits on the host."""
    estimator.decision_ = decide(X, strategy=estimator.strategy, backend=estimator.backend)
    estimator.strategy_ = "materialized"
    estimator.backend_ = "cpu"


def fit_joined(fit, estimator, joined, *args, **kwargs):
    """Call ``fit(joined, ...)`` (a scikit-learn fit method) and keep the feature names.

    ``joined`` is what the dispatcher prepared (a joined matrix, possibly on the GPU); it is
    brought to the host for scikit-learn, and the feature names recorded from the
    NormalizedMatrix survive the refit on the nameless array.
    """
    names = getattr(estimator, "feature_names_in_", None)
    out = fit(to_host(joined), *args, **kwargs)
    if names is not None:
        estimator.feature_names_in_ = names
    estimator.backend_ = "cpu"
    return out
