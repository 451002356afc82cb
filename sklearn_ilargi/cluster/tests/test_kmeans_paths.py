"""FactorizedKMeans' paths: scikit-learn's compiled iterations on plain input, the sliced
factorized loop, scikit-learn's k-means++ rule, and scikit-learn's handling of empty clusters."""

import copy
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning

from sklearn_ilargi import FactorizedKMeans, NormalizedMatrix, config_context
from sklearn_ilargi.cluster import _kmeans
from sklearn_ilargi.cluster.tests.test_kmeans import fit_both, scenario
from sklearn_ilargi.utils import TrainingMatrix


def blobs(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 3)) + 4.0 * rng.integers(0, 3, (n, 1))


def fit(X, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return FactorizedKMeans(**params).fit(X)


def assert_same_model(ours, theirs, rtol=1e-10):
    assert_array_equal(ours.labels_, theirs.labels_)
    assert ours.n_iter_ == theirs.n_iter_
    assert_allclose(ours.cluster_centers_, theirs.cluster_centers_, rtol=rtol, atol=1e-12)
    assert_allclose(ours.inertia_, theirs.inertia_, rtol=rtol)


@pytest.mark.parametrize("algorithm", ["lloyd", "elkan"])
@pytest.mark.parametrize("sparse", [False, True])
def test_plain_input_runs_scikit_learns_compiled_iterations(monkeypatch, algorithm, sparse):
    X = blobs()
    X = sp.csr_matrix(np.where(X > 3, X, 0.0)) if sparse else X
    init = X[:3].toarray() if sparse else X[:3]
    runs = []
    compiled = {"lloyd": _kmeans._kmeans_single_lloyd, "elkan": _kmeans._kmeans_single_elkan}
    name = f"_kmeans_single_{algorithm}"
    monkeypatch.setattr(_kmeans, name, lambda *a, **k: runs.append(1) or compiled[algorithm](
        *a, **k))
    ours = fit(X, n_clusters=3, init=init, n_init=1, algorithm=algorithm)
    theirs = KMeans(3, init=init, n_init=1, algorithm=algorithm).fit(X)
    assert runs == [1] and ours.strategy_ == "materialized"
    assert_same_model(ours, theirs)


def test_verbose_runs_the_loop_with_the_compiled_iterations_result(capsys):
    X = blobs(seed=1)
    init = X[:4] + 0.1
    quiet = fit(X, n_clusters=4, init=init, n_init=1, tol=0.0)
    loud = fit(X, n_clusters=4, init=init, n_init=1, tol=0.0, verbose=1)
    assert "FactorizedKMeans: iteration 1/300" in capsys.readouterr().out
    assert_same_model(loud, quiet)


def test_the_slices_and_threads_do_not_change_the_factorized_fit():
    nm, _, _ = scenario(11, n_target=120)
    params = dict(n_clusters=3, random_state=0, strategy="factorized")
    default = fit(nm, **params)
    with config_context(slice_working_memory=1e-4, parallel_slice_rows=0):
        sliced = fit(nm, **params)
    assert_same_model(sliced, default, rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_sums_of_the_moved_samples_alone_give_the_sums_of_all(weighted):
    nm, T, rng = scenario(13, n_target=150)
    weights = rng.random(len(T)) + 0.5 if weighted else None
    init = T[:3] + 0.01
    params = dict(n_clusters=3, init=init, n_init=1, tol=0.0, strategy="factorized")
    with config_context(incremental_sums_max_share=0.0):
        every_time = FactorizedKMeans(**params).fit(nm, sample_weight=weights)
    with config_context(incremental_sums_max_share=1.0):
        moved_only = FactorizedKMeans(**params).fit(nm, sample_weight=weights)
    assert every_time.n_iter_ > 2  # the sums were updated from moved samples some times
    assert_same_model(moved_only, every_time, rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_moved_samples_update_the_sums_and_weights_to_those_of_all(weighted):
    # Cluster 2 loses every sample on the second step: its weight must be exactly 0 there,
    # as the empty clusters are found by it.
    nm, T, rng = scenario(14, n_target=90)
    weights = rng.random(len(T)) + 0.5 if weighted else None
    matrix = TrainingMatrix(nm)
    first = rng.integers(0, 4, len(T)).astype(np.int32)
    second = first.copy()
    second[rng.random(len(T)) < 0.2] = 0
    second[second == 2] = 3
    steps = [(first, None), (second, np.flatnonzero(second != first))]
    with config_context(incremental_sums_max_share=1.0):
        previous = None
        for labels, moved in steps:
            previous = _kmeans._cluster_sums(matrix, labels, weights, 4, previous, moved)
            expected = np.zeros((4, T.shape[1]))
            np.add.at(expected, labels, T if weights is None else T * weights[:, None])
            counts = np.bincount(labels, weights=weights, minlength=4)
            assert_allclose(previous.sums, expected, rtol=1e-12, atol=1e-12)
            assert_allclose(previous.weights, counts, rtol=1e-12)
            assert_array_equal(previous.labels, labels)
    assert previous.weights[2] == 0
    if weights is None:
        assert previous.weights.dtype.kind == "i"


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("normalized", [False, True])
def test_kmeans_plusplus_is_scikit_learns_along_the_canonical_order(weighted, normalized):
    nm, T, rng = scenario(12, n_target=60)
    weights = rng.random(len(T)) * 2 if weighted else np.ones(len(T))
    matrix, _ = _kmeans._solver_matrix(nm if normalized else T, weights)
    random_state = np.random.RandomState(0)
    order = _kmeans._canonical_order(matrix, random_state)
    theirs_state = copy.deepcopy(random_state)
    ours = _kmeans._kmeans_plusplus(matrix, weights, 5, random_state, order)
    X = matrix.X.toarray() if normalized else matrix.X
    theirs, indices = kmeans_plusplus(X[order], 5, sample_weight=weights[order],
                                      x_squared_norms=matrix.row_norms_squared()[order],
                                      random_state=theirs_state)
    assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    assert len(set(indices)) == 5


def test_the_seeds_do_not_depend_on_the_order_of_the_samples():
    X = blobs(seed=2)
    shuffled = np.random.default_rng(3).permutation(len(X))
    a = fit(X, n_clusters=4, random_state=0, max_iter=1)
    b = fit(X[shuffled], n_clusters=4, random_state=0, max_iter=1)
    assert_allclose(np.sort(a.cluster_centers_, axis=0), np.sort(b.cluster_centers_, axis=0),
                    rtol=1e-12)


#: Center 2 starts empty; the farthest sample, alone in its cluster, moves to found it and
#: leaves that cluster without weight: it then takes the heaviest cluster's center, its mean
#: where the heaviest comes first, its sums (scikit-learn's loop reads them so) where not.
DRAINED = {"heaviest first": [[0.0], [9.0], [100.0]], "heaviest last": [[9.0], [0.0], [100.0]]}


@pytest.mark.parametrize("init", DRAINED.values(), ids=DRAINED)
@pytest.mark.parametrize("max_iter", [1, 2, 10])
def test_a_drained_cluster_is_placed_as_scikit_learn_places_it(init, max_iter):
    X = np.array([[0.0], [0.1], [-0.1], [5.0]])
    nm = NormalizedMatrix.from_matrices([X], [np.arange(4)])
    theirs = KMeans(3, init=np.array(init), n_init=1, max_iter=max_iter).fit(X)
    for data, strategy in [(nm, "factorized"), (X, "materialized")]:
        ours = fit(data, n_clusters=3, init=np.array(init), n_init=1, max_iter=max_iter,
                   verbose=int(strategy == "materialized"), strategy=strategy)
        assert_same_model(ours, theirs)


def test_samples_on_their_centers_found_no_empty_cluster():
    X = np.array([[0.0], [0.0], [1.0], [1.0]])
    init = np.array([[0.0], [1.0], [5.0]])
    theirs = KMeans(3, init=init, n_init=1).fit(X)
    nm = NormalizedMatrix.from_matrices([X], [np.arange(4)])
    ours = fit(nm, n_clusters=3, init=init, n_init=1, strategy="factorized")
    assert_same_model(ours, theirs)


def test_ties_among_the_farthest_samples_go_as_in_scikit_learn():
    # Discrete data: the samples farthest from their centers tie exactly, in two clusters.
    nm, T, rng = scenario(1134)
    init = T[rng.choice(len(T), 3, replace=False)] + rng.normal(0, 0.01, (3, T.shape[1]))
    ours, theirs = fit_both(nm, T, 3, init, tol=0.0)
    assert_array_equal(ours.labels_, theirs.labels_)
    assert_allclose(ours.cluster_centers_, theirs.cluster_centers_, rtol=1e-6, atol=1e-8)
