"""Every private scikit-learn API that sklearn-ilargi uses imports, and behaves as relied on.

An upgrade of scikit-learn that moves or changes one of them fails here, in one place, rather
than deep inside a fit.
"""

import inspect
import numbers

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
import scipy.sparse.linalg
from scipy.special import expit, logsumexp, softmax
from sklearn.base import BaseEstimator

from sklearn_ilargi.utils import _sklearn_compat as compat


def test_every_name_imports():
    # scikit-learn's fixes may be scipy's own function on a recent scipy.
    assert sorted(compat.__all__) == sorted(
        name for name in vars(compat) if not name.startswith("__")
        and getattr(compat, name).__module__.startswith(("sklearn", "scipy"))
    )
    for name in compat.__all__:
        assert getattr(compat, name) is not None, name


@pytest.mark.parametrize("name", ["HalfBinomialLoss", "HalfMultinomialLoss"])
def test_the_loss_classes_take_the_arguments_we_pass(name):
    parameters = inspect.signature(getattr(compat, name).loss_gradient).parameters
    assert {"y_true", "raw_prediction", "sample_weight", "loss_out", "gradient_out",
            "n_threads"} <= set(parameters)
    parameters = inspect.signature(getattr(compat, name).gradient).parameters
    assert {"y_true", "raw_prediction", "sample_weight", "gradient_out",
            "n_threads"} <= set(parameters)


def test_the_binomial_loss_is_the_half_binomial_deviance():
    rng = np.random.default_rng(0)
    raw = 3 * rng.standard_normal(50)
    y = (rng.random(50) < 0.5).astype(np.float64)
    weight = rng.random(50)
    loss_out, gradient_out = np.empty(50), np.empty((50, 1))
    loss, gradient = compat.HalfBinomialLoss().loss_gradient(
        y_true=y, raw_prediction=raw[:, None], sample_weight=weight, loss_out=loss_out,
        gradient_out=gradient_out, n_threads=2)
    assert loss is loss_out and np.shares_memory(gradient, gradient_out)
    assert_allclose(loss, weight * (np.logaddexp(0, raw) - y * raw), rtol=1e-12)
    assert_allclose(gradient_out[:, 0], weight * (expit(raw) - y), rtol=1e-12, atol=1e-15)


def test_the_multinomial_loss_is_the_softmax_cross_entropy():
    rng = np.random.default_rng(1)
    raw = 3 * rng.standard_normal((40, 3))
    y = rng.integers(0, 3, 40)
    weight = rng.random(40)
    loss, gradient = compat.HalfMultinomialLoss(n_classes=3).loss_gradient(
        y_true=y.astype(np.float64), raw_prediction=raw, sample_weight=weight, n_threads=2)
    one_hot = np.eye(3)[y]
    assert_allclose(loss, weight * (logsumexp(raw, axis=1) - raw[np.arange(40), y]),
                    rtol=1e-10, atol=1e-14)
    assert_allclose(gradient, weight[:, None] * (softmax(raw, axis=1) - one_hot), rtol=1e-10,
                    atol=1e-15)


def test_openmp_threads_is_a_positive_count():
    n_threads = compat._openmp_effective_n_threads()
    assert isinstance(n_threads, numbers.Integral) and n_threads >= 1


def test_the_compiled_nmf_sweep_updates_w_in_place():
    """One sweep over the coordinates of ``W`` for ``||X - W H||^2``: returns the projected
    gradient's norm and leaves each coordinate at its non-negative minimizer in turn."""
    rng = np.random.default_rng(2)
    W = rng.random((30, 3))
    Ht = rng.random((5, 3))
    X = rng.random((30, 5))
    hht, xht = Ht.T @ Ht, X @ Ht
    expected, violation = W.copy(), 0.0
    for t in range(3):
        grad = expected @ hht[t] - xht[:, t]
        violation += np.abs(np.where(expected[:, t] == 0, np.minimum(grad, 0), grad)).sum()
        expected[:, t] = np.maximum(expected[:, t] - grad / hht[t, t], 0)
    got = compat._update_cdnmf_fast(W, hht, xht, np.arange(3, dtype=np.intp))
    assert_allclose(W, expected, rtol=1e-12)
    assert_allclose(got, violation, rtol=1e-12)


def test_check_sample_weight_refuses_negative_weights():
    X = np.empty((3, 0))
    assert_array_equal(compat._check_sample_weight(None, X, dtype=np.float64), np.ones(3))
    with pytest.raises(ValueError, match="Negative values in data passed to `sample_weight`"):
        compat._check_sample_weight(np.array([1.0, -1.0, 2.0]), X, dtype=np.float64,
                                    ensure_non_negative=True)


class _Toy(BaseEstimator):
    _parameter_constraints = {
        "size": [compat.Interval(numbers.Integral, 1, None, closed="left")],
        "kind": [compat.StrOptions({"a", "b"})],
        "power": [compat.Options(numbers.Real, {1, 2})],
    }

    def __init__(self, size=1, kind="a", power=2):
        self.size = size
        self.kind = kind
        self.power = power

    @compat._fit_context(prefer_skip_nested_validation=True)
    def fit(self, X=None, y=None):
        self.fitted_ = True
        return self


@pytest.mark.parametrize("params", [{"size": 0}, {"kind": "c"}, {"power": 3}])
def test_fit_context_checks_the_parameter_constraints(params):
    assert _Toy().fit().fitted_
    with pytest.raises(ValueError, match=f"The '{next(iter(params))}' parameter of _Toy"):
        _Toy(**params).fit()


def test_output_config_names_the_dense_container():
    toy = _Toy()
    assert compat._get_output_config("transform", toy)["dense"] == "default"
    toy._sklearn_output_config = {"transform": "pandas"}
    assert compat._get_output_config("transform", toy)["dense"] == "pandas"


def test_infer_dimension_finds_the_rank_of_a_spectrum():
    spectrum = np.array([10.0, 8.0, 6.0, 1.1e-3, 1.05e-3, 1e-3, 0.95e-3])
    assert int(compat._infer_dimension(spectrum, 500)) == 3


def test_constant_features_get_a_scale_of_one():
    """The scaler's rule: a variance within the rounding of the two-pass algorithm's bound
    (``n eps var + (n eps mean)^2``) is a constant feature, whose scale becomes 1."""
    var = np.array([0.0, 1e-20, 1.0, 1e-20])
    mean = np.array([5.0, 1e6, 1e6, 0.0])
    constant = compat._is_constant_feature(var, mean, 1000)
    assert_array_equal(constant, [True, True, False, False])
    scale = compat._handle_zeros_in_scale(np.sqrt(var), copy=True, constant_mask=constant)
    assert_array_equal(scale, [1.0, 1.0, 1.0, 1e-10])


def test_randomized_svd_runs_on_a_linear_operator_with_the_same_draws():
    """FactorizedPCA hands it the centered matrix as a LinearOperator."""
    A = np.random.default_rng(0).standard_normal((60, 20))
    operator = scipy.sparse.linalg.aslinearoperator(A)
    for M in (A, operator):
        _, values, vectors = compat._randomized_svd(M, 3, n_oversamples=5, n_iter=2,
                                                    flip_sign=False, random_state=0)
        if M is A:
            expected = values, vectors
    assert_allclose(values, expected[0], rtol=1e-12)
    assert_allclose(vectors, expected[1], rtol=1e-10, atol=1e-12)


def test_arpack_start_vector_is_uniform_in_minus_one_one():
    start = compat._init_arpack_v0(50, np.random.RandomState(0))
    assert start.shape == (50,) and np.all(np.abs(start) <= 1)
    assert_array_equal(start, np.random.RandomState(0).uniform(-1, 1, 50))


def test_conjugate_gradients_take_a_relative_tolerance():
    system = np.diag([1.0, 2.0, 4.0])
    solution, info = compat._sparse_linalg_cg(system, np.ones(3), rtol=1e-12, maxiter=10)
    assert info == 0
    assert_allclose(solution, [1.0, 0.5, 0.25])


@pytest.mark.parametrize("name", ["_kmeans_single_lloyd", "_kmeans_single_elkan"])
def test_kmeans_single_runs_lloyd_from_the_given_centers(name):
    """Two well separated groups: one run from one point of each finds their means."""
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0, 0.1, (20, 2)), rng.normal(5, 0.1, (20, 2))])
    labels, inertia, centers, n_iter = getattr(compat, name)(
        X, np.ones(40), X[[0, 20]].copy(), max_iter=10, verbose=False, tol=0.0, n_threads=2)
    assert_array_equal(labels, np.repeat([0, 1], 20))
    assert_allclose(centers, [X[:20].mean(axis=0), X[20:].mean(axis=0)], rtol=1e-12)
    assert_allclose(inertia, sum(((X[labels == j] - centers[j]) ** 2).sum() for j in (0, 1)))
    assert 1 <= n_iter <= 10


def test_arpack_start_vector_is_seeded():
    first = compat._init_arpack_v0(7, np.random.RandomState(0))
    again = compat._init_arpack_v0(7, np.random.RandomState(0))
    assert first.shape == (7,) and (np.abs(first) <= 1).all()
    assert_array_equal(first, again)


def test_randomized_svd_finds_the_leading_singular_values():
    rng = np.random.default_rng(4)
    M = rng.standard_normal((60, 8)) * np.arange(8, 0, -1)
    U, values, Vt = compat._randomized_svd(
        M, n_components=3, n_oversamples=10, n_iter=7, power_iteration_normalizer="auto",
        flip_sign=False, random_state=0)
    assert (U.shape, values.shape, Vt.shape) == ((60, 3), (3,), (3, 8))
    assert_allclose(values, np.linalg.svd(M, compute_uv=False)[:3], rtol=1e-8)


def test_sparse_linalg_cg_solves_a_positive_definite_system():
    rng = np.random.default_rng(5)
    root = rng.standard_normal((10, 6))
    A, b = root.T @ root + np.eye(6), rng.standard_normal(6)
    steps = []
    x, info = compat._sparse_linalg_cg(A, b, rtol=1e-12, maxiter=100,
                                       callback=lambda xk: steps.append(1))
    assert info == 0 and steps
    assert_allclose(A @ x, b, rtol=1e-8, atol=1e-10)


def test_constant_features_get_a_unit_scale():
    mean = np.array([1e6, 0.0, 3.0])
    var = np.array([0.0, 0.0, 4.0])
    constant = compat._is_constant_feature(var, mean, 100)
    assert_array_equal(constant, [True, True, False])
    scale = compat._handle_zeros_in_scale(np.sqrt(var), copy=False, constant_mask=constant)
    assert_array_equal(scale, [1.0, 1.0, 2.0])


def test_safe_indexing_and_the_parameter_error():
    X = np.arange(12).reshape(4, 3)
    assert_array_equal(compat._safe_indexing(X, [2, 0]), X[[2, 0]])
    assert_array_equal(compat._safe_indexing(X, 1, axis=1), X[:, 1])
    assert issubclass(compat.InvalidParameterError, ValueError)
    with pytest.raises(compat.InvalidParameterError):
        _Toy(size=0).fit()


def test_scorers_are_told_the_labels_their_metric_takes():
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import get_scorer, log_loss

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((30, 2)), np.arange(30) % 3
    model = LogisticRegression().fit(X, y)
    told = compat.scorer_knowing_labels(get_scorer("neg_log_loss"), model.classes_)
    held_out = y == 0  # one class only, which log loss cannot score without the labels
    expected = -log_loss(y[held_out], model.predict_proba(X[held_out]), labels=[0, 1, 2])
    assert told(model, X[held_out], y[held_out]) == pytest.approx(expected)
    accuracy = get_scorer("accuracy")
    assert compat.scorer_knowing_labels(accuracy, model.classes_) is accuracy
    assert compat.scorer_knowing_labels(len, model.classes_) is len
