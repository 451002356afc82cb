"""FactorizedNMF and FactorizedPCA where they used to differ from scikit-learn: the ``W`` of
``fit_transform``, PCA of one sample, the cost model's iterations and ``verbose``."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.decomposition import NMF, PCA
from sklearn.exceptions import ConvergenceWarning

from sklearn_ilargi import FactorizedNMF, FactorizedPCA, NormalizedMatrix, config_context


def non_negative_star(n_rows=40, seed=0):
    rng = np.random.default_rng(seed)
    nm = NormalizedMatrix.from_matrices(
        [rng.random((n_rows, 2)), rng.random((5, 3))], [np.arange(n_rows),
                                                         rng.integers(0, 5, n_rows)])
    return nm, nm.materialize(), rng


# Few enough iterations that the fit has not converged (coordinate descent gets there fast).
@pytest.mark.parametrize("solver, max_iter", [("cd", 3), ("mu", 100)])
@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
def test_nmf_fit_transform_returns_the_w_of_the_fit(solver, max_iter, strategy):
    nm, T, rng = non_negative_star()
    W0, H0 = rng.random((T.shape[0], 2)), rng.random((2, T.shape[1]))
    params = dict(n_components=2, init="custom", solver=solver, max_iter=max_iter, tol=0)
    ours = FactorizedNMF(**params, strategy=strategy)
    W = ours.fit_transform(nm, W=W0.copy(), H=H0.copy())
    expected = NMF(**params).fit_transform(T, W=W0.copy(), H=H0.copy())
    assert_allclose(W, expected, rtol=1e-7, atol=1e-10)
    # Not the transform: that solves for W with the components fixed, from another start.
    assert not np.allclose(W, ours.transform(nm), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
def test_pca_of_one_sample_is_nan_with_a_warning_as_in_scikit_learn(strategy):
    nm, _, _ = non_negative_star(n_rows=1)
    T = nm.materialize()
    with pytest.warns(RuntimeWarning, match="invalid value"):
        ours = FactorizedPCA(strategy=strategy).fit(nm)
    with pytest.warns(RuntimeWarning, match="invalid value"):
        theirs = PCA().fit(T)
    for name in ("explained_variance_", "explained_variance_ratio_", "singular_values_",
                 "noise_variance_", "mean_", "components_", "n_components_"):
        assert_allclose(getattr(ours, name), getattr(theirs, name), err_msg=name)
    assert_allclose(ours.transform(nm), theirs.transform(T))


def test_nmf_profile_assumes_a_typical_count_where_the_fit_can_stop_early():
    nm, _, _ = non_negative_star()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = FactorizedNMF(2, strategy="factorized", random_state=0).fit(nm)
        exhaustive = FactorizedNMF(2, tol=0, max_iter=40, strategy="factorized").fit(nm)
    profile = model.decision_.profile
    assert (profile.iterations, profile.max_iter, profile.matmul) == (30, 200, 30)
    assert exhaustive.decision_.profile.iterations == 40


def test_calibration_workloads_keep_their_profiles():
    """The calibration fits NMF with ``tol=0``: its features are those of all of its
    ``max_iter``, as when the cost model was trained."""
    from sklearn_ilargi.cost.calibration._workloads import WORKLOADS

    (workload,) = [w for w in WORKLOADS if w.name == "FactorizedNMF"]
    nm, _, _ = non_negative_star()
    params = {**workload.params, "n_components": 2}
    model = FactorizedNMF(**params, strategy="factorized").fit(nm)
    features = model.decision_.features
    max_iter = workload.params["max_iter"]
    assert (features["matmul"], features["rmatmul"], features["iterations"]) == (
        max_iter, max_iter, max_iter)


@pytest.mark.parametrize("solver", ["cd", "mu"])
def test_nmf_verbose_reports_every_iteration(solver, capsys):
    nm, _, _ = non_negative_star()
    params = dict(n_components=2, solver=solver, max_iter=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        FactorizedNMF(**params).fit(nm)
        assert capsys.readouterr().out == ""
        model = FactorizedNMF(**params, verbose=1).fit(nm)
        lines = [line for line in capsys.readouterr().out.splitlines()
                 if line.startswith("FactorizedNMF: iteration")]
        assert len(lines) == model.n_iter_
        assert lines[0].startswith("FactorizedNMF: iteration 1/20")
        shown = "violation" if solver == "cd" else "error"
        assert any(f", {shown} " in line for line in lines)
        with config_context(verbose=1):
            FactorizedNMF(**params).fit(nm)
        assert "FactorizedNMF: iteration 1/20" in capsys.readouterr().out
