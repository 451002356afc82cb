"""The closed-form estimators on a 30,000-column one-hot star never allocate a dense gram.

Their default solvers follow the width: past ``closed_form_max_columns`` they work through
the products ``X @ v`` and ``X.T @ r`` (least squares, PCA), and the scaler's variances are
column sums of squares of each block. A dense ``c x c`` gram would take ``8 c^2`` bytes,
7 GB here; the traced peak of each fit must stay a small fraction of it.
"""

import tracemalloc
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from sklearn_ilargi import (
    FactorizedLinearRegression,
    FactorizedPCA,
    FactorizedRidge,
    FactorizedStandardScaler,
    InsufficientMemoryError,
    config_context,
)
from sklearn_ilargi.datasets import make_onehot_star


@pytest.fixture(scope="module")
def wide():
    X, y, _ = make_onehot_star(20_000, (25_000, 5_000), n_categories=(5,), n_numeric=1,
                               offset=0.0, return_X_y=True, random_state=0)
    assert X.shape[1] > 30_000
    return X, y


def traced_peak(fit):
    """The peak of the memory Python allocations take while ``fit()`` runs, in bytes."""
    tracemalloc.start()
    try:
        fit()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# Every path that keeps the join sparse: the scaler that centers needs the join dense.
CASES = [
    (FactorizedLinearRegression(max_iter=3), "lsqr", ("factorized", "materialized")),
    (FactorizedRidge(max_iter=3), "sparse_cg", ("factorized", "materialized")),
    (FactorizedRidge(solver="lsqr", max_iter=3), "lsqr", ("factorized", "materialized")),
    (FactorizedPCA(3, iterated_power=1, random_state=0), "randomized",
     ("factorized", "materialized")),
    (FactorizedPCA(3, svd_solver="arpack", tol=1e-3, random_state=0), "arpack",
     ("factorized", "materialized")),
    (FactorizedStandardScaler(), "", ("factorized",)),
    (FactorizedStandardScaler(with_mean=False), "", ("factorized", "materialized")),
]


@pytest.mark.parametrize("model, solver, strategy", [
    pytest.param(model, solver, strategy,
                 id=f"{type(model).__name__}-{solver or model.with_mean}-{strategy}")
    for model, solver, strategies in CASES for strategy in strategies])
def test_no_fit_allocates_a_dense_gram(wide, model, solver, strategy):
    X, y = wide
    model.set_params(strategy=strategy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a few iterations only
        peak = traced_peak(lambda: model.fit(X, y))
    assert model.strategy_ == strategy and model.decision_.solver == solver
    assert peak < 8 * X.shape[1] ** 2 / 50


def test_the_scaler_and_pca_match_sklearn_on_the_wide_join(wide):
    X, _ = wide
    T = X.materialize(sparse=True)
    scaler = FactorizedStandardScaler(with_mean=False, strategy="factorized").fit(X)
    reference = StandardScaler(with_mean=False).fit(T)
    assert_allclose(scaler.var_, reference.var_, rtol=1e-9, atol=1e-12)
    assert_allclose(scaler.scale_, reference.scale_, rtol=1e-9)
    ours = FactorizedPCA(3, svd_solver="arpack", random_state=0, strategy="factorized").fit(X)
    theirs = PCA(3, svd_solver="arpack", random_state=0).fit(T)
    assert_allclose(ours.explained_variance_, theirs.explained_variance_, rtol=1e-8)
    assert_allclose(ours.explained_variance_ratio_, theirs.explained_variance_ratio_,
                    rtol=1e-8)
    assert_allclose(np.abs(ours.components_ @ theirs.components_.T), np.eye(3), atol=1e-6)


def test_a_path_that_needs_the_join_dense_is_refused_before_it_allocates(wide):
    """The scaler that centers needs the join dense, 4.8 GB here: forced onto the
    materialized path under a limit that cannot hold it, it raises before it allocates,
    naming the estimator, the strategy and the bytes; under auto it runs factorized."""
    X, _ = wide
    dense_gib = X.shape[0] * X.shape[1] * 8 / 2**30
    model = FactorizedStandardScaler(strategy="materialized")
    with config_context(memory_limit=2**31):
        with pytest.raises(InsufficientMemoryError) as caught:
            model.fit(X)
        message = str(caught.value)
        assert message.startswith("FactorizedStandardScaler cannot run with "
                                  "strategy='materialized': cpu/materialized: the "
                                  f"materialized matrix needs {dense_gib:.2f} GiB")
        assert "1.60 GiB it may take (80% of the 2.00 GiB available on the host)" in message
        peak = traced_peak(lambda: pytest.raises(InsufficientMemoryError, model.fit, X))
        assert peak < 2**26
        auto = FactorizedStandardScaler().fit(X)
    assert auto.strategy_ == "factorized"
    assert "infeasible: the materialized matrix needs" in auto.decision_.explain()
