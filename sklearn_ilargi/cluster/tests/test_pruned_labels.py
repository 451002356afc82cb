"""The labels that an exact bound takes from the dimension rows alone are the full argmin's."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from sklearn_ilargi import FactorizedKMeans, NormalizedMatrix, config_context, ops
from sklearn_ilargi.ops import _sliced
from sklearn_ilargi.ops._pruned import Pruning

ALWAYS, NEVER = 0.0, 2.0


def star(rng, *, n_dim=30, tuple_ratio=8, c_fact=2, c_dim=4, spread=5.0, offset=0.0,
         sparse=False, missing=False, discrete=False, float32=False, fact_offset=True):
    """A fact table and one dimension whose rows come in a few groups ``spread`` apart;
    ``offset`` added to the dimension (and, with ``fact_offset``, to the fact table)."""
    n = n_dim * tuple_ratio
    rows = rng.integers(0, n_dim, n)
    rows[: n_dim] = np.arange(n_dim)  # every dimension row is used
    if missing:
        rows[rng.random(n) < 0.2] = -1
    fact = rng.standard_normal((n, c_fact)) + (offset if fact_offset else 0.0)
    if sparse:  # one-hot categories
        dim = sp.csr_matrix(np.eye(c_dim)[rng.integers(0, c_dim, n_dim)] * spread)
    else:
        dim = spread * rng.integers(0, 3, (n_dim, 1)) + rng.standard_normal((n_dim, c_dim))
        dim = dim + offset
    if discrete:
        fact = np.round(fact)
        dim = dim if sparse else np.round(dim)
    if float32:
        fact = fact.astype(np.float32)
        dim = dim.astype(np.float32)
    return NormalizedMatrix.from_matrices([fact, dim], [np.arange(n), rows])


def argmin(nm, centers, min_share, values=True, run_rows=1 << 17):
    W = (-2.0 * centers.T).astype(nm.dtype)
    bias = (centers**2).sum(axis=1).astype(nm.dtype)
    with config_context(pruned_argmin_min_share=min_share, slice_working_memory=0.01,
                        parallel_slice_rows=0,  # many slices, on the threads
                        pruned_slice_rows=run_rows):
        return ops.argmin_of_product(nm, W, bias, values=values)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 6),
       spread=st.sampled_from([0.0, 1.0, 5.0, 50.0]), offset=st.sampled_from([0.0, 1e6]),
       sparse=st.booleans(), missing=st.booleans(), discrete=st.booleans(),
       duplicate=st.booleans(), float32=st.booleans(), fact_offset=st.booleans(),
       run_rows=st.sampled_from([1, 60, 1 << 17]))
def test_the_bound_keeps_the_full_argmin(seed, k, spread, offset, sparse, missing, discrete,
                                         duplicate, float32, fact_offset, run_rows):
    # Offsets of 1e6 on the dimension alone leave the bound within rounding of its gaps.
    rng = np.random.default_rng(seed)
    nm = star(rng, spread=spread, offset=offset, sparse=sparse, missing=missing,
              discrete=discrete, float32=float32, fact_offset=fact_offset)
    T = nm.toarray().astype(np.float64)
    centers = T[rng.choice(len(T), k, replace=False)]
    if duplicate and k > 1:  # a tie between two centers for every sample
        centers[-1] = centers[0]
    full = argmin(nm, centers, NEVER)
    assert_array_equal(argmin(nm, centers, ALWAYS)[1], full[1])
    # The bound over runs of slices (one slice each, several, all), on the threads.
    labels, smallest = argmin(nm, centers, ALWAYS, values=False, run_rows=run_rows)
    assert smallest is None
    assert_array_equal(labels, full[0])
    # A bound that decides too few of a run's rows computes its slices in full.
    assert_array_equal(argmin(nm, centers, 0.9, values=False, run_rows=run_rows)[0], full[0])
    if duplicate and k > 1:
        assert not np.any(full[0] == k - 1)  # the tie goes to the lowest index


def test_the_bound_labels_most_samples_of_clusters_that_the_dimension_separates():
    rng = np.random.default_rng(0)
    nm = star(rng, n_dim=60, spread=20.0)
    T = nm.toarray()
    centers = np.array([T[np.round(T[:, 2] / 20) == g].mean(axis=0) for g in range(3)])
    W, bias = -2.0 * centers.T, (centers**2).sum(axis=1)
    slices = _sliced._ProductSlices.of(nm, W, bias)
    pruning = Pruning.of(slices.be, slices.direct, slices.gathered, slices.bias, slices.dtype)
    assert pruning.decided(0, len(T), {}).mean() > 0.9
    expected = ((T[:, None, :] - centers[None]) ** 2).sum(axis=2).argmin(axis=1)
    assert_array_equal(argmin(nm, centers, ALWAYS, values=False)[0], expected)


@pytest.mark.parametrize("run_rows", [1, 300, 1 << 17],
                         ids=["a slice a run", "two slices a run", "one run"])
def test_runs_the_bound_does_not_decide_are_computed_in_full(run_rows):
    """The last rows' fact parts are too long for the bound (slices of 145 rows here): their
    runs fall back to the full argmin a slice at a time, the others take the bound's labels
    (a run of them all, decided for 70% of its rows, takes the bound's labels too)."""
    rng = np.random.default_rng(3)
    nm = star(rng, n_dim=30, tuple_ratio=40, spread=50.0)
    fact = nm.blocks[0].source.copy()
    fact[:840] *= 0.01
    fact[840:] *= 1e4
    nm = NormalizedMatrix.from_matrices([fact, nm.blocks[1].source],
                                        [np.arange(len(fact)), nm.blocks[1].row_map.indices])
    T = nm.toarray()
    groups = np.round(T[:, 2] / 50)
    centers = np.array([T[groups == g].mean(axis=0) for g in np.unique(groups)])
    expected = ((T[:, None, :] - centers[None]) ** 2).sum(axis=2).argmin(axis=1)
    assert_array_equal(argmin(nm, centers, 0.6, values=False, run_rows=run_rows)[0], expected)


def test_the_bound_does_not_apply_to_a_left_join_or_two_dimensions():
    rng = np.random.default_rng(1)
    for nm in (star(rng, missing=True), _two_dimensions(rng)):
        centers = nm.toarray()[:3]
        slices = _sliced._ProductSlices.of(nm, -2.0 * centers.T, (centers**2).sum(axis=1))
        assert Pruning.of(slices.be, slices.direct, slices.gathered, slices.bias,
                          slices.dtype) is None


def _two_dimensions(rng):
    n = 50
    return NormalizedMatrix.from_matrices(
        [rng.standard_normal((n, 2)), rng.standard_normal((5, 6)), rng.standard_normal((7, 6))],
        [np.arange(n), rng.integers(0, 5, n), rng.integers(0, 7, n)])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), weighted=st.booleans(),
       offset=st.sampled_from([0.0, 1e6]))
def test_factorized_kmeans_with_the_bound_is_scikit_learns(seed, weighted, offset):
    rng = np.random.default_rng(seed)
    nm = star(rng, spread=20.0, offset=offset, tuple_ratio=20)
    T = nm.toarray()
    weights = rng.random(len(T)) + 0.5 if weighted else None
    init = T[rng.choice(len(T), 3, replace=False)]
    params = dict(n_clusters=3, init=init, n_init=1, tol=0.0, max_iter=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with config_context(pruned_argmin_min_share=ALWAYS):
            ours = FactorizedKMeans(strategy="factorized", **params).fit(
                nm, sample_weight=weights)
        with config_context(pruned_argmin_min_share=NEVER):
            without = FactorizedKMeans(strategy="factorized", **params).fit(
                nm, sample_weight=weights)
        theirs = KMeans(algorithm="lloyd", **params).fit(T, sample_weight=weights)
    assert_array_equal(ours.labels_, without.labels_)
    assert_array_equal(ours.cluster_centers_, without.cluster_centers_)
    assert ours.inertia_ == without.inertia_ and ours.n_iter_ == without.n_iter_
    assert_array_equal(ours.labels_, theirs.labels_)
    assert ours.n_iter_ == theirs.n_iter_
    assert_allclose(ours.cluster_centers_, theirs.cluster_centers_, rtol=1e-9, atol=1e-6)
    assert_allclose(ours.inertia_, theirs.inertia_, rtol=1e-9)
