"""FactorizedKMeans where it used to fail: negative weights, the cost model's iterations and
``verbose``."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_ilargi import FactorizedKMeans, NormalizedMatrix, config_context


def blobs(n_rows=90, seed=0):
    """Three groups of fact rows, each with its own dimension row."""
    rng = np.random.default_rng(seed)
    group = np.arange(n_rows) % 3
    fact = rng.normal(0, 0.1, (n_rows, 2)) + 5.0 * group[:, None]
    dim = np.array([[0.0], [10.0], [20.0]])
    return NormalizedMatrix.from_matrices([fact, dim], [np.arange(n_rows), group])


@pytest.mark.parametrize("joined", [False, True])
def test_negative_sample_weight_is_refused(joined):
    nm = blobs()
    X = nm.materialize() if joined else nm
    weights = np.ones(nm.shape[0])
    weights[4] = -0.5
    message = "Negative values in data passed to `sample_weight`"  # scikit-learn's check
    with pytest.raises(ValueError, match=message):
        FactorizedKMeans(3, random_state=0).fit(X, sample_weight=weights)
    model = FactorizedKMeans(3, random_state=0).fit(X)
    with pytest.raises(ValueError, match=message):
        model.score(X, sample_weight=weights)


def test_the_profile_assumes_a_typical_count_where_the_fit_can_stop_early():
    nm = blobs()
    model = FactorizedKMeans(3, n_init=2, random_state=0, strategy="factorized").fit(nm)
    profile = model.decision_.profile
    assert (profile.iterations, profile.max_iter, profile.matmul) == (30, 300, 60)
    with config_context(expected_iterations=12):
        model.fit(nm)
    assert model.decision_.features["iterations"] == 12
    exhaustive = FactorizedKMeans(3, tol=0, random_state=0, strategy="factorized").fit(nm)
    assert exhaustive.decision_.profile.iterations == 300  # nothing but labels stops it


def test_calibration_workloads_keep_their_profiles():
    """The calibration fits K-means with ``tol=0``: its features are those of all of its
    ``max_iter``, as when the cost model was trained."""
    from sklearn_ilargi.cost.calibration._workloads import WORKLOADS

    (workload,) = [w for w in WORKLOADS if w.name == "FactorizedKMeans"]
    model = FactorizedKMeans(**workload.params, strategy="factorized")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(blobs())
    features = model.decision_.features
    max_iter = workload.params["max_iter"]
    assert (features["matmul"], features["rmatmul"], features["iterations"]) == (
        max_iter, max_iter, max_iter)


def test_explain_says_how_many_iterations_it_assumed():
    model = FactorizedKMeans(3, random_state=0).fit(blobs())
    assert "assumes 30 solver iterations (max_iter=300)" in model.decision_.explain()


def test_verbose_reports_every_iteration_and_why_it_stopped(capsys):
    nm = blobs()
    FactorizedKMeans(3, random_state=0).fit(nm)
    assert capsys.readouterr().out == ""
    model = FactorizedKMeans(3, random_state=0, verbose=1).fit(nm)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == model.n_iter_ + 1
    assert lines[0].startswith("FactorizedKMeans: iteration 1/300, inertia ")
    assert lines[0].endswith("s left")
    assert lines[-1].startswith("Converged at iteration")
    FactorizedKMeans(3, init="random", n_init=2, random_state=0, verbose=1).fit(nm)
    out = capsys.readouterr().out
    assert "FactorizedKMeans run 1/2: iteration 1/300" in out
    assert "FactorizedKMeans run 2/2: iteration 1/300" in out
    with config_context(verbose=1):
        FactorizedKMeans(3, random_state=0).fit(nm)
    assert capsys.readouterr().out.startswith("FactorizedKMeans: iteration 1/300")
