"""K-means over the samples in the order of their dimension's rows gives the fit in theirs."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning

from sklearn_ilargi import FactorizedKMeans, NormalizedMatrix, config_context
from sklearn_ilargi.cluster.tests import test_kmeans, test_kmeans_paths
from sklearn_ilargi.cluster.tests.test_kmeans import _without_ties, fit_both, scenario
from sklearn_ilargi.tests._scenarios import build, random_scenario, reference_matrix
from sklearn_ilargi.utils import TrainingMatrix

ALWAYS, NEVER = 0, 1 << 62


def star(rng, *, n_dim, tuple_ratio, offset=0.0, missing=False, sparse=False,
         dtype=np.float64):
    """A fact table and one dimension (a one-hot of categories where ``sparse``)."""
    n = n_dim * tuple_ratio
    rows = rng.integers(0, n_dim, n)
    if missing:
        rows[rng.random(n) < 0.2] = -1
    fact = (rng.standard_normal((n, 2)) + offset).astype(dtype)
    if sparse:
        dim = sp.csr_matrix(np.eye(4)[rng.integers(0, 4, n_dim)].astype(dtype))
    else:
        dim = (rng.standard_normal((n_dim, 3)) * 3 + offset).astype(dtype)
    return NormalizedMatrix.from_matrices([fact, dim], [np.arange(n), rows])


def fits(nm, sample_weight=None, **params):
    """The fits of ``nm`` in the samples' order and in the dimension's."""
    out = []
    for min_bytes in (NEVER, ALWAYS):
        with config_context(locality_order_min_bytes=min_bytes), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            out.append(FactorizedKMeans(strategy="factorized", **params).fit(
                nm, sample_weight=sample_weight))
    return out


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 5), weighted=st.booleans(),
       offset=st.sampled_from([0.0, 1e6]), missing=st.booleans(), sparse=st.booleans(),
       float32=st.booleans())
def test_the_dimensions_order_gives_the_fit_in_the_samples_order(seed, k, weighted, offset,
                                                                 missing, sparse, float32):
    rng = np.random.default_rng(seed)
    nm = star(rng, n_dim=int(rng.integers(3, 30)), tuple_ratio=int(rng.integers(2, 12)),
              offset=offset, missing=missing, sparse=sparse,
              dtype=np.float32 if float32 else np.float64)
    T = nm.toarray().astype(np.float64)
    assume(len(np.unique(T, axis=0)) >= k)
    init = T[rng.choice(len(T), k, replace=False)] + rng.normal(0, 0.01, (k, T.shape[1]))
    weights = rng.random(len(T)) * 2 if weighted else None
    # Summed in another order, the centers differ by rounding: no sample may sit at a tie.
    steps = [fits(nm, n_clusters=k, init=init, n_init=1, tol=0.0, max_iter=i,
                  sample_weight=weights)[0].cluster_centers_ for i in range(1, 6)]
    assume(all(_without_ties(T, centers) for centers in [init, *steps]))
    in_samples, in_dimension = fits(nm, n_clusters=k, init=init, n_init=1, tol=0.0,
                                    max_iter=5, sample_weight=weights)
    assert_array_equal(in_dimension.labels_, in_samples.labels_)
    assert in_dimension.n_iter_ == in_samples.n_iter_
    rtol = 1e-4 if float32 else 1e-9
    scale = max(1.0, offset)
    assert_allclose(in_dimension.cluster_centers_, in_samples.cluster_centers_, rtol=rtol,
                    atol=rtol * scale)
    # The inertia is summed from ||x||^2 + (||c||^2 - 2 x.c): it rounds as ||x||^2 does.
    w = np.ones(len(T)) if weights is None else weights
    spread = float(w @ ((T - np.average(T, axis=0, weights=w)) ** 2).sum(axis=1))
    assert_allclose(in_dimension.inertia_, in_samples.inertia_, rtol=rtol,
                    atol=(1e-5 if float32 else 1e-12) * spread)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 4), weighted=st.booleans())
def test_the_dimensions_order_matches_sklearn(seed, k, weighted):
    # Every join kind (left, outer, many-to-many, snowflake), sparse sources.
    nm, T, rng = scenario(seed)
    assume(T.shape[1] > 0 and len(np.unique(T, axis=0)) >= k)
    init = T[rng.choice(len(T), k, replace=False)] + rng.normal(0, 0.01, (k, T.shape[1]))
    weights = rng.random(len(T)) * 2 if weighted else None
    steps = [fit_both(nm, T, k, init, weights, tol=0.0, max_iter=i)[1].cluster_centers_
             for i in range(1, 6)]
    assume(all(_without_ties(T, centers) for centers in [init, *steps]))
    with config_context(locality_order_min_bytes=ALWAYS):
        ours, theirs = fit_both(nm, T, k, init, weights, tol=0.0, max_iter=5)
    assert_array_equal(ours.labels_, theirs.labels_)
    assert_allclose(ours.cluster_centers_, theirs.cluster_centers_, rtol=1e-6, atol=1e-8)
    assert_allclose(ours.inertia_, theirs.inertia_, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("test", [
    test_kmeans.test_sparse_sources_and_outer_joins,
    test_kmeans.test_weights_are_repetitions,
    test_kmeans.test_n_init_keeps_the_best_and_random_init,  # reordered once, for every run
    # Empty clusters found by the farthest samples, ties among them taken in the samples'
    # order.
    test_kmeans_paths.test_ties_among_the_farthest_samples_go_as_in_scikit_learn,
], ids=lambda test: test.__name__)
def test_the_dimensions_order_passes_the_kmeans_tests(test):
    with config_context(locality_order_min_bytes=ALWAYS):
        test()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_reordered_matrix_is_its_rows_in_that_order(seed):
    rng = np.random.default_rng(seed)
    scenario_ = random_scenario(rng)
    nm = build(scenario_, gather_thin=bool(seed % 2))
    T = reference_matrix(*scenario_)
    order = rng.permutation(len(T))
    matrix = TrainingMatrix(nm)
    matrix.row_norms_squared()
    reordered = matrix.reordered(order)
    assert_allclose(reordered.X.toarray(), T[order], atol=1e-12)
    assert_allclose(reordered.row_norms_squared(), (T[order] ** 2).sum(axis=1), atol=1e-9)
    W = rng.standard_normal((T.shape[1], 3))
    assert_allclose(reordered.matmul(W), T[order] @ W, atol=1e-9)
    # The fact table's rows are copied in order: its map stays the identity.
    identity = [b.row_map.is_identity for b in nm.blocks]
    assert [b.row_map.is_identity for b in reordered.X.blocks] == identity
    plain = TrainingMatrix(T).reordered(order)
    assert_allclose(plain.X, T[order])


def test_the_locality_order_sorts_the_largest_dimension_where_it_is_large():
    rng = np.random.default_rng(0)
    nm = star(rng, n_dim=50, tuple_ratio=4, missing=True)
    matrix = TrainingMatrix(nm)
    width_bytes = 8 * 50 * 8  # 8 centers of the 50 dimension rows, in float64
    with config_context(locality_order_min_bytes=width_bytes + 1):
        assert matrix.locality_order(8) is None
    with config_context(locality_order_min_bytes=width_bytes):
        order = matrix.locality_order(8)
    rows = nm.blocks[1].row_map.indices
    assert_array_equal(np.sort(order), np.arange(len(rows)))
    assert np.all(np.diff(rows[order]) >= 0)
    with config_context(locality_order_min_bytes=ALWAYS):
        assert TrainingMatrix(nm.toarray()).locality_order(8) is None
        fact_only = NormalizedMatrix.from_matrices([np.ones((4, 2))], [np.arange(4)])
        assert TrainingMatrix(fact_only).locality_order(8) is None


def test_the_setting_is_checked():
    with pytest.raises(ValueError, match="locality_order_min_bytes"):
        with config_context(locality_order_min_bytes=-1):
            pass
