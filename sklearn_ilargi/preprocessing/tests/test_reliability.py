"""FactorizedStandardScaler with scikit-learn's output containers (``set_output``)."""

import numpy as np
import pytest
import sklearn
from numpy.testing import assert_allclose
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ilargi import (
    FactorizedPCA,
    FactorizedRidge,
    FactorizedStandardScaler,
    NormalizedMatrix,
)


def star(names=True, n_rows=30, seed=0):
    rng = np.random.default_rng(seed)
    nm = NormalizedMatrix.from_matrices(
        [rng.standard_normal((n_rows, 2)), rng.standard_normal((4, 2))],
        [np.arange(n_rows), rng.integers(0, 4, n_rows)],
        feature_names=["age", "income", "size", "rating"] if names else None)
    return nm, nm.materialize(), rng


@pytest.mark.parametrize("names", [True, False])
def test_pandas_output_is_a_data_frame_of_the_joined_result(names):
    pd = pytest.importorskip("pandas")
    nm, T, _ = star(names)
    scaler = FactorizedStandardScaler().set_output(transform="pandas")
    for out in (scaler.fit(nm).transform(nm), scaler.fit_transform(nm)):
        assert isinstance(out, pd.DataFrame)
        assert list(out.columns) == list(scaler.get_feature_names_out())
        assert_allclose(out.to_numpy(), StandardScaler().fit_transform(T), rtol=1e-10)
    assert list(scaler.get_feature_names_out()) == (
        ["age", "income", "size", "rating"] if names else ["x0", "x1", "x2", "x3"])


def test_without_an_output_container_the_result_stays_factorized():
    nm, _, _ = star()
    scaler = FactorizedStandardScaler().fit(nm)
    assert isinstance(scaler.transform(nm), NormalizedMatrix)
    scaler.set_output(transform="default")
    assert isinstance(scaler.transform(nm), NormalizedMatrix)


def test_pipelines_and_the_global_setting_get_data_frames():
    pd = pytest.importorskip("pandas")
    nm, T, rng = star()
    y = T @ rng.standard_normal(4)
    pipeline = make_pipeline(FactorizedStandardScaler(), FactorizedPCA(2))
    pipeline.set_output(transform="pandas")
    out = pipeline.fit_transform(nm)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["factorizedpca0", "factorizedpca1"]
    with sklearn.config_context(transform_output="pandas"):
        assert isinstance(FactorizedStandardScaler().fit(nm).transform(nm), pd.DataFrame)
        model = make_pipeline(FactorizedStandardScaler(), FactorizedRidge()).fit(nm, y)
        reference = make_pipeline(StandardScaler(), Ridge()).fit(T, y)
        assert_allclose(model.predict(nm), reference.predict(T), rtol=1e-8)


def test_polars_output_is_a_polars_data_frame():
    pl = pytest.importorskip("polars")
    nm, T, _ = star()
    out = FactorizedStandardScaler().set_output(transform="polars").fit_transform(nm)
    assert isinstance(out, pl.DataFrame)
    assert out.columns == ["age", "income", "size", "rating"]
    assert_allclose(out.to_numpy(), StandardScaler().fit_transform(T), rtol=1e-10)
