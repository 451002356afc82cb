"""FactorizedPCA's svd_solver options on a one-hot star against scikit-learn's PCA."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.decomposition import PCA

from sklearn_ilargi import FactorizedPCA
from sklearn_ilargi.datasets import make_onehot_star
from sklearn_ilargi.decomposition._pca_solvers import resolve_svd_solver

FITTED = ("explained_variance_", "explained_variance_ratio_", "singular_values_", "mean_",
          "components_", "noise_variance_")


@pytest.fixture(scope="module")
def star():
    """About 170 one-hot columns and a numeric column per table; the join, CSR and dense."""
    X, _, _ = make_onehot_star(600, (120, 40), n_categories=(4,), n_numeric=1, offset=50.0,
                               return_X_y=True, random_state=0)
    T = X.materialize(sparse=True)
    return X, T, T.toarray()


def assert_same_pca(ours, theirs, X, T, rtol=1e-8):
    assert ours.n_components_ == theirs.n_components_
    for name in FITTED:
        expected = getattr(theirs, name)
        assert_allclose(getattr(ours, name), expected, rtol=rtol,
                        atol=rtol * np.abs(expected).max(), err_msg=name)
    expected = theirs.transform(T)
    assert_allclose(ours.transform(X), expected, rtol=rtol, atol=rtol * np.abs(expected).max())


@pytest.mark.parametrize("solver", ["full", "covariance_eigh", "arpack", "randomized"])
@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
def test_every_svd_solver_matches_sklearn_on_the_join(star, solver, strategy):
    X, T, dense = star
    ours = FactorizedPCA(5, svd_solver=solver, random_state=0, strategy=strategy).fit(X)
    # scikit-learn takes sparse input with ARPACK only
    theirs = PCA(5, svd_solver=solver, random_state=0).fit(T if solver == "arpack" else dense)
    assert ours.strategy_ == strategy and ours.decision_.solver == solver
    assert ours._fit_svd_solver == solver
    assert_same_pca(ours, theirs, X, dense)


@pytest.mark.parametrize("shape, n_components", [
    ((2000, 50), 5),      # tall and narrow: the covariance
    ((300, 200), 5),      # small: full
    ((520, 510), 5),      # a few components of a larger matrix: randomized
    ((520, 510), 450),    # most components: full
    ((520, 510), None),
    ((520, 510), 0.5),
    ((800, 60), "mle"),
])
def test_auto_follows_sklearn_rule(shape, n_components):
    data = np.random.default_rng(0).standard_normal(shape)
    reference = PCA(n_components, random_state=0).fit(data)
    assert resolve_svd_solver("auto", n_components, shape) == reference._fit_svd_solver


def test_auto_takes_the_randomized_svd_on_the_one_hot_star(star):
    X, T, dense = star
    ours = FactorizedPCA(3, random_state=0, strategy="factorized").fit(X)
    theirs = PCA(3, random_state=0).fit(dense)
    assert ours.decision_.solver == theirs._fit_svd_solver == "randomized"
    assert "solver: randomized" in ours.decision_.explain()
    assert ours.decision_.profile.gram == 0
    assert_same_pca(ours, theirs, X, dense)


def test_a_covariance_that_does_not_fit_in_memory_is_refused(star, monkeypatch):
    X, _, _ = star
    monkeypatch.setattr("sklearn_ilargi.cost._solvers.available_memory", lambda: 2**20)
    for solver in ("full", "covariance_eigh", "auto"):  # auto: all components, so full
        with pytest.raises(MemoryError, match="FactorizedPCA with solver '(full|covariance_"
                                              "eigh)' cannot run: its dense"):
            FactorizedPCA(svd_solver=solver, strategy="factorized").fit(X)
    assert FactorizedPCA(2, svd_solver="arpack", strategy="factorized").fit(X).n_components_ == 2


@pytest.mark.parametrize("solver, n_components, message", [
    ("arpack", "mle", "n_components='mle' cannot be a string with svd_solver='arpack'"),
    ("randomized", 0.5, "n_components=0.5 must be between 1 and min"),
    ("arpack", 0, "n_components=0 must be between 1 and min"),
])
def test_truncated_solvers_check_n_components_as_sklearn(star, solver, n_components, message):
    X, _, dense = star
    for model, data in ((FactorizedPCA(n_components, svd_solver=solver), X),
                        (PCA(n_components, svd_solver=solver), dense)):
        with pytest.raises(ValueError, match=message):
            model.fit(data)


def test_arpack_needs_fewer_components_than_the_smaller_side():
    X, _, _ = make_onehot_star(30, (10, 5), n_categories=(), return_X_y=True, random_state=0)
    limit = min(X.shape)
    with pytest.raises(ValueError, match=f"n_components={limit} must be strictly less than "
                                         f"min\\(n_samples, n_features\\)={limit}"):
        FactorizedPCA(limit, svd_solver="arpack", strategy="factorized").fit(X)
    # None means all but one, as in scikit-learn
    model = FactorizedPCA(svd_solver="arpack", random_state=0, strategy="factorized").fit(X)
    assert model.n_components_ == limit - 1
