"""FactorizedStandardScaler: same statistics as scikit-learn, output still factorized."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import sklearn_ilargi.ops
from sklearn_ilargi.tests._scenarios import build, random_scenario
from sklearn_ilargi import (
    FactorizedKMeans,
    FactorizedPCA,
    FactorizedStandardScaler,
    NormalizedMatrix,
)

TOL = dict(rtol=1e-8, atol=1e-10)


def scenario_and_reference(seed, n_target=30, **kwargs):
    rng = np.random.default_rng(seed)
    nm = build(random_scenario(rng, n_target=n_target, **kwargs),
               gather_thin=seed % 2 == 1)
    return nm, nm.toarray(), rng


def assert_same_scaler(ours, theirs):
    for name in ("mean_", "var_", "scale_"):
        a, b = getattr(ours, name), getattr(theirs, name)
        if b is None:
            assert a is None, name
        else:
            assert_allclose(a, b, err_msg=name, **TOL)
    assert_allclose(ours.n_samples_seen_, theirs.n_samples_seen_)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), with_mean=st.booleans(), with_std=st.booleans(),
       weighted=st.booleans())
def test_matches_sklearn_on_the_join(seed, with_mean, with_std, weighted):
    nm, T, rng = scenario_and_reference(seed)
    assume(T.shape[1] > 0)  # a scaler needs a feature (scikit-learn's refuses none)
    weights = rng.random(nm.shape[0]) * 2 if weighted else None
    ours = FactorizedStandardScaler(with_mean=with_mean, with_std=with_std,
                                    strategy="factorized").fit(nm, sample_weight=weights)
    theirs = StandardScaler(with_mean=with_mean, with_std=with_std).fit(
        T, sample_weight=weights)
    assert ours.strategy_ == "factorized"
    assert_same_scaler(ours, theirs)
    Z = ours.transform(nm)
    assert isinstance(Z, NormalizedMatrix)
    assert_allclose(Z.toarray(), theirs.transform(T), **TOL)
    back = ours.inverse_transform(Z)
    assert isinstance(back, NormalizedMatrix)
    assert_allclose(back.toarray(), T, rtol=1e-8, atol=1e-8)


def test_large_offset_keeps_precision():
    rng = np.random.default_rng(0)
    fact = rng.standard_normal((50, 2)) + 1e3
    dim = rng.standard_normal((5, 2)) - 1e3
    nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(50), rng.integers(-1, 5, 50)])
    ours = FactorizedStandardScaler(strategy="factorized").fit(nm)
    theirs = StandardScaler().fit(nm.materialize())
    assert_allclose(ours.var_, theirs.var_, rtol=1e-7)


def test_partial_fit_over_row_batches_matches_fit():
    nm, T, _ = scenario_and_reference(3, n_target=40, sparse=True)
    scaler = FactorizedStandardScaler(strategy="factorized")
    for batch in np.array_split(np.arange(40), 3):
        scaler.partial_fit(nm[batch])
    assert_same_scaler(scaler, StandardScaler().fit(T))


def test_materialized_strategy_gives_the_same_and_keeps_names():
    fact = np.arange(12.0).reshape(6, 2)
    dim = np.array([[1.0], [5.0]])
    nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(6), [0, 1, 1, 0, -1, 1]],
                                        feature_names=["a", "b", "c"])
    joined = FactorizedStandardScaler(strategy="materialized").fit(nm)
    factorized = FactorizedStandardScaler(strategy="factorized").fit(nm)
    assert joined.strategy_ == "materialized"
    assert list(joined.feature_names_in_) == ["a", "b", "c"]
    assert list(factorized.feature_names_in_) == ["a", "b", "c"]
    assert_same_scaler(factorized, joined)


@pytest.mark.parametrize("sparse", [False, True])
def test_plain_input_is_sklearn(sparse):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20, 4))
    X[X < 0] = 0
    X = sp.csr_matrix(X) if sparse else X
    ours = FactorizedStandardScaler(with_mean=not sparse).fit(X)
    theirs = StandardScaler(with_mean=not sparse).fit(X)
    assert ours.strategy_ == "materialized"
    assert_same_scaler(ours, theirs)
    out, ref = ours.transform(X), theirs.transform(X)
    assert type(out) is type(ref)
    assert_allclose(out.toarray() if sparse else out, ref.toarray() if sparse else ref)


def test_sparse_plain_input_with_mean_raises_like_sklearn():
    X = sp.csr_matrix(np.eye(3))
    with pytest.raises(ValueError, match="Cannot center sparse matrices"):
        FactorizedStandardScaler().fit(X)


def test_sparse_sources_are_centered_exactly():
    nm, T, _ = scenario_and_reference(5, sparse=True)
    Z = FactorizedStandardScaler(strategy="factorized").fit_transform(nm)
    assert_allclose(Z.toarray(), StandardScaler().fit_transform(T), **TOL)


def test_errors_at_transform():
    fact = np.arange(8.0).reshape(4, 2)
    dim = np.array([[1.0], [2.0]])
    nm = NormalizedMatrix.from_matrices([fact, dim], [np.arange(4), [0, 1, 0, 1]],
                                        feature_names=["a", "b", "c"])
    scaler = FactorizedStandardScaler(strategy="factorized").fit(nm)
    narrower = NormalizedMatrix.from_matrices([fact], [np.arange(4)])
    with pytest.raises(ValueError, match="X has 2 features, but FactorizedStandardScaler is "
                                         "expecting 3 features as input"):
        scaler.transform(narrower)
    renamed = NormalizedMatrix.from_matrices([fact, dim], [np.arange(4), [0, 1, 0, 1]],
                                             feature_names=["a", "b", "z"])
    with pytest.raises(ValueError, match="feature names should match"):
        scaler.transform(renamed)
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array"):
        scaler.transform(np.ones(3))
    with pytest.raises(ValueError, match="Input X contains infinity"):
        scaler.transform(np.array([[np.inf, 1.0, 2.0]]))


class MaterializeCounter:
    """Records the shape of every matrix joined by ``ops.materialize``."""

    def __init__(self, monkeypatch):
        self.shapes = []
        original = sklearn_ilargi.ops.materialize

        def counting(nm, *args, **kwargs):
            self.shapes.append(nm.shape)
            return original(nm, *args, **kwargs)

        monkeypatch.setattr(sklearn_ilargi.ops, "materialize", counting)


def star(seed=0, n=300):
    rng = np.random.default_rng(seed)
    fact = rng.standard_normal((n, 2))
    dims = [rng.standard_normal((10, 3)), sp.random(8, 4, density=0.5, random_state=seed,
                                                      format="csr")]
    maps = [np.arange(n), rng.integers(0, 10, n), rng.integers(-1, 8, n)]
    return NormalizedMatrix.from_matrices([fact] + dims, maps)


def test_pipeline_scaler_pca_never_materializes(monkeypatch):
    nm = star()
    reference = Pipeline([("scale", StandardScaler()), ("pca", FactorizedPCA(3))]).fit(
        nm.materialize())
    counter = MaterializeCounter(monkeypatch)
    pipe = Pipeline([("scale", FactorizedStandardScaler(strategy="factorized")),
                     ("pca", FactorizedPCA(3, strategy="factorized"))])
    out = pipe.fit(nm).transform(nm)
    assert counter.shapes == []
    assert pipe[-1].strategy_ == "factorized"
    assert_allclose(out, reference.transform(nm.materialize()), rtol=1e-8, atol=1e-9)


def test_pipeline_scaler_kmeans_joins_only_seed_rows(monkeypatch):
    nm = star(1)
    counter = MaterializeCounter(monkeypatch)
    pipe = Pipeline([("scale", FactorizedStandardScaler(strategy="factorized")),
                     ("kmeans", FactorizedKMeans(4, random_state=0, strategy="factorized"))])
    labels = pipe.fit(nm).predict(nm)
    assert labels.shape == (nm.shape[0],)
    # k-means++ joins the few candidate rows of each draw, never the matrix.
    assert counter.shapes and max(shape[0] for shape in counter.shapes) <= 3


def test_pickle_round_trip():
    nm = star(2, n=60)
    scaler = FactorizedStandardScaler(strategy="factorized").fit(nm)
    clone = pickle.loads(pickle.dumps(scaler))
    assert_allclose(clone.transform(nm).materialize(), scaler.transform(nm).materialize())


def test_materialized_strategy_on_sparse_sources_centers():
    nm, T, _ = scenario_and_reference(6, n_target=60, sparse=True)
    joined = FactorizedStandardScaler(strategy="materialized").fit(nm)
    assert_same_scaler(joined, StandardScaler().fit(T))
    pca = FactorizedPCA(1, strategy="materialized").fit(nm)
    assert_allclose(pca.explained_variance_,
                    FactorizedPCA(1, strategy="factorized").fit(nm).explained_variance_,
                    rtol=1e-8)


def test_constant_dimension_column_gets_unit_scale():
    rng = np.random.default_rng(0)
    fact = rng.standard_normal((500, 2))
    dim = np.column_stack([np.full(7, 3.7), rng.standard_normal(7)])
    X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(500), rng.integers(0, 7, 500)])
    scaler = FactorizedStandardScaler().fit(X)
    reference = StandardScaler().fit(X.materialize())
    assert scaler.scale_[2] == 1.0
    assert_allclose(scaler.scale_, reference.scale_, rtol=1e-8)
