"""FactorizedPCA and FactorizedNMF: scikit-learn's models, computed over the sources."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.decomposition import NMF, PCA
from sklearn.exceptions import ConvergenceWarning

from sklearn_ilargi.tests._scenarios import build, random_scenario
from sklearn_ilargi.utils._sklearn_compat import InvalidParameterError
from sklearn_ilargi import (
    FactorizedNMF,
    FactorizedPCA,
    FactorizedStandardScaler,
    NormalizedMatrix,
    NotFactorizableError,
    config_context,
)

TOL = dict(rtol=1e-8, atol=1e-10)


def scenario(seed, n_target=30, non_negative=False, **kwargs):
    rng = np.random.default_rng(seed)
    sources, row_maps, column_maps, n_columns = random_scenario(rng, n_target=n_target,
                                                                **kwargs)
    if non_negative:
        sources = [abs(s) for s in sources]
    nm = build((sources, row_maps, column_maps, n_columns), gather_thin=seed % 2 == 1)
    return nm, nm.toarray(), rng


def separated(values, gap=1e-6):
    """Indices of eigenvalues that are non-zero and apart from their neighbours."""
    top = values[0] if len(values) else 0.0
    keep = []
    for i, v in enumerate(values):
        near = [abs(v - values[j]) for j in (i - 1, i + 1) if 0 <= j < len(values)]
        if v > gap * top and all(d > gap * top for d in near):
            keep.append(i)
    return np.array(keep, dtype=int)


# ---------------------------------------------------------------------- PCA
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_components=st.sampled_from([None, 1, 2, 0.7]),
       whiten=st.booleans())
@example(seed=73731, n_components=None, whiten=False)  # a rank-1 join with a large mean
def test_pca_matches_sklearn_on_the_join(seed, n_components, whiten):
    nm, T, _ = scenario(seed)
    # Constant data has only rounding noise for a spectrum; nothing to compare.
    assume(T.shape[1] > 0 and T.var(axis=0).sum() > 1e-8)
    if isinstance(n_components, int) and n_components > T.shape[1]:
        n_components = T.shape[1]
    ours = FactorizedPCA(n_components, whiten=whiten, strategy="factorized").fit(nm)
    theirs = PCA(n_components, whiten=whiten, svd_solver="full").fit(T)
    assert ours.strategy_ == "factorized"
    assert ours.n_components_ == theirs.n_components_
    for name in ("explained_variance_", "mean_"):
        assert_allclose(getattr(ours, name), getattr(theirs, name), err_msg=name, **TOL)
    # A zero singular value comes out of the covariance as sqrt(rounding). The covariance is
    # the raw gram less the mean's outer product, so the rounding is eps times the raw gram's
    # scale: ~sqrt(eps) * ||T||_2, more than sqrt(eps) * S[0] where the mean is large.
    scale = np.linalg.norm(T, 2) if T.size else 0.0
    assert_allclose(ours.singular_values_, theirs.singular_values_, rtol=1e-8,
                    atol=1e-7 * scale + 1e-12)
    assert_allclose(ours.explained_variance_ratio_, theirs.explained_variance_ratio_,
                    rtol=1e-8, atol=1e-12)
    assert_allclose(ours.noise_variance_, theirs.noise_variance_, rtol=1e-8, atol=1e-10)
    keep = separated(theirs.explained_variance_)
    assert_allclose(ours.components_[keep], theirs.components_[keep], rtol=1e-6, atol=1e-8)
    assert_allclose(ours.transform(nm)[:, keep], theirs.transform(T)[:, keep],
                    rtol=1e-6, atol=1e-7)


def test_pca_score_and_mle_match_sklearn():
    rng = np.random.default_rng(0)
    fact = rng.standard_normal((80, 3)) @ rng.standard_normal((3, 3))
    dims = [rng.standard_normal((6, 2)), rng.standard_normal((9, 3))]
    nm = NormalizedMatrix.from_matrices(
        [fact] + dims, [np.arange(80), rng.integers(0, 6, 80), rng.integers(-1, 9, 80)])
    T = nm.materialize()
    for n_components in (2, "mle", 0.9):
        ours = FactorizedPCA(n_components, strategy="factorized").fit(nm)
        theirs = PCA(n_components, svd_solver="full").fit(T)
        assert ours.n_components_ == theirs.n_components_
        assert_allclose(ours.score_samples(nm), theirs.score_samples(T), rtol=1e-8)
        assert_allclose(ours.score(nm), theirs.score(T), rtol=1e-8)
        assert_allclose(ours.get_covariance(), theirs.get_covariance(), **TOL)
        assert_allclose(ours.inverse_transform(ours.transform(nm)),
                        theirs.inverse_transform(theirs.transform(T)), rtol=1e-7, atol=1e-8)
    assert_allclose(FactorizedPCA(2, strategy="factorized").fit_transform(nm),
                    PCA(2).fit_transform(T), rtol=1e-7, atol=1e-8)


def test_pca_on_a_scaled_matrix_and_sparse_sources():
    nm, T, _ = scenario(11, n_target=40, sparse=True)
    scaled = FactorizedStandardScaler(strategy="factorized").fit_transform(nm)
    ours = FactorizedPCA(2, strategy="factorized").fit(scaled)
    theirs = PCA(2, svd_solver="full").fit(scaled.materialize())
    assert_allclose(ours.explained_variance_, theirs.explained_variance_, **TOL)
    assert_allclose(np.abs(ours.transform(scaled)), np.abs(theirs.transform(
        scaled.materialize())), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("sparse", [False, True])
def test_pca_plain_input_is_sklearn(sparse):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((30, 5))
    X = sp.csr_matrix(X) if sparse else X
    solver = "arpack" if sparse else "auto"
    ours = FactorizedPCA(3, svd_solver=solver, random_state=0).fit(X)
    theirs = PCA(3, svd_solver=solver, random_state=0).fit(X)
    assert ours.strategy_ == "materialized"
    assert_allclose(ours.components_, theirs.components_)
    assert_allclose(ours.transform(X), theirs.transform(X))


def test_pca_materialized_strategy_keeps_feature_names():
    nm = NormalizedMatrix.from_matrices(
        [np.arange(12.0).reshape(6, 2) ** 1.5, np.array([[1.0], [4.0]])],
        [np.arange(6), [0, 1, 1, 0, 1, 0]], feature_names=["a", "b", "c"])
    joined = FactorizedPCA(2, strategy="materialized").fit(nm)
    factorized = FactorizedPCA(2, strategy="factorized").fit(nm)
    assert joined.strategy_ == "materialized"
    assert list(joined.feature_names_in_) == ["a", "b", "c"]
    assert_allclose(joined.explained_variance_, factorized.explained_variance_, **TOL)
    assert_allclose(joined.transform(nm), factorized.transform(nm), rtol=1e-7, atol=1e-9)


def test_pca_errors():
    nm, _, _ = scenario(4)
    pca = FactorizedPCA(1, strategy="factorized").fit(nm)
    narrower = nm[:, : nm.shape[1] - 1]
    with pytest.raises(ValueError, match=f"X has {nm.shape[1] - 1} features, but "
                                         f"FactorizedPCA is expecting {nm.shape[1]}"):
        pca.transform(narrower)
    with pytest.raises(ValueError, match="n_components=99 must be between 0 and"):
        FactorizedPCA(99, strategy="factorized").fit(nm)
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array"):
        FactorizedPCA(1).fit(np.ones(5))
    with pytest.raises(ValueError, match="Input X contains NaN"):
        pca.transform(np.full((2, nm.shape[1]), np.nan))


def test_pca_pickle():
    nm, _, _ = scenario(5)
    pca = FactorizedPCA(1, strategy="factorized").fit(nm)
    clone = pickle.loads(pickle.dumps(pca))
    assert_allclose(clone.transform(nm), pca.transform(nm))


# ---------------------------------------------------------------------- NMF
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), solver=st.sampled_from(["cd", "mu"]),
       regularized=st.booleans())
@example(seed=217996, solver="cd", regularized=False)
def test_nmf_from_the_same_init_matches_sklearn(seed, solver, regularized):
    nm, T, rng = scenario(seed, non_negative=True)
    assume(T.shape[1] > 0 and T.any())
    k = 2
    W0 = rng.random((T.shape[0], k))
    H0 = rng.random((k, T.shape[1]))
    params = dict(n_components=k, init="custom", solver=solver, max_iter=150, tol=1e-4)
    if regularized:
        params.update(alpha_W=0.01, l1_ratio=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours = FactorizedNMF(**params, strategy="factorized").fit(nm, W=W0, H=H0)
        theirs = NMF(**params)
        W_fit = theirs.fit_transform(T, W=W0.copy(), H=H0.copy())
        # A component whose column of W vanished (2e-17 in all, seed 217996) is free: its
        # row of H changes almost nothing, and the two implementations round its curvature
        # differently (82.1 against 0). Regularization can also zero every component.
        column_mass = np.abs(W_fit).sum(axis=0)
        assume((column_mass > 1e-9 * column_mass.sum()).all())
        W_ours, W_theirs = ours.transform(nm), theirs.transform(T)
    assert ours.strategy_ == "factorized"
    assert ours.n_iter_ == theirs.n_iter_
    assert_allclose(ours.components_, theirs.components_, rtol=1e-6, atol=1e-8)
    assert_allclose(ours.reconstruction_err_, theirs.reconstruction_err_, rtol=1e-6,
                    atol=1e-6)
    assert_allclose(W_ours, W_theirs, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("init", ["random", "nndsvd", "nndsvda", "nndsvdar"])
def test_nmf_factorized_equals_materialized(init):
    nm, T, _ = scenario(7, n_target=40, non_negative=True, sparse=False)
    params = dict(n_components=1, init=init, random_state=0, max_iter=400)
    solver = "mu" if init != "nndsvd" else "cd"
    ours = FactorizedNMF(**params, solver=solver, strategy="factorized")
    joined = FactorizedNMF(**params, solver=solver, strategy="materialized")
    W = ours.fit_transform(nm)
    assert_allclose(W, joined.fit_transform(nm), rtol=1e-7, atol=1e-9)
    assert_allclose(ours.components_, joined.components_, rtol=1e-7, atol=1e-9)
    assert joined.strategy_ == "materialized"


@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
def test_nmf_init_on_a_wide_matrix_needs_no_gram(strategy):
    """Wider than closed_form_max_columns, NNDSVD's triplets come from svds over the
    products: the same initial factors as from the gram's eigenvectors."""
    from sklearn_ilargi.datasets import make_onehot_star

    X, _, _ = make_onehot_star(400, (60, 30), n_categories=(4,), n_numeric=1, offset=10.0,
                               return_X_y=True, random_state=0)
    params = dict(n_components=3, init="nndsvda", max_iter=1, tol=0, strategy=strategy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        by_gram = FactorizedNMF(**params).fit(X)
        with config_context(closed_form_max_columns=50):
            by_products = FactorizedNMF(**params).fit(X)
    assert_allclose(by_products.components_, by_gram.components_, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("solver", ["cd", "mu"])
def test_nmf_error_of_dense_input_in_slices(solver):
    """On a dense array the error is summed a slice of rows at a time, on threads: the norm
    of ``X - W H`` all the same, at the end and in the multiplicative solver's checks."""
    X = np.abs(np.random.default_rng(3).standard_normal((300, 7))) + 1e3
    params = dict(n_components=3, solver=solver, max_iter=30, tol=1e-6, random_state=0)
    with config_context(slice_working_memory=1e-4, parallel_slice_rows=0):
        model = FactorizedNMF(**params)
        W = model.fit_transform(X)
    assert_allclose(model.reconstruction_err_, np.linalg.norm(X - W @ model.components_),
                    rtol=1e-10)
    whole = FactorizedNMF(**params).fit(X)
    assert model.n_iter_ == whole.n_iter_
    assert_allclose(model.components_, whole.components_, rtol=1e-10)


def test_nmf_random_init_is_sklearns():
    nm, T, _ = scenario(8, non_negative=True)
    params = dict(n_components=2, init="random", random_state=3, solver="mu", max_iter=50,
                  tol=0)
    ours = FactorizedNMF(**params, strategy="factorized").fit(nm)
    theirs = NMF(**params).fit(T)
    assert_allclose(ours.components_, theirs.components_, rtol=1e-6, atol=1e-8)


def test_nmf_inverse_transform_multiplies_by_the_components():
    nm, _, _ = scenario(9, non_negative=True)
    nmf = FactorizedNMF(2, init="random", random_state=0, max_iter=20, strategy="factorized")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        W = nmf.fit_transform(nm)
    assert_allclose(nmf.inverse_transform(W), W @ nmf.components_)


def test_nmf_negative_input_is_refused():
    fact = np.array([[1.0], [-2.0], [3.0]])
    nm = NormalizedMatrix.from_matrices([fact], [np.arange(3)])
    with pytest.raises(ValueError, match="Negative values in data passed to NMF"):
        FactorizedNMF(1, strategy="factorized").fit(nm)
    centered = FactorizedStandardScaler().fit_transform(abs(nm))
    with pytest.raises(ValueError, match="Negative values in data passed to NMF"):
        FactorizedNMF(1, strategy="factorized").fit(centered)
    with pytest.raises(ValueError, match="Negative values in data passed to NMF"):
        FactorizedNMF(1).fit(fact)


def test_nmf_other_losses_and_errors():
    nm, _, _ = scenario(10, non_negative=True)
    with pytest.raises(InvalidParameterError, match="beta_loss"):
        FactorizedNMF(1, beta_loss="kullback-leibler").fit(nm)
    nmf = FactorizedNMF(1, max_iter=500, strategy="factorized").fit(nm)
    with pytest.raises(ValueError, match="features, but FactorizedNMF is expecting"):
        nmf.transform(nm[:, :1] if nm.shape[1] > 1 else np.ones((2, 3)))
    with pytest.raises(ValueError, match="init='custom' needs both W and H"):
        FactorizedNMF(1, init="custom").fit(nm)
    assert_allclose(pickle.loads(pickle.dumps(nmf)).components_, nmf.components_)


def test_nmf_with_a_non_negative_offset():
    nm, T, _ = scenario(12, non_negative=True)
    shifted = nm + 0.5
    params = dict(n_components=2, init="random", random_state=0, solver="mu", max_iter=30,
                  tol=0)
    ours = FactorizedNMF(**params, strategy="factorized").fit(shifted)
    theirs = NMF(**params).fit(T + 0.5)
    assert_allclose(ours.components_, theirs.components_, rtol=1e-6, atol=1e-8)


def test_not_factorizable_error_is_a_value_error():
    assert issubclass(NotFactorizableError, ValueError)
