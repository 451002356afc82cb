"""K-means over a wide one-hot star builds nothing of the size of a dense source."""

import tracemalloc

import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_ilargi import FactorizedKMeans
from sklearn_ilargi.datasets import make_onehot_star


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
