"""centered_moments: over Dask partitions, in one pass, the in-memory moments' numbers."""

import collections

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

dask = pytest.importorskip("dask", reason="the distributed extra (dask) is not installed")
da = pytest.importorskip("dask.array", reason="the distributed extra (dask) is not installed")

from sklearn_ilargi import (  # noqa: E402
    FactorizedLinearRegression, FactorizedPCA, FactorizedRidge, FactorizedStandardScaler,
    NormalizedMatrix)
from sklearn_ilargi.tests._scenarios import (  # noqa: E402
    build, partitioned, random_partitions, random_scenario, reference_matrix,
    sources_as_given)
from sklearn_ilargi.utils import TrainingMatrix  # noqa: E402
from sklearn_ilargi.utils._moments import centered_moments  # noqa: E402


def offset_scenario(rng, offset):
    """A random scenario whose dense sources are offset by ``offset``."""
    sources, row_maps, column_maps, n_columns = random_scenario(
        rng, n_target=int(rng.integers(1, 40)))
    sources = [s if sp.issparse(s) else s + offset for s in sources]
    return sources, row_maps, column_maps, n_columns


def close(got, expected, rtol=1e-10):
    """Equal to ``rtol`` of the largest magnitude."""
    scale = max(np.abs(expected).max(initial=0.0), 1.0)
    assert_allclose(got, np.asarray(expected, dtype=np.float64), rtol=0, atol=rtol * scale)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), offset=st.sampled_from([0.0, 1e6, -3e8]),
       unit_weights=st.booleans())
def test_partitioned_moments_equal_the_in_memory_ones(seed, offset, unit_weights):
    """Inner, left, outer, many-to-many and snowflake joins with offsets, in random partitions
    (some empty, some whose rows all weigh 0), or with unit weights (None): the means, the centered gram (or its diagonal)
    and cross-products and the constant columns are those of the joined matrix."""
    rng = np.random.default_rng(seed)
    scenario = offset_scenario(rng, offset)
    T = reference_matrix(*scenario)
    n = T.shape[0]
    Y = rng.standard_normal((n, 2)) + [offset, 1.0]
    weights = rng.random(n) + 0.1
    start = int(rng.integers(0, n))
    weights[start:start + int(rng.integers(0, n))] = 0.0
    weights[start - 1] = 1.0  # one row at least weighs
    if unit_weights:
        weights[:] = 1.0
    # The reference in extended precision: summing the squares of 1e6 + x in float64 keeps
    # none of x, and centering keeps all of it.
    T_, Y_, w_ = (a.astype(np.longdouble) for a in (T, Y, weights))
    x_mean, y_mean = w_ @ T_ / w_.sum(), w_ @ Y_ / w_.sum()
    Tc, Yc = T_ - x_mean, Y_ - y_mean
    with dask.config.set(scheduler="synchronous"), sources_as_given():
        for matrix in (build(scenario), partitioned(scenario, random_partitions(rng, n))):
            given_weights = None if unit_weights else weights
            moments = centered_moments(TrainingMatrix(matrix), Y, given_weights)
            close(moments.x_mean, x_mean, 1e-15)
            close(moments.y_mean, y_mean, 1e-15)
            gram = Tc.T @ (w_[:, None] * Tc)
            close(moments.gram, gram)
            close(moments.cross, Tc.T @ (w_[:, None] * Yc))
            diagonal = centered_moments(TrainingMatrix(matrix), Y, given_weights,
                                        diagonal=True)
            close(diagonal.gram, np.diag(gram))
            assert_array_equal(moments.constant(), T.min(axis=0) == T.max(axis=0))


def test_without_centering_the_sums_are_plain():
    rng = np.random.default_rng(4)
    scenario = offset_scenario(rng, 10.0)
    T = reference_matrix(*scenario)
    n = T.shape[0]
    Y, weights = rng.standard_normal((n, 1)), rng.random(n)
    with dask.config.set(scheduler="synchronous"), sources_as_given():
        moments = centered_moments(
            TrainingMatrix(partitioned(scenario, random_partitions(rng, n))), Y, weights,
            center=False)
    assert not moments.x_mean.any() and not moments.y_mean.any()
    close(moments.gram, T.T @ (weights[:, None] * T))
    close(moments.cross, T.T @ (weights[:, None] * Y))
    assert moments.constant is None


@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
@pytest.mark.parametrize("estimator", [
    FactorizedLinearRegression(), FactorizedRidge(alpha=0.1), FactorizedPCA(n_components=2),
    FactorizedStandardScaler(),
], ids=lambda e: type(e).__name__)
def test_closed_forms_read_each_partition_once(estimator, strategy):
    """A closed-form fit reads each partition once, and one partition (the largest) twice
    more: the dispatcher's look at it and the pilot of the means."""
    reads = collections.Counter()
    rng = np.random.default_rng(0)
    fact = rng.standard_normal((90, 3)) + 1e6
    dimension = rng.standard_normal((6, 2))

    def load(i):
        reads[i] += 1
        return fact[30 * i:30 * (i + 1)]

    blocks = [da.from_delayed(dask.delayed(load, pure=False)(i), shape=(30, 3), dtype=float)
              for i in range(3)]
    with dask.config.set(scheduler="synchronous"):
        X = NormalizedMatrix.from_matrices([da.concatenate(blocks), dimension],
                                           [da.arange(90, chunks=30), rng.integers(0, 6, 90)])
        estimator.set_params(strategy=strategy).fit(X, rng.standard_normal(90))
    assert sorted(reads.values()) == [1, 1, 3]
