"""The logistic loss over the products, and the curvature behind the step size of ``"gd"``."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit, logsumexp, softmax

from sklearn_ilargi import FactorizedLogisticRegression, config_context
from sklearn_ilargi.linear_model import _logistic
from sklearn_ilargi.linear_model._base import top_eigenvalue
from sklearn_ilargi.linear_model._linear_loss import LogisticLoss
from sklearn_ilargi.tests._scenarios import build, random_scenario
from sklearn_ilargi.utils import TrainingMatrix
from sklearn_ilargi.utils._sklearn_compat import _openmp_effective_n_threads


def scenario(seed):
    rng = np.random.default_rng(seed)
    nm = build(random_scenario(rng, n_target=int(rng.integers(40, 80))),
               gather_thin=seed % 2 == 1)
    return nm, nm.toarray(), rng


def reference_loss_gradient(T, y, n_classes, weight, fit_intercept, l2, flat):
    """The objective and its gradient on the joined matrix, in plain numpy."""
    n_outputs = 1 if n_classes == 2 else n_classes
    full = flat.reshape(-1, n_outputs)
    coef = full[: T.shape[1]]
    raw = T @ coef + (full[-1] if fit_intercept else 0.0)
    if n_classes == 2:
        pointwise = np.logaddexp(0, raw[:, 0]) - y * raw[:, 0]
        residual = expit(raw) - y[:, None]
    else:
        pointwise = logsumexp(raw, axis=1) - raw[np.arange(len(y)), y]
        residual = softmax(raw, axis=1) - np.eye(n_classes)[y]
    residual *= (weight / weight.sum())[:, None]
    loss = weight @ pointwise / weight.sum() + 0.5 * l2 * np.sum(coef ** 2)
    grad = T.T @ residual + l2 * coef
    if fit_intercept:
        grad = np.vstack([grad, residual.sum(axis=0)])
    return loss, grad.ravel()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_classes=st.sampled_from([2, 3, 4]),
       fit_intercept=st.booleans(), weighted=st.booleans())
def test_loss_and_gradient_are_those_of_the_joined_matrix(seed, n_classes, fit_intercept,
                                                          weighted):
    nm, T, rng = scenario(seed)
    y = rng.integers(0, n_classes, T.shape[0])
    weight = rng.random(T.shape[0]) + 0.1 if weighted else np.ones(T.shape[0])
    l2 = float(rng.random())
    n_outputs = 1 if n_classes == 2 else n_classes
    flat = rng.standard_normal((T.shape[1] + fit_intercept) * n_outputs)
    expected = reference_loss_gradient(T, y, n_classes, weight, fit_intercept, l2, flat)
    for X in (nm, T):
        loss = LogisticLoss(TrainingMatrix(X), y, n_classes, weight, fit_intercept, l2)
        value, grad = loss.loss_gradient(flat)
        assert_allclose(value, expected[0], rtol=1e-12)
        assert_allclose(grad, expected[1], rtol=1e-10, atol=1e-12)
        assert_allclose(loss.gradient(flat), grad, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_threads_give_the_same_numbers(n_classes):
    """Rows are independent: each thread computes its rows' values as one thread would."""
    nm, T, rng = scenario(4)
    y = rng.integers(0, n_classes, T.shape[0])
    weight = rng.random(T.shape[0])
    flat = rng.standard_normal((T.shape[1] + 1) * (1 if n_classes == 2 else n_classes))
    one, two = (LogisticLoss(TrainingMatrix(nm), y, n_classes, weight, True, 0.1,
                             n_threads=n).loss_gradient(flat) for n in (1, 2))
    assert one[0] == two[0]
    assert_array_equal(one[1], two[1])


def test_large_fits_use_openmp_threads(monkeypatch):
    seen = []
    init = LogisticLoss.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        seen.append(self.n_threads)

    monkeypatch.setattr(_logistic.LogisticLoss, "__init__", spy)
    nm, T, rng = scenario(5)
    y = rng.integers(0, 2, T.shape[0])
    FactorizedLogisticRegression(strategy="factorized").fit(nm, y)
    with config_context(parallel_loss_samples=0):
        FactorizedLogisticRegression(strategy="factorized").fit(nm, y)
    assert seen == [1, _openmp_effective_n_threads()]


# ---------------------------------------------------------------------- curvature
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), extra_column=st.booleans(), centered=st.booleans(),
       through_products=st.booleans())
def test_top_eigenvalue_is_exact(seed, extra_column, centered, through_products):
    """From the gram where it is cheap, by Lanczos over the products otherwise (always for a
    centered matrix): the largest eigenvalue of ``A.T diag(w) A`` to rounding error."""
    nm, T, rng = scenario(seed)
    weight = rng.random(T.shape[0]) + 0.1
    offset = T.mean(axis=0) if centered else None
    A = T - (0 if offset is None else offset)
    if extra_column:
        A = np.column_stack([A, np.ones(len(A))])
    expected = np.linalg.eigvalsh(A.T @ (weight[:, None] * A))[-1] if A.shape[1] else 0.0
    # Centering a constant column leaves rounding error, on the scale of the raw values.
    rounding = 1e-12 * (weight @ np.square(T).sum(axis=1) + weight.sum())
    with config_context(closed_form_max_columns=0 if through_products else 1024):
        for X in (nm, T):
            value = top_eigenvalue(TrainingMatrix(X, offset), weight, extra_column=extra_column)
            assert_allclose(value, expected, rtol=1e-9, atol=rounding)


@pytest.mark.parametrize("through_products", [False, True])
def test_top_eigenvalue_of_one_column(through_products):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 1))
    weight = rng.random(30)
    with config_context(closed_form_max_columns=0 if through_products else 1024):
        value = top_eigenvalue(TrainingMatrix(x), weight)
    assert_allclose(value, weight @ x[:, 0] ** 2, rtol=1e-12)


def test_top_eigenvalue_of_a_centered_column_with_a_large_mean():
    """The centered gram is never formed: a column ``1e7 + noise`` keeps its spread."""
    rng = np.random.default_rng(1)
    x = 1e7 + rng.standard_normal((200, 2))
    weight = np.ones(200)
    mean = x.mean(axis=0)
    centered = x - mean
    value = top_eigenvalue(TrainingMatrix(x, mean), weight)
    assert_allclose(value, np.linalg.eigvalsh(centered.T @ centered)[-1], rtol=1e-6)


@pytest.mark.parametrize("n_columns", [1, 3])
@pytest.mark.parametrize("through_products", [False, True])
def test_top_eigenvalue_of_zeros_is_zero(n_columns, through_products):
    with config_context(closed_form_max_columns=0 if through_products else 1024):
        assert top_eigenvalue(TrainingMatrix(np.zeros((20, n_columns))), np.ones(20)) == 0.0
