"""K-means over a wide one-hot star builds nothing of the size of a dense source, and its
sparse columns give scikit-learn's distances on the sparse join, ties included."""

import tracemalloc

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.cluster import KMeans

from sklearn_ilargi import FactorizedKMeans, config_context
from sklearn_ilargi.datasets import make_onehot_star
from sklearn_ilargi.utils import TrainingMatrix


def test_factorized_kmeans_on_a_wide_one_hot_star_never_densifies_it():
    # dense, the first dimension would take 80 GB: densifying it fails or shows in the peak
    X, _, _ = make_onehot_star(30_000, (100_000, 3_000), n_categories=(5,), n_numeric=1,
                               offset=0.0, return_X_y=True, random_state=0)
    assert all(sp.issparse(b.source) for b in X.blocks if not b.row_map.is_identity)
    params = dict(n_clusters=4, random_state=0, max_iter=5, tol=0.0)
    tracemalloc.start()
    try:
        factorized = FactorizedKMeans(strategy="factorized", **params).fit(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert factorized.strategy_ == "factorized"
    assert peak < 200 * 2**20
    materialized = FactorizedKMeans(strategy="materialized", **params).fit(X)
    assert_array_equal(factorized.labels_, materialized.labels_)
    assert_allclose(factorized.cluster_centers_, materialized.cluster_centers_, rtol=1e-9,
                    atol=1e-9)
    assert_allclose(factorized.inertia_, materialized.inertia_, rtol=1e-9)
    assert_array_equal(factorized.predict(X[:50]), factorized.labels_[:50])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_ids=st.sampled_from([(300, 40), (60, 500, 7)]),
       n_categories=st.sampled_from([(), (3,), (2, 9)]))
def test_ties_on_a_one_hot_star_fall_as_on_the_sparse_join(seed, n_ids, n_categories):
    # Centers at samples of 0/1 rows tie exactly on whole numbers. The columns of sparse
    # sources are not centered, as scikit-learn leaves the sparse join, so the ties fall the
    # same way and the runs stay the same through every iteration.
    with config_context(dense_storage_max_cells=0, dense_storage_density=1.0):
        X, _, _ = make_onehot_star(3_000, n_ids, n_categories=n_categories, n_numeric=0,
                                   return_X_y=True, random_state=seed)
    assert TrainingMatrix(X).sparse_columns().all()
    T = X.materialize(sparse=True)
    rng = np.random.default_rng(seed)
    init = T[rng.choice(T.shape[0], 6, replace=False)].toarray()
    params = dict(n_clusters=6, n_init=1, max_iter=30)
    factorized = FactorizedKMeans(init=init, strategy="factorized", **params).fit(X)
    theirs = KMeans(init=init, **params).fit(T)
    assert_array_equal(factorized.labels_, theirs.labels_)
    assert factorized.n_iter_ == theirs.n_iter_
    assert_allclose(factorized.inertia_, theirs.inertia_, rtol=1e-9)
    # and from the same k-means++ seeds, both paths take the same run
    seeded = dict(params, random_state=seed % 1000)
    factorized = FactorizedKMeans(strategy="factorized", **seeded).fit(X)
    materialized = FactorizedKMeans(strategy="materialized", **seeded).fit(X)
    assert_array_equal(factorized.labels_, materialized.labels_)
    assert factorized.n_iter_ == materialized.n_iter_


def test_sparse_columns_are_those_of_sparse_sources():
    with config_context(dense_storage_max_cells=0):
        X, _, _ = make_onehot_star(500, (300, 100), n_categories=(3,), n_numeric=2,
                                   return_X_y=True, random_state=0)
    expected = np.zeros(X.shape[1], dtype=bool)
    for block in X.blocks:
        expected[block.columns] |= sp.issparse(block.source)
    assert expected.any() and not expected.all()
    assert_array_equal(TrainingMatrix(X).sparse_columns(), expected)
    assert_array_equal(TrainingMatrix(X[::3]).sparse_columns(), expected)
    T = X.materialize(sparse=True)
    assert TrainingMatrix(T).sparse_columns().all()
    assert not TrainingMatrix(T.toarray()).sparse_columns().any()
