"""FactorizedKMeans: scikit-learn's Lloyd iterations, with distances and centroids factorized."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, cross_val_score, train_test_split
from sklearn.pipeline import Pipeline

from sklearn_ilargi.tests._scenarios import build, random_scenario
from sklearn_ilargi import FactorizedKMeans, FactorizedStandardScaler, NormalizedMatrix


def scenario(seed, n_target=40, **kwargs):
    rng = np.random.default_rng(seed)
    nm = build(random_scenario(rng, n_target=n_target, **kwargs), gather_thin=seed % 2 == 1)
    return nm, nm.toarray(), rng


def fit_both(nm, T, k, init, sample_weight=None, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours = FactorizedKMeans(k, init=init, strategy="factorized", **params).fit(
            nm, sample_weight=sample_weight)
        theirs = KMeans(k, init=init, n_init=1, algorithm="lloyd", **params).fit(
            T, sample_weight=sample_weight)
    return ours, theirs


def _without_ties(T, centers):
    """Whether every row is clearly nearer one center than the others, and where a center
    is left without rows, the rows that refill the empty ones are clearly the farthest from
    their centers: at a tie, rounding (ours or scikit-learn's) picks the label or the row,
    and the runs part ways from there."""
    distances = ((T[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2)
    labels = distances.argmin(axis=1)
    n_empty = len(centers) - len(np.unique(labels))
    if n_empty:
        farthest = np.sort(distances[np.arange(len(T)), labels])[::-1][:n_empty + 1]
        if not np.all(-np.diff(farthest) > 1e-9 * (1 + farthest[0])):
            return False
    distances = np.sort(distances, axis=1)
    return distances.shape[1] < 2 or bool(
        np.all(distances[:, 1] - distances[:, 0] > 1e-9 * (1 + distances[:, 1])))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 4), weighted=st.booleans(),
       tol=st.sampled_from([0.0, 1e-4]))
# Duplicated rows: an emptied center relocated onto a row equal to another cluster's center
# ties every copy of it between the two, and the runs part ways (seed 435781123: ours reached
# inertia 0, scikit-learn's stayed at 13.0). Assumed away.
@example(seed=435781123, k=4, weighted=True, tol=0.0)
@example(seed=24833, k=4, weighted=False, tol=0.0)
def test_matches_sklearn_from_the_same_init(seed, k, weighted, tol):
    nm, T, rng = scenario(seed)
    assume(T.shape[1] > 0 and len(np.unique(T, axis=0)) >= k)
    init = T[rng.choice(len(T), k, replace=False)] + rng.normal(0, 0.01, (k, T.shape[1]))
    weights = rng.random(len(T)) * 2 if weighted else None
    ours, theirs = fit_both(nm, T, k, init, weights, tol=tol)
    # No row tied between two centers at any step of scikit-learn's run.
    steps = [fit_both(nm, T, k, init, weights, tol=tol, max_iter=i)[1].cluster_centers_
             for i in range(1, theirs.n_iter_ + 1)]
    assume(all(_without_ties(T, centers) for centers in [init, *steps]))
    assert ours.strategy_ == "factorized"
    assert_array_equal(ours.labels_, theirs.labels_)
    # With tol=0 a stop needs a center shift of exactly zero, which rounding can reach one
    # iteration apart (seed 2487: ours at 2, scikit-learn's at 3, with the same labels).
    assert abs(ours.n_iter_ - theirs.n_iter_) <= (1 if tol == 0 else 0)
    assert_allclose(ours.cluster_centers_, theirs.cluster_centers_, rtol=1e-6, atol=1e-8)
    assert_allclose(ours.inertia_, theirs.inertia_, rtol=1e-6, atol=1e-8)
    assert_array_equal(ours.predict(nm), theirs.predict(T))
    assert_allclose(ours.transform(nm), theirs.transform(T), rtol=1e-6, atol=1e-6)
    assert_allclose(ours.score(nm, sample_weight=weights), theirs.score(T, sample_weight=weights),
                    rtol=1e-6, atol=1e-8)


def test_sparse_sources_and_outer_joins():
    nm, T, rng = scenario(21, n_target=60, sparse=True)
    init = T[:3] + 0.05
    ours, theirs = fit_both(nm, T, 3, init)
    assert_array_equal(ours.labels_, theirs.labels_)
    assert_allclose(ours.cluster_centers_, theirs.cluster_centers_, rtol=1e-6, atol=1e-8)


def test_kmeans_plusplus_same_seeds_factorized_and_joined():
    nm, T, _ = scenario(3, n_target=80)
    ours = FactorizedKMeans(4, random_state=0, strategy="factorized").fit(nm)
    joined = FactorizedKMeans(4, random_state=0, strategy="materialized").fit(nm)
    plain = FactorizedKMeans(4, random_state=0).fit(T)
    assert joined.strategy_ == plain.strategy_ == "materialized"
    for other in (joined, plain):
        assert_array_equal(ours.labels_, other.labels_)
        assert_allclose(ours.cluster_centers_, other.cluster_centers_, rtol=1e-8, atol=1e-10)
    # A seeding as good as scikit-learn's on average: same order of inertia.
    reference = KMeans(4, random_state=0).fit(T).inertia_
    assert ours.inertia_ < 1.5 * reference


def test_weights_are_repetitions():
    nm, T, rng = scenario(4, n_target=30)
    weights = rng.integers(0, 3, len(T))
    repeated_rows = np.repeat(np.arange(len(T)), weights)
    weighted = FactorizedKMeans(3, random_state=1, strategy="factorized").fit(
        nm, sample_weight=weights)
    repeated = FactorizedKMeans(3, random_state=1, strategy="factorized").fit(
        nm[repeated_rows])
    assert_allclose(weighted.predict(nm), repeated.predict(nm))
    assert_allclose(weighted.inertia_, repeated.inertia_, rtol=1e-8)


def test_n_init_keeps_the_best_and_random_init():
    nm, T, _ = scenario(5, n_target=50)
    best = FactorizedKMeans(3, init="random", n_init=5, random_state=0,
                            strategy="factorized").fit(nm)
    single = [FactorizedKMeans(3, init="random", n_init=1, random_state=s,
                               strategy="factorized").fit(nm).inertia_ for s in range(3)]
    assert best.inertia_ <= max(single) + 1e-12
    assert_allclose(best.score(nm), -best.inertia_, rtol=1e-8)


@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
def test_callable_init_gets_the_input_as_given(strategy):
    nm, T, _ = scenario(7, n_target=30)
    seen = []

    def init(X, n_clusters, random_state):
        seen.append(X)
        return T[:n_clusters]

    ours = FactorizedKMeans(3, init=init, n_init=1, strategy=strategy).fit(nm)
    assert len(seen) == 1 and seen[0] is nm
    theirs = FactorizedKMeans(3, init=T[:3], n_init=1, strategy=strategy).fit(nm)
    assert_array_equal(ours.labels_, theirs.labels_)


def test_plain_input_matches_sklearn():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((50, 3))
    init = X[:4] + 0.1
    for data in (X, sp.csr_matrix(np.where(X > 0, X, 0))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ours = FactorizedKMeans(4, init=init, n_init=1).fit(data)
        dense_init = init if isinstance(data, np.ndarray) else init
        theirs = KMeans(4, init=dense_init, n_init=1).fit(data)
        assert ours.strategy_ == "materialized"
        assert_array_equal(ours.labels_, theirs.labels_)
        assert_allclose(ours.cluster_centers_, theirs.cluster_centers_, rtol=1e-6)
        assert_allclose(ours.transform(data), theirs.transform(data), rtol=1e-6, atol=1e-8)


def test_errors():
    nm, T, _ = scenario(7, n_target=10)
    with pytest.raises(ValueError, match="n_samples=10 should be >= n_clusters=11"):
        FactorizedKMeans(11, strategy="factorized").fit(nm)
    with pytest.raises(ValueError, match="The shape of the initial centers"):
        FactorizedKMeans(2, init=np.zeros((3, T.shape[1]))).fit(nm)
    with pytest.raises(ValueError, match="Input X contains NaN"):
        FactorizedKMeans(2).fit(np.array([[np.nan, 1.0], [0.0, 1.0], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array"):
        FactorizedKMeans(2).fit(np.arange(5.0))
    model = FactorizedKMeans(2, random_state=0, strategy="factorized").fit(nm)
    with pytest.raises(ValueError, match=f"X has {T.shape[1] + 1} features, but "
                                         f"FactorizedKMeans is expecting {T.shape[1]}"):
        model.predict(np.ones((2, T.shape[1] + 1)))
    named = NormalizedMatrix.from_matrices([np.eye(4)], [np.arange(4)],
                                           feature_names=list("abcd"))
    renamed = NormalizedMatrix.from_matrices([np.eye(4)], [np.arange(4)],
                                             feature_names=list("abcz"))
    model = FactorizedKMeans(2, random_state=0, strategy="factorized").fit(named)
    assert list(model.feature_names_in_) == list("abcd")
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict(renamed)


def test_pickle_and_attributes():
    nm, _, _ = scenario(8)
    model = FactorizedKMeans(3, random_state=0, strategy="factorized").fit(nm)
    clone = pickle.loads(pickle.dumps(model))
    assert_array_equal(clone.predict(nm), model.predict(nm))
    assert model.backend_ == "cpu"
    assert model.labels_.dtype == np.int32
    assert model.get_feature_names_out().tolist() == [
        "factorizedkmeans0", "factorizedkmeans1", "factorizedkmeans2"]


def star(seed=0, n=120):
    rng = np.random.default_rng(seed)
    fact = rng.standard_normal((n, 2))
    dim = rng.standard_normal((6, 3)) * 3
    return NormalizedMatrix.from_matrices([fact, dim], [np.arange(n), rng.integers(0, 6, n)])


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_model_selection_on_a_normalized_matrix(n_jobs):
    nm = star()
    pipe = Pipeline([("scale", FactorizedStandardScaler(strategy="factorized")),
                     ("kmeans", FactorizedKMeans(random_state=0, strategy="factorized"))])
    search = GridSearchCV(pipe, {"kmeans__n_clusters": [2, 6]}, cv=3, n_jobs=n_jobs)
    search.fit(nm)
    assert search.best_params_["kmeans__n_clusters"] == 6
    scores = cross_val_score(FactorizedKMeans(3, random_state=0, strategy="factorized"), nm,
                             cv=3, n_jobs=n_jobs)
    assert scores.shape == (3,) and np.all(scores < 0)
    train, test = train_test_split(nm, random_state=0)
    assert isinstance(train, NormalizedMatrix) and isinstance(test, NormalizedMatrix)
    assert train.shape[0] + test.shape[0] == nm.shape[0]
