"""FactorizedPCA's svd_solver options on a one-hot star against scikit-learn's PCA."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.decomposition import PCA

from sklearn_ilargi import FactorizedPCA, InsufficientMemoryError, NormalizedMatrix, config_context
from sklearn_ilargi.cost._candidates import Candidate
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


def test_a_covariance_that_does_not_fit_in_memory_is_refused(star):
    X, _, _ = star
    with config_context(memory_limit=2**20):
        for solver in ("full", "covariance_eigh", "auto"):  # auto: all components, so full
            with pytest.raises(MemoryError, match="FactorizedPCA with solver '(full|covariance"
                                                  "_eigh)' cannot run: its dense") as error:
                FactorizedPCA(svd_solver=solver, strategy="factorized").fit(X)
            # PCA names its solver svd_solver: the message points to that parameter
            assert "(see the svd_solver parameter)" in str(error.value)
        fitted = FactorizedPCA(2, svd_solver="arpack", strategy="factorized").fit(X)
    assert fitted.n_components_ == 2


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


def test_the_randomized_svd_of_a_sparse_join_keeps_it_sparse():
    """Under a limit of 100 MiB, which holds the covariance's copies (47 MiB) and the CSR
    join but not the dense join with scikit-learn's three copies of it (4 x 39 MiB), the
    materialized randomized SVD runs on the CSR join and gives scikit-learn's PCA of the
    dense join; the full SVD is refused on the materialized path before it allocates, and
    under auto runs factorized."""
    X, _, _ = make_onehot_star(4000, (1000, 150), n_categories=(4,), n_numeric=1,
                               offset=50.0, return_X_y=True, random_state=0)
    dense = X.materialize(sparse=False)
    with config_context(memory_limit=100 * 2**20):
        ours = FactorizedPCA(5, svd_solver="randomized", random_state=0,
                             strategy="materialized").fit(X)
        with pytest.raises(InsufficientMemoryError, match=(
                r"FactorizedPCA cannot run with strategy='materialized' \(solver 'full'\): "
                r"cpu/materialized: the path needs [\d.]+ [KM]iB more at its peak, more than "
                r"the [\d.]+ [KM]iB it may take")):
            FactorizedPCA(5, svd_solver="full", strategy="materialized").fit(X)
        full = FactorizedPCA(5, svd_solver="full").fit(X)
    assert ours.strategy_ == "materialized" and ours.decision_.features["mat_sparse"] == 1.0
    theirs = PCA(5, svd_solver="randomized", random_state=0).fit(dense)
    assert_same_pca(ours, theirs, X, dense)
    assert full.strategy_ == "factorized"
    assert Candidate("cpu", "materialized") in full.decision_.infeasible


@settings(max_examples=15, deadline=None)
@given(n_rows=st.integers(60, 300), n_ids=st.integers(20, 400), missing=st.floats(0.0, 0.5),
       offset=st.sampled_from([0.0, 1e3, 1e6, 1e8]), seed=st.integers(0, 2**16))
def test_the_randomized_svd_of_the_csr_join_matches_sklearn(n_rows, n_ids, missing, offset,
                                                              seed):
    """Random stars of a dense fact table with offsets and a one-hot dimension (misses of a
    left join included): the materialized randomized SVD on the CSR join gives scikit-learn's
    on the dense join, and the factorized path's."""
    rng = np.random.default_rng(seed)
    fact = offset + rng.standard_normal((n_rows, 2))
    dim = sp.eye(n_ids, format="csr") + sp.random(n_ids, n_ids, density=0.01, format="csr",
                                                   random_state=seed)
    row_map = rng.integers(0, n_ids, n_rows)
    row_map[rng.random(n_rows) < missing] = -1
    with config_context(dense_storage_max_cells=0):  # the dimension stays sparse
        X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(n_rows), row_map])
    k = 3
    ours = FactorizedPCA(k, svd_solver="randomized", random_state=0,
                         strategy="materialized").fit(X)
    factorized = FactorizedPCA(k, svd_solver="randomized", random_state=0,
                               strategy="factorized").fit(X)
    dense = X.materialize(sparse=False)
    theirs = PCA(k, svd_solver="randomized", random_state=0).fit(dense)
    assert ours.decision_.features["mat_sparse"] == 1.0
    for name in ("explained_variance_", "explained_variance_ratio_", "mean_",
                 "noise_variance_"):
        expected = getattr(theirs, name)
        for fitted in (ours, factorized):
            assert_allclose(getattr(fitted, name), expected, rtol=1e-6,
                            atol=1e-9 * np.abs(expected).max(), err_msg=name)
    assert_allclose(ours.components_, factorized.components_, atol=1e-6)
