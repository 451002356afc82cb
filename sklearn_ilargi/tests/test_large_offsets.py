"""Columns whose mean is large against their spread: every estimator that centers, on every
strategy, gives scikit-learn's model on the join (``rtol=1e-6``) at offsets up to 1e9.

The columns are ``offset + N(0, 1)``. A large offset goes where the join fills every row of a
column (the fact table, an inner dimension, a column that overlapping sources fill between
them): there it stays an offset. A column with missing rows (a left or outer join, a sparse
source) gets ``5 + N(0, 1)`` where it has values: its zeros make any offset part of its
spread, and a spread of 1e9 beside spreads of 1 is a badly scaled problem that no method that
squares the data resolves to 1e-6 (scikit-learn's ``Ridge(solver="cholesky")`` and
``PCA(svd_solver="covariance_eigh")`` included). Those columns still test the centering of the
rows that a source misses (``ops`` tests that part at every offset).

scikit-learn computes in float64 too; its references are the accurate ones: ``lstsq`` on the
centered join, Ridge's Cholesky on the centered join, the scaler's two-pass variance,
``PCA(svd_solver="full")`` and Lloyd on the centered join.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.preprocessing import StandardScaler

from sklearn_ilargi import (
    FactorizedKMeans,
    FactorizedLinearRegression,
    FactorizedPCA,
    FactorizedRidge,
    FactorizedStandardScaler,
    NormalizedMatrix,
)
from sklearn_ilargi.tests._scenarios import sources_as_given

STRATEGIES = ("factorized", "materialized")
RTOL = 1e-6
N_ROWS = 120
MODERATE = 5.0


def offset_star(seed, offset, join, sparse, overlap, gather_thin):
    """A star whose fully filled columns sit at ``offset``; see the module docstring."""
    rng = np.random.default_rng(seed)
    n_fact = N_ROWS if join != "outer" else N_ROWS - 20  # outer: 20 rows of the dimension only
    fact_map = np.arange(N_ROWS)
    fact_map[n_fact:] = -1
    fact_offset = offset if join != "outer" else MODERATE
    sources = [fact_offset + rng.standard_normal((n_fact, 2))]
    row_maps = [fact_map]
    dim_map = rng.integers(0, 25, N_ROWS)
    if join == "left":
        dim_map[rng.random(N_ROWS) < 0.25] = -1
    dim_offset = offset if join == "inner" else MODERATE
    sources.append(dim_offset + rng.standard_normal((25, 2)))
    row_maps.append(dim_map)
    if sparse:
        values = MODERATE + rng.standard_normal((20, 3))
        values[rng.random(values.shape) < 0.6] = 0
        sources.append(sp.csr_matrix(values))
        row_maps.append(rng.integers(0, 20, N_ROWS))
    if overlap:
        # Two hospitals record a patient's weight: the first for the first two thirds of the
        # rows (with a column of its own), the second from the last two thirds; together they
        # fill every row of the shared column.
        first = np.where(np.arange(N_ROWS) < 2 * N_ROWS // 3, np.arange(N_ROWS), -1)
        second = np.where(np.arange(N_ROWS) >= N_ROWS // 3, np.arange(N_ROWS), -1)
        sources.append(np.column_stack([offset + rng.standard_normal(N_ROWS),
                                        MODERATE + rng.standard_normal(N_ROWS)]))
        sources.append(offset + rng.standard_normal((N_ROWS, 1)))
        row_maps += [first, second]
    widths = np.cumsum([0] + [s.shape[1] for s in sources])
    column_maps = [np.arange(lo, hi) for lo, hi in zip(widths[:-1], widths[1:])]
    if overlap:
        column_maps[-1] = np.array([column_maps[-2][0]])  # the shared column
    settings = {} if gather_thin else {"gathered_values_per_row": 0}
    with sources_as_given(**settings):
        nm = NormalizedMatrix.from_matrices(sources, row_maps, column_maps)
    return nm, nm.toarray(), rng


CASES = dict(
    seed=st.integers(0, 2**32 - 1),
    offset=st.sampled_from([0.0, 1e3, 1e6, 1e9]),
    join=st.sampled_from(["inner", "left", "outer"]),
    sparse=st.booleans(),
    overlap=st.booleans(),
    gather_thin=st.booleans(),
    weighted=st.booleans(),
)


@settings(max_examples=20, deadline=None)
@given(**CASES)
def test_least_squares_coefficients(seed, offset, join, sparse, overlap, gather_thin,
                                    weighted):
    nm, T, rng = offset_star(seed, offset, join, sparse, overlap, gather_thin)
    y = T @ rng.standard_normal(T.shape[1]) + 0.1 * rng.standard_normal(len(T))
    weights = rng.random(len(T)) + 0.5 if weighted else None
    exact = LinearRegression().fit(T, y, sample_weight=weights)
    ridge = Ridge(alpha=1.0).fit(T, y, sample_weight=weights)
    for strategy in STRATEGIES:
        ours = FactorizedLinearRegression(strategy=strategy).fit(nm, y, sample_weight=weights)
        assert ours.strategy_ == strategy
        assert_allclose(ours.coef_, exact.coef_, rtol=RTOL)
        assert_allclose(ours.intercept_, exact.intercept_, rtol=RTOL)
        ours = FactorizedRidge(alpha=1.0, strategy=strategy).fit(nm, y, sample_weight=weights)
        assert_allclose(ours.coef_, ridge.coef_, rtol=RTOL)


@settings(max_examples=20, deadline=None)
@given(**CASES)
def test_scales_and_explained_variance(seed, offset, join, sparse, overlap, gather_thin,
                                       weighted):
    nm, T, rng = offset_star(seed, offset, join, sparse, overlap, gather_thin)
    weights = rng.random(len(T)) + 0.5 if weighted else None
    scaler = StandardScaler().fit(T, sample_weight=weights)
    pca = PCA(svd_solver="full").fit(T)
    for strategy in STRATEGIES:
        ours = FactorizedStandardScaler(strategy=strategy).fit(nm, sample_weight=weights)
        assert ours.strategy_ == strategy
        assert_allclose(ours.scale_, scaler.scale_, rtol=RTOL)
        assert_allclose(ours.mean_, scaler.mean_, rtol=1e-12)
        ours = FactorizedPCA(strategy=strategy).fit(nm)
        assert_allclose(ours.explained_variance_, pca.explained_variance_, rtol=RTOL)


@settings(max_examples=20, deadline=None)
@given(**CASES)
def test_kmeans_inertia_and_labels(seed, offset, join, sparse, overlap, gather_thin,
                                   weighted):
    nm, T, rng = offset_star(seed, offset, join, sparse, overlap, gather_thin)
    weights = rng.random(len(T)) + 0.5 if weighted else None
    init = T[:3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        theirs = KMeans(3, init=init, n_init=1).fit(T, sample_weight=weights)
        for strategy in STRATEGIES:
            ours = FactorizedKMeans(3, init=init, strategy=strategy).fit(
                nm, sample_weight=weights)
            assert ours.strategy_ == strategy
            assert_array_equal(ours.labels_, theirs.labels_)
            assert_allclose(ours.inertia_, theirs.inertia_, rtol=RTOL)
            assert_allclose(ours.cluster_centers_, theirs.cluster_centers_, rtol=1e-9,
                            atol=1e-9)


# ---------------------------------------------------------------------- the cases
def large_feature(offset, n_rows=2000):
    """A fact table with a feature ``offset +- 1`` and a dimension of ordinary ones."""
    rng = np.random.default_rng(0)
    fact = np.column_stack([offset + rng.standard_normal(n_rows), rng.standard_normal(n_rows)])
    dim = rng.standard_normal((40, 2))
    nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(n_rows),
                                                      rng.integers(0, 40, n_rows)])
    return nm, nm.materialize(), rng


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_feature_of_1e7_plus_minus_1_keeps_its_coefficient(strategy):
    nm, T, rng = large_feature(1e7)
    y = 3 * (T[:, 0] - 1e7) + T[:, 1:] @ [1.0, -2.0, 0.5] + 0.01 * rng.standard_normal(len(T))
    model = FactorizedLinearRegression(strategy=strategy).fit(nm, y)
    assert_allclose(model.coef_, LinearRegression().fit(T, y).coef_, rtol=1e-9)
    assert abs(model.coef_[0] - 3) < 1e-3
    assert model.score(nm, y) > 0.999


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_scale_of_a_1e6_plus_minus_1_column_at_100k_rows(strategy):
    nm, T, _ = large_feature(1e6, n_rows=100_000)
    scaler = FactorizedStandardScaler(strategy=strategy).fit(nm)
    assert_allclose(scaler.scale_, StandardScaler().fit(T).scale_, rtol=1e-9)
    assert abs(scaler.scale_[0] - 1) < 0.01


def test_constant_columns_follow_scikit_learns_rule():
    """A column of one value (even one far from 0) is constant; so is one whose variance is
    within the rounding of scikit-learn's bound; one of 1e6 +- 1e-3 is not."""
    rng = np.random.default_rng(3)
    fact = np.column_stack([np.full(500, 1e8), 1e6 + 1e-3 * rng.standard_normal(500),
                            rng.standard_normal(500)])
    dim = np.column_stack([np.full(6, -2.5), rng.standard_normal(6)])
    nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(500), rng.integers(0, 6, 500)])
    scaler = FactorizedStandardScaler(strategy="factorized").fit(nm)
    reference = StandardScaler().fit(nm.materialize())
    assert_array_equal(scaler.scale_ == 1.0, [True, False, False, True, False])
    assert_allclose(scaler.scale_, reference.scale_, rtol=1e-9)


def test_kmeans_at_an_offset_of_1e8_labels_as_scikit_learn():
    nm, T, _ = large_feature(1e8, n_rows=1000)
    init = T[:4]
    theirs = KMeans(4, init=init, n_init=1).fit(T)
    ours = FactorizedKMeans(4, init=init, strategy="factorized").fit(nm)
    assert_array_equal(ours.labels_, theirs.labels_)
    assert_allclose(ours.inertia_, theirs.inertia_, rtol=1e-9)


def test_pca_explained_variance_at_an_offset_of_1e7():
    nm, T, _ = large_feature(1e7)
    ours = FactorizedPCA(strategy="factorized").fit(nm)
    assert_allclose(ours.explained_variance_,
                    PCA(svd_solver="full").fit(T).explained_variance_, rtol=1e-9)
