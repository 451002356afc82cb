"""The seven estimators on a small one-hot star against scikit-learn on its CSR join.

The star has the shape of the real data sets that factorized learning is evaluated on: events
whose two entities one-hot encode their ids and a category, so that the join is sparse and
wider than the closed forms' dense gram is allowed to be (``closed_form_max_columns`` is
lowered here to keep the star small). Both of our paths are compared with scikit-learn's
estimator on the CSR join, from the same starting point, at the tolerances that
``benchmarks/real_shapes.py`` checks at full scale; and neither path may hold anything of the
size of the join made dense.
"""

import tracemalloc
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import logsumexp
from sklearn.cluster import KMeans
from sklearn.decomposition import NMF, PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler

from sklearn_ilargi import (
    FactorizedKMeans,
    FactorizedLinearRegression,
    FactorizedLogisticRegression,
    FactorizedNMF,
    FactorizedPCA,
    FactorizedRidge,
    FactorizedStandardScaler,
    config_context,
)
from sklearn_ilargi.datasets import make_onehot_star

N_CLUSTERS = N_COMPONENTS = 5


@pytest.fixture(scope="module")
def star():
    X, y, y_class = make_onehot_star(4_000, (500, 200), n_categories=(20,), random_state=0,
                                     return_X_y=True)
    return X, X.materialize(sparse=True), y, y_class


def _starting_point(name, T):
    """Fit arguments and parameters that both sides start from: K-means' centers (rows of the
    join moved off the exact ties between one-hot rows), NMF's ``W`` and ``H``."""
    rng = np.random.default_rng(0)
    if name == "KMeans":
        rows = rng.choice(T.shape[0], N_CLUSTERS, replace=False)
        return {}, {"init": T[rows].toarray() + 0.01 * rng.random((N_CLUSTERS, T.shape[1]))}
    if name == "NMF":
        scale = np.sqrt(T.mean() / N_COMPONENTS)
        return {"W": scale * rng.random((T.shape[0], N_COMPONENTS)),
                "H": scale * rng.random((N_COMPONENTS, T.shape[1]))}, {}
    return {}, {}


def _logistic_objective(model, X, y):
    """``C`` times the sum of the log-losses plus half of ``||coef_||^2``."""
    z = model.decision_function(X)
    if z.ndim == 1:  # two classes: the first one's score is 0
        z = np.column_stack([np.zeros_like(z), z])
    picked = z[np.arange(len(y)), np.searchsorted(model.classes_, y)]
    return model.C * float((logsumexp(z, axis=1) - picked).sum()) + 0.5 * float(
        np.sum(model.coef_ ** 2))


def _same_predictions(ours, theirs, X, T, y):
    assert_allclose(ours.predict(X), theirs.predict(T), rtol=0,
                    atol=1e-6 * np.abs(theirs.predict(T)).max())


def _objective_no_higher(ours, theirs, X, T, y):
    # L-BFGS stops on a gradient tolerance: along the flat directions of a one-hot design two
    # runs may part in their coefficients, not in the objective they minimize.
    mine, reference = _logistic_objective(ours, X, y), _logistic_objective(theirs, T, y)
    assert (mine - reference) / abs(reference) <= 1e-6


def _same(attribute):
    def check(ours, theirs, X, T, y):
        assert_allclose(getattr(ours, attribute), getattr(theirs, attribute), rtol=1e-6)
    return check


# name -> (ours, scikit-learn's, shared parameters, target, check)
ESTIMATORS = {
    "LinearRegression": (FactorizedLinearRegression, LinearRegression, {"tol": 1e-10}, "y",
                         _same_predictions),
    "Ridge": (FactorizedRidge, Ridge, {"alpha": 1.0, "tol": 1e-10}, "y", _same_predictions),
    "LogisticRegression": (FactorizedLogisticRegression, LogisticRegression,
                           {"tol": 1e-6, "max_iter": 500}, "y_class", _objective_no_higher),
    "StandardScaler": (FactorizedStandardScaler, StandardScaler, {"with_mean": False}, None,
                       _same("scale_")),
    "PCA": (FactorizedPCA, PCA, {"n_components": N_COMPONENTS, "svd_solver": "arpack",
                                 "random_state": 0}, None, _same("explained_variance_")),
    "KMeans": (FactorizedKMeans, KMeans, {"n_clusters": N_CLUSTERS, "n_init": 1,
                                          "max_iter": 20, "tol": 0.0}, None,
               _same("inertia_")),
    "NMF": (FactorizedNMF, NMF, {"n_components": N_COMPONENTS, "init": "custom",
                                 "max_iter": 50, "tol": 0.0}, None,
            _same("reconstruction_err_")),
}


@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_each_estimator_matches_sklearn_on_the_csr_join(star, name, strategy):
    X, T, y, y_class = star
    ours, theirs, params, target, check = ESTIMATORS[name]
    fit_arguments, extra = _starting_point(name, T)
    targets = () if target is None else ({"y": y, "y_class": y_class}[target],)
    params = dict(params, **extra)
    dense_join_bytes = T.shape[0] * T.shape[1] * 8
    with warnings.catch_warnings(), config_context(closed_form_max_columns=256):
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = theirs(**params).fit(T, *targets, **fit_arguments)
        # A first fit untraced, so that what is imported or cached once per process is not
        # counted in the fit's peak.
        ours(strategy=strategy, **params).fit(X, *targets, **fit_arguments)
        tracemalloc.start()
        try:
            model = ours(strategy=strategy, **params).fit(X, *targets, **fit_arguments)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert model.decision_.strategy == strategy
    assert peak < dense_join_bytes / 4, (name, strategy, peak, dense_join_bytes)
    check(model, reference, X, T, targets[0] if targets else None)
