"""The linear models where they used to fail: diverging steps, bad parameters, extreme values,
object targets, scikit-learn's array API mode, the cost model's iterations and ``verbose``."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import sklearn
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge

from sklearn_ilargi import (
    FactorizedLinearRegression,
    FactorizedLogisticRegression,
    FactorizedRidge,
    NormalizedMatrix,
    config_context,
)
from sklearn_ilargi.linear_model._base import gradient_descent
from sklearn_ilargi.utils._sklearn_compat import InvalidParameterError

ESTIMATORS = (FactorizedLinearRegression, FactorizedRidge, FactorizedLogisticRegression)


def star(n_rows=120, seed=0, scale=1.0):
    """A fact table (its columns times ``scale``) with two dimensions, and a target."""
    rng = np.random.default_rng(seed)
    fact = scale * rng.standard_normal((n_rows, 2))
    nm = NormalizedMatrix.from_matrices(
        [fact, rng.standard_normal((9, 2)), rng.standard_normal((4, 1))],
        [np.arange(n_rows), rng.integers(0, 9, n_rows), rng.integers(0, 4, n_rows)])
    T = nm.materialize()
    y = T @ (np.array([1.0, -2.0, 0.5, 3.0, -1.0]) / scale ** np.array([1, 1, 0, 0, 0])) + 4.0
    return nm, T, y + 0.1 * rng.standard_normal(n_rows)


def target(Estimator, y):
    return (y > np.median(y)).astype(int) if Estimator is FactorizedLogisticRegression else y


# ---------------------------------------------------------------------- diverging descent
@pytest.mark.parametrize("Estimator", ESTIMATORS)
@pytest.mark.parametrize("joined", [False, True])
def test_a_diverging_step_warns_and_leaves_finite_coefficients(Estimator, joined):
    nm, T, y = star()
    model = Estimator(solver="gd", learning_rate=1e6, max_iter=200)
    with pytest.warns(ConvergenceWarning, match="diverged .* step .* too large"):
        model.fit(T if joined else nm, target(Estimator, y))
    assert np.isfinite(model.coef_).all() and np.isfinite(model.intercept_).all()
    assert np.max(model.n_iter_) < 200  # it stopped where the gradient grew


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), factor=st.floats(0.05, 1.95))
def test_a_step_within_the_curvature_bound_never_counts_as_divergence(seed, factor):
    """On a convex quadratic, steps up to ``2 / L`` never let the gradient grow; beyond, it
    grows along the top eigenvector and the descent stops with the diverging warning."""
    rng = np.random.default_rng(seed)
    root = rng.standard_normal((6, 4))
    hessian = root.T @ root + 1e-3 * np.eye(4)
    b = rng.standard_normal(4)
    top = np.linalg.eigvalsh(hessian)[-1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        coef, _ = gradient_descent(lambda w: hessian @ w - b, np.zeros(4), factor / top,
                                   300, 1e-6)
    assert not any("diverged" in str(w.message) for w in caught)
    assert np.isfinite(coef).all()
    with pytest.warns(ConvergenceWarning, match="diverged"):
        coef, n_iter = gradient_descent(lambda w: hessian @ w - b, np.zeros(4),
                                        (2.5 + factor) / top, 300, 1e-6)
    assert np.linalg.norm(hessian @ coef - b) <= np.linalg.norm(b)  # the best iterate


def test_a_gradient_that_is_not_finite_stops_at_once():
    with pytest.warns(ConvergenceWarning, match="diverged at iteration 0"):
        coef, n_iter = gradient_descent(lambda w: np.full_like(w, np.nan), np.ones(3), 0.1,
                                        50, 1e-4)
    assert n_iter == 0 and (coef == 1).all()


# ---------------------------------------------------------------------- parameters
BAD_PARAMETERS = [
    (FactorizedLogisticRegression, LogisticRegression, {"C": "1"}),
    (FactorizedLogisticRegression, LogisticRegression, {"C": 0}),
    (FactorizedLogisticRegression, LogisticRegression, {"max_iter": -1}),
    (FactorizedLogisticRegression, LogisticRegression, {"class_weight": "even"}),
    (FactorizedLogisticRegression, LogisticRegression, {"warm_start": "yes"}),
    (FactorizedLogisticRegression, LogisticRegression, {"tol": -1.0}),
    (FactorizedLogisticRegression, LogisticRegression, {"verbose": -1}),
    (FactorizedLinearRegression, LinearRegression, {"tol": "small"}),
    (FactorizedLinearRegression, LinearRegression, {"fit_intercept": "no"}),
    (FactorizedLinearRegression, None, {"max_iter": 1.5}),
    (FactorizedLinearRegression, None, {"max_iter": "10"}),
    (FactorizedLinearRegression, None, {"solver": "svd"}),
    (FactorizedLinearRegression, None, {"learning_rate": "fast"}),
    (FactorizedLinearRegression, None, {"learning_rate": -0.1}),
    (FactorizedRidge, Ridge, {"alpha": -1.0}),
    (FactorizedRidge, Ridge, {"alpha": "1"}),
    (FactorizedRidge, Ridge, {"max_iter": 1.5}),
    (FactorizedRidge, Ridge, {"max_iter": 0}),
    (FactorizedRidge, None, {"solver": "lbfgs"}),
    (FactorizedRidge, None, {"strategy": "joined"}),
    (FactorizedRidge, None, {"backend": "tpu"}),
]


@pytest.mark.parametrize("Estimator, Counterpart, params", BAD_PARAMETERS,
                         ids=[f"{e.__name__}-{p}" for e, _, p in BAD_PARAMETERS])
def test_bad_parameters_are_refused_as_scikit_learn_refuses_them(Estimator, Counterpart,
                                                                  params):
    nm, T, y = star()
    (name,) = params
    message = f"The '{name}' parameter of {Estimator.__name__} must be"
    with pytest.raises(InvalidParameterError, match=message):
        Estimator(**params).fit(nm, target(Estimator, y))
    if Counterpart is not None:  # the parameter is scikit-learn's too, with the same rule
        with pytest.raises(InvalidParameterError, match=f"The '{name}' parameter"):
            Counterpart(**params).fit(T, target(Estimator, y))


@pytest.mark.parametrize("Estimator", ESTIMATORS)
def test_good_parameters_of_every_kind_are_accepted(Estimator):
    nm, _, y = star()
    params = {"tol": 0, "learning_rate": 0.01, "solver": "gd", "max_iter": 3, "verbose": False}
    if Estimator is FactorizedLogisticRegression:
        params.update(C=np.inf, class_weight={0: 1.0, 1: 2.0}, max_iter=0)
    if Estimator is FactorizedRidge:
        params.update(alpha=np.array([0.5]), max_iter=None, solver="cholesky")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        Estimator(**params).fit(nm, target(Estimator, y))


# ---------------------------------------------------------------------- targets and values
@pytest.mark.parametrize("Estimator", [FactorizedLinearRegression, FactorizedRidge])
def test_none_in_an_object_target_is_a_missing_value(Estimator):
    """scikit-learn refuses it as NaN ("Input contains NaN."); here the message also names
    ``y``."""
    nm, T, y = star()
    y = y.astype(object)
    y[3] = None
    for X in (nm, T):
        with pytest.raises(ValueError, match="Input y contains NaN"):
            Estimator().fit(X, y)
    counterpart = LinearRegression if Estimator is FactorizedLinearRegression else Ridge
    with pytest.raises(ValueError, match="Input contains NaN"):
        counterpart().fit(T, y)


@pytest.mark.parametrize("scale", [1e200, 1e160, 2.0**600])
@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
def test_values_whose_squares_overflow_match_scikit_learn(scale, strategy):
    """scikit-learn's lstsq does not square the data; the normal equations, rescaled where
    they overflow, give its coefficients."""
    small, _, y = star()
    nm = small * scale
    T = nm.materialize()
    reference = LinearRegression().fit(T, y)
    for target_scale in (1.0, 1e150):
        model = FactorizedLinearRegression(strategy=strategy).fit(nm, y * target_scale)
        assert_allclose(model.coef_, reference.coef_ * target_scale, rtol=1e-8)
        assert_allclose(model.intercept_, reference.intercept_ * target_scale, rtol=1e-8)
        assert_allclose(model.predict(nm), reference.predict(T) * target_scale, rtol=1e-8)


def test_huge_columns_beside_ordinary_ones_are_solved_exactly():
    """Columns near 1e200 beside columns near 1: the rescaled normal equations recover the
    coefficients of both (scikit-learn's lstsq, whose cutoff is relative to the largest
    singular value, zeroes the small columns there)."""
    nm, T, y = star(scale=1e200)
    model = FactorizedLinearRegression(strategy="factorized").fit(nm, y)
    magnitude = np.abs(T).max(axis=0)  # (the standard deviation would overflow)
    exact = np.linalg.lstsq(np.column_stack([T / magnitude, np.ones(len(T))]), y,
                            rcond=None)[0]
    assert_allclose(model.coef_, exact[:-1] / magnitude, rtol=1e-8)
    assert_allclose(model.predict(nm), T @ model.coef_ + model.intercept_, rtol=1e-12)


@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
def test_huge_values_with_a_penalty_keep_its_weight(strategy):
    """Ridge on ``2**k X`` with the penalty ``4**k alpha`` is ridge on ``X`` with ``alpha``:
    the rescaled solve must weigh the penalty in the same units."""
    nm, T, y = star()
    huge = nm * 2.0**511  # squares beyond float64's range
    model = FactorizedRidge(alpha=2.0**1022, strategy=strategy).fit(huge, y)
    reference = Ridge(alpha=1.0).fit(T, y)
    assert_allclose(model.coef_ * 2.0**511, reference.coef_, rtol=1e-8)
    assert_allclose(model.intercept_, reference.intercept_, rtol=1e-8)


# ---------------------------------------------------------------------- array API mode
_ARRAY_API_SCRIPT = textwrap.dedent("""
    import numpy as np
    import sklearn
    from sklearn_ilargi import (FactorizedLinearRegression, FactorizedLogisticRegression,
                                FactorizedRidge, NormalizedMatrix)

    rng = np.random.default_rng(0)
    nm = NormalizedMatrix.from_matrices(
        [rng.standard_normal((50, 2)), rng.standard_normal((6, 2))],
        [np.arange(50), rng.integers(0, 6, 50)])
    T = nm.materialize()
    y = T @ np.array([1.0, -1.0, 2.0, 0.5])
    weights = rng.random(50)
    try:
        with sklearn.config_context(array_api_dispatch=True):
            pass
    except Exception as error:
        print("SKIP", error)
        raise SystemExit(0)
    for Estimator, target in [(FactorizedLinearRegression, y), (FactorizedRidge, y),
                              (FactorizedLogisticRegression, (y > 0).astype(int))]:
        for X in (T, nm):
            expected = Estimator().fit(X, target, sample_weight=weights).coef_
            with sklearn.config_context(array_api_dispatch=True):
                coef = Estimator().fit(X, target, sample_weight=weights).coef_
            np.testing.assert_allclose(coef, expected, rtol=1e-10, atol=1e-12)
    print("OK")
""")


def test_scikit_learns_array_api_mode_on_numpy_and_normalized_input():
    """scikit-learn's array API mode needs scipy's, which is switched on before scipy is
    imported: the check runs in a fresh interpreter."""
    env = {**os.environ, "SCIPY_ARRAY_API": "1"}
    result = subprocess.run([sys.executable, "-c", _ARRAY_API_SCRIPT], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    if result.stdout.startswith("SKIP"):
        pytest.skip(f"array_api_dispatch cannot be enabled here: {result.stdout[5:]}")
    assert result.stdout.strip() == "OK"


# ---------------------------------------------------------------------- cost model
def test_the_profile_assumes_a_typical_count_where_the_fit_can_stop_early():
    nm, _, y = star()
    labels = target(FactorizedLogisticRegression, y)
    model = FactorizedLogisticRegression(max_iter=1000, strategy="factorized").fit(nm, labels)
    profile = model.decision_.profile
    assert (profile.iterations, profile.max_iter, profile.matmul) == (30, 1000, 30)
    assert model.decision_.features["iterations"] == 30
    with config_context(expected_iterations=7):
        gd = FactorizedRidge(solver="gd", max_iter=500, strategy="factorized").fit(nm, y)
    assert (gd.decision_.profile.iterations, gd.decision_.profile.matmul) == (7, 37)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        exhaustive = FactorizedLogisticRegression(max_iter=40, tol=0,
                                                  strategy="factorized").fit(nm, labels)
    assert exhaustive.decision_.profile.iterations == 40  # tol=0 runs all of max_iter


def test_calibration_workloads_keep_their_profiles():
    """The calibration fits logistic regression with ``max_iter=30``: its features are those
    of 30 iterations, as when the cost model was trained."""
    from sklearn_ilargi.cost.calibration._workloads import WORKLOADS

    (workload,) = [w for w in WORKLOADS if w.name == "FactorizedLogisticRegression"]
    nm, _, y = star()
    model = FactorizedLogisticRegression(**workload.params, strategy="factorized")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(nm, target(FactorizedLogisticRegression, y))
    features = model.decision_.features
    assert (features["matmul"], features["rmatmul"], features["iterations"]) == (30, 30, 30)


def test_explain_says_how_many_iterations_it_assumed():
    nm, _, y = star()
    model = FactorizedLogisticRegression(max_iter=300).fit(
        nm, target(FactorizedLogisticRegression, y))
    assert "assumes 30 solver iterations (max_iter=300)" in model.decision_.explain()
    closed_form = FactorizedRidge().fit(nm, y)
    assert "solver iterations" not in closed_form.decision_.explain()


# ---------------------------------------------------------------------- verbose
@pytest.mark.filterwarnings("ignore:Gradient descent did not converge")
@pytest.mark.parametrize("Estimator", ESTIMATORS)
def test_verbose_reports_every_iteration(Estimator, capsys):
    nm, _, y = star()
    params = {"solver": "gd", "max_iter": 4, "tol": 0}
    Estimator(**params).fit(nm, target(Estimator, y))
    assert capsys.readouterr().out == ""
    Estimator(**params, verbose=1).fit(nm, target(Estimator, y))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith(f"{Estimator.__name__}: iteration 1/4, gradient_norm ")
    assert all(line.endswith("s left") for line in lines)
    with config_context(verbose=1):
        Estimator(**params).fit(nm, target(Estimator, y))
    assert len(capsys.readouterr().out.splitlines()) == 4


def test_verbose_lbfgs_reports_the_objective(capsys):
    nm, _, y = star()
    model = FactorizedLogisticRegression(verbose=1).fit(
        nm, target(FactorizedLogisticRegression, y))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == model.n_iter_[0]
    assert ", loss " in lines[0]


@pytest.mark.parametrize("Estimator", ESTIMATORS)
def test_parameters_are_checked_once_per_fit(Estimator, monkeypatch):
    """scikit-learn's ``_fit_context`` wraps the CPU fallback: the parameters are checked once
    before the fit's body (which runs again on the CPU if the GPU runs out of memory), and
    not at all under scikit-learn's ``skip_parameter_validation``."""
    calls = []
    checks = Estimator._validate_params
    monkeypatch.setattr(Estimator, "_validate_params",
                        lambda self: calls.append(1) or checks(self))
    nm, _, y = star()
    Estimator().fit(nm, target(Estimator, y))
    assert len(calls) == 1
    assert Estimator.fit.__name__ == "fit"
    with sklearn.config_context(skip_parameter_validation=True):
        Estimator().fit(nm, target(Estimator, y))
    assert len(calls) == 1
