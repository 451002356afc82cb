"""What a NormalizedMatrix refuses and what it now accepts: no NaN or infinity through
arithmetic, ``apply`` checks its function, masked arrays and ``np.matrix``, products of two
normalized matrices, and scikit-learn's tools that index a matrix (``partial_dependence``,
``ColumnTransformer`` with columns by name)."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.compose import ColumnTransformer
from sklearn.inspection import partial_dependence
from sklearn.preprocessing import StandardScaler

from sklearn_ilargi import (
    FactorizedLinearRegression,
    FactorizedLogisticRegression,
    NormalizedMatrix,
    NotFactorizableError,
    ops,
)
from sklearn_ilargi.tests._scenarios import build, random_scenario, reference_matrix, scenarios
from sklearn_ilargi.utils._sklearn_compat import _safe_indexing

SETTINGS = settings(max_examples=30, deadline=None)
TINY = np.finfo(np.float64).smallest_subnormal
MAX = np.finfo(np.float64).max


def close(actual, expected, rtol=1e-9, atol=1e-12):
    """Values of ``actual`` (a CSR join compared as its dense array) close to ``expected``."""
    actual = actual.toarray() if sp.issparse(actual) else actual
    assert np.shape(actual) == np.shape(expected)
    assert_allclose(actual, expected, rtol=rtol, atol=atol)


def small_matrix(**kwargs):
    """A fact table of 5 rows and a left-joined dimension (row 4 misses it)."""
    fact = np.array([[1.0, -2.0], [3.0, 0.5], [-1.0, 4.0], [2.0, 2.0], [0.0, 1.0]])
    dim = np.array([[10.0, -20.0], [30.0, 0.25], [-5.0, 7.0]])
    return NormalizedMatrix.from_matrices([fact, dim], [np.arange(5), [0, 1, 2, 1, -1]],
                                          **kwargs)


def random_pair(seed, n_target=25):
    """Two random matrices over the same target rows, and their joins."""
    rng = np.random.default_rng(seed)
    first = random_scenario(rng, n_target=n_target)
    second = random_scenario(rng, n_target=n_target)
    return (build(first), reference_matrix(*first)), (build(second), reference_matrix(*second))


# ---------------------------------------------------------------------- 2: non-finite arithmetic
NM = small_matrix()
WIDTH = NM.shape[1]


@pytest.mark.parametrize("operation, match", [
    (lambda X: X * np.nan, "Multiplication by NaN or infinity"),
    (lambda X: np.nan * X, "Multiplication by NaN or infinity"),
    (lambda X: X * np.r_[np.inf, np.ones(WIDTH - 1)], "Multiplication by NaN or infinity"),
    (lambda X: X * 1e308, "Multiplication overflows"),
    (lambda X: X / np.nan, "Division by NaN or infinity"),
    (lambda X: X / TINY, "Division overflows"),
    (lambda X: X + np.nan, "Addition by NaN or infinity"),
    (lambda X: X + np.r_[np.ones(WIDTH - 1), -np.inf], "Addition by NaN or infinity"),
    (lambda X: X - np.inf, "Subtraction by NaN or infinity"),
    (lambda X: np.inf - X, "Subtraction by NaN or infinity"),
    (lambda X: (X + 1e300) * 1e10, "Multiplication overflows"),
    (lambda X: X.with_shift(np.full(WIDTH, np.nan)), "with_shift by NaN or infinity"),
    (lambda X: X ** np.inf, r"\*\* inf: the power must be finite"),
    (lambda X: X ** 0.5, r"apply: element-wise \*\* 0.5 produced NaN or infinity"),
    (lambda X: X ** 400, r"apply: element-wise \*\* 400 produced NaN or infinity"),
])
def test_arithmetic_refuses_non_finite_operands_and_results(operation, match):
    with pytest.raises(ValueError, match=match):
        operation(NM)


def test_a_shift_that_overflows_a_cell_is_refused():
    big = NormalizedMatrix.from_matrices([np.array([[1.5e308], [-1.0]])], [np.arange(2)])
    close((big + 1e292).materialize(), big.materialize() + 1e292)  # rounds away: finite
    with pytest.raises(ValueError, match="Addition overflows"):
        big + 1e308
    with pytest.raises(ValueError, match="Subtraction overflows"):
        -big - 1e308
    with pytest.raises(ValueError, match="with_shift overflows"):
        big.with_shift([MAX])


def test_float32_operands_are_checked_in_float32():
    X = NormalizedMatrix.from_matrices([np.full((3, 2), 1000, dtype=np.float32)],
                                       [np.arange(3)])
    with pytest.raises(ValueError, match="not finite as float32"):
        X * 1e39
    with pytest.raises(ValueError, match="Multiplication overflows"):
        X * 1e36
    scaled = X * np.float64(2.0)  # a float64 scalar keeps the matrix float32
    assert scaled.dtype == np.float32
    assert all(block.source.dtype == np.float32 for block in scaled.blocks)


@SETTINGS
@given(scenarios(), st.integers(0, 2**32 - 1))
def test_scaling_and_shifting_stay_exact(case, seed):
    nm, T = case
    rng = np.random.default_rng(seed)
    factors, offsets = rng.uniform(0.5, 2, T.shape[1]), rng.standard_normal(T.shape[1])
    close((nm * factors + offsets).materialize(), T * factors + offsets)
    close((nm / factors - offsets).materialize(), T / factors - offsets)
    close((2.5 - nm).materialize(), 2.5 - T)
    close((-(nm + offsets) * 3).materialize(), -(T + offsets) * 3)
    close(nm.with_shift(offsets).with_shift(None).materialize(), T)


# ---------------------------------------------------------------------- 6: apply checks its func
def in_place_double(values):
    values *= 2
    return values


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("func, error, match", [
    (lambda a: a[:1], ValueError, r"apply: <lambda> returned an array of shape \(1"),
    (lambda a: a.T if a.ndim == 2 else a[::2], ValueError, "returned an array of shape"),
    (in_place_double, ValueError, "in_place_double writes into the values it is given"),
    (lambda a: np.multiply(a, 2, out=a), ValueError, "writes into the values"),
    (lambda a: list(a), TypeError, "returned a list"),
    (lambda a: sp.csr_matrix(np.atleast_2d(a)), TypeError, "returned a csr_matrix"),
    (lambda a: a * 1j, TypeError, "dtype complex128"),
    (lambda a: np.where(a > 2, np.nan, a), ValueError, "produced NaN or infinity"),
])
def test_apply_refuses_what_func_returns_wrongly(sparse, func, error, match):
    source = np.array([[0.0, 3.0, 1.0], [4.0, 0.0, 0.0]])
    X = NormalizedMatrix.from_matrices([sp.csr_matrix(source) if sparse else source],
                                       [np.array([0, 1, 1, -1])])
    before = X.materialize()
    with pytest.raises(error, match=match):
        X.apply(func)
    close(X.materialize(), before)  # never changed, whatever func tried


@pytest.mark.parametrize("sparse", [False, True])
def test_apply_never_shares_the_matrix_memory(sparse):
    source = np.array([[0.0, 3.0], [4.0, 0.0]])
    X = NormalizedMatrix.from_matrices([sp.csr_matrix(source) if sparse else source],
                                       [np.arange(2)])
    same = X.apply(lambda a: a, name="identity")
    values = [b.source.data if sparse else b.source for b in (X.blocks[0], same.blocks[0])]
    assert not np.may_share_memory(*values)
    close(X.apply(lambda a: a > 1).materialize(), (source > 1).astype(float))  # bools are 0/1


@SETTINGS
@given(scenarios())
def test_apply_leaves_the_sources_as_they_were(case):
    nm, T = case
    sources = [b.source.copy() for b in nm.blocks]
    close(nm.apply(np.sin).materialize(), np.sin(T))
    close(abs(nm).materialize(), abs(T))
    for block, source in zip(nm.blocks, sources):
        assert (abs(block.source - source)).sum() == 0


# ---------------------------------------------------------------------- 8: masked, np.matrix
MASKED = np.ma.masked_array([[1.0, np.nan], [2.0, 3.0]], mask=[[0, 1], [0, 0]])


@pytest.mark.parametrize("make, match", [
    (lambda: NormalizedMatrix.from_matrices([MASKED], [np.arange(2)]),
     r"source 0 is a masked array.*filled"),
    (lambda: NormalizedMatrix.from_matrices(
        [np.ones((2, 1)), np.ones((1, 1))], [np.arange(2), np.ma.masked_array([0, 0], [0, 1])]),
     "The indicator of source 1 is a masked array"),
    (lambda: NormalizedMatrix.from_matrices(
        [np.ones((2, 1)), np.ones((1, 1))], [np.arange(2), [0, 0]],
        [[0], np.ma.masked_array([1], [0])]),
     "The mapping of source 1 is a masked array"),
    (lambda: NM @ np.ma.masked_array(np.ones(WIDTH)), "right operand of matmul is a masked"),
    (lambda: np.ma.masked_array(np.ones(5)) @ NM, "left .* operand of matmul is a masked"),
    (lambda: NM.T @ np.ma.masked_array(np.ones(5)), "operand of matmul is a masked array"),
    (lambda: NM * np.ma.masked_array(np.ones(WIDTH)), "operand of Multiplication is a masked"),
    (lambda: NM + np.ma.masked_array(np.ones(WIDTH)), "operand of Addition is a masked"),
    (lambda: NM.gram(np.ma.masked_array(np.ones(5))), "sample_weight is a masked array"),
])
def test_masked_arrays_are_refused(make, match):
    with pytest.raises(TypeError, match=match):
        make()


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix itself
def test_np_matrix_sources_row_maps_and_operands_act_as_arrays():
    fact = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    dim = np.array([[10.0], [20.0]])
    indicator = np.array([[1, 0], [0, 0], [0, 1]])
    plain = NormalizedMatrix.from_matrices([fact, dim], [np.arange(3), indicator])
    X = NormalizedMatrix.from_matrices([np.asmatrix(fact), np.asmatrix(dim)],
                                       [np.arange(3), np.asmatrix(indicator)])
    T = plain.materialize()
    close(X.materialize(), T)
    close(X @ np.ones(3), T @ np.ones(3))
    close(X.T @ np.ones(3), T.T @ np.ones(3))
    close(X.gram(), T.T @ T)
    results = [X @ np.asmatrix(np.ones((3, 1))), np.asmatrix(np.ones(3)) @ X,
               X.T @ np.asmatrix(np.ones((3, 1)))]
    assert all(type(r) is np.ndarray for r in results)
    close(results[0], T @ np.ones((3, 1)))
    close(results[1], np.ones((1, 3)) @ T)
    close((X * np.asmatrix([1.0, 2.0, 3.0])).materialize(), T * [1.0, 2.0, 3.0])
    close((X + np.asmatrix([1.0, 2.0, 3.0])).materialize(), T + [1.0, 2.0, 3.0])


# ---------------------------------------------------------------------- 15: A.T @ B
def no_join(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("joined")

    monkeypatch.setattr(ops, "materialize", fail)


@SETTINGS
@given(scenarios(n_target=20), st.integers(0, 2**32 - 1))
def test_selected_rows_give_their_gram(case, seed):
    nm, T = case
    rows = np.random.default_rng(seed).integers(0, 20, 15)
    close(nm[rows].T @ nm[rows], T[rows].T @ T[rows])
    mean = T[rows].mean(axis=0)
    close((nm[rows] - mean).T @ (nm[rows] - mean), (T[rows] - mean).T @ (T[rows] - mean),
          atol=1e-9)


def test_equal_matrices_take_the_gram(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("not the gram")

    monkeypatch.setattr(ops, "cross_product", fail)
    X = small_matrix()
    rows = [4, 0, 0, 2]
    close(X[rows].T @ X[rows], X.materialize()[rows].T @ X.materialize()[rows])


@pytest.mark.parametrize("seed", range(15))
def test_cross_product_of_two_matrices_over_the_same_rows(monkeypatch, seed):
    (A, TA), (B, TB) = random_pair(seed)
    rng = np.random.default_rng(seed)
    weights = rng.random(TA.shape[0])
    mu, nu = rng.standard_normal(TA.shape[1]), rng.standard_normal(TB.shape[1])
    rows = rng.integers(0, TA.shape[0], 30)
    no_join(monkeypatch)
    close(A.T @ B, TA.T @ TB)
    close(B.T @ A, TB.T @ TA)
    close((A - mu).T @ (B + nu), (TA - mu).T @ (TB + nu))
    close(A[rows].T @ B[rows], TA[rows].T @ TB[rows])
    close(ops.cross_product(A + mu, B, weights), (TA + mu).T @ (weights[:, None] * TB))
    columns = rng.permutation(TA.shape[1])
    half = len(columns) // 2
    close(A[:, columns[:half]].T @ A[:, columns[half:]],
          TA[:, columns[:half]].T @ TA[:, columns[half:]])


def test_cross_product_of_float32_and_float64():
    X = small_matrix()
    X32 = NormalizedMatrix.from_matrices(
        [np.ones((5, 1), dtype=np.float32)], [np.arange(5)])
    out = X32.T @ X
    assert out.dtype == np.float64
    close(out, np.ones((5, 1)).T @ X.materialize())


def test_other_products_of_two_matrices_are_refused():
    A, B = small_matrix(), small_matrix()
    for product in (lambda: A @ B, lambda: A @ B.T, lambda: A.T @ B.T):
        with pytest.raises(NotFactorizableError, match=r"only A.T @ B"):
            product()
    with pytest.raises(ValueError, match="same target rows; A has 3 rows, B has 5"):
        A[:3].T @ B


# ---------------------------------------------------------------------- 21: scikit-learn tools
NAMES = ["a", "b", "c", "d"]


def named_scenario(seed, n_target=30):
    """A fact table of two columns and a left-joined dimension of two, with names."""
    rng = np.random.default_rng(seed)
    fact = rng.standard_normal((n_target, 2))
    dim = rng.standard_normal((5, 2))
    row_map = rng.integers(-1, 5, n_target)
    X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(n_target), row_map],
                                       feature_names=NAMES)
    return X, X.materialize(), rng


def test_columns_by_position_and_name():
    X, T, _ = named_scenario(0)
    close(X[:, ["c", "a"]].materialize(), T[:, [2, 0]])
    assert list(X[:, ["c", "a"]].feature_names) == ["c", "a"]
    close(X[:, "d"], T[:, 3])
    close(X[:, 1], T[:, 1])
    assert X[2, 3] == T[2, 3]
    close(X[[1, 2], "b"], T[[1, 2], 1])
    with pytest.raises(KeyError, match=r"No columns named \['e'\]"):
        X[:, ["a", "e"]]
    with pytest.raises(IndexError, match="by name only in a matrix with feature_names"):
        small_matrix()[:, ["a"]]


def test_setting_whole_columns_stays_factorized():
    X, T, _ = named_scenario(1)
    Y = X.copy()
    Y[:, [0, 2]] = [1.5, -2.0]
    Y[:, "d"] = 4.0
    expected = T.copy()
    expected[:, [0, 2]] = [1.5, -2.0]
    expected[:, 3] = 4.0
    close(Y.materialize(), expected)
    close(Y @ np.ones(4), expected @ np.ones(4))
    close(X.materialize(), T)  # the copy changed alone
    with pytest.raises(NotFactorizableError, match="Setting some rows"):
        Y[0, 1] = 3.0
    with pytest.raises(NotFactorizableError, match="shape"):
        Y[:, 0] = np.arange(30.0)
    with pytest.raises(ValueError, match="Assignment by NaN or infinity"):
        Y[:, 0] = np.nan


@pytest.mark.parametrize("features", [[0], ["c"], [3], ["a", "d"]])
def test_partial_dependence_equals_the_joined_matrix(features):
    X, T, rng = named_scenario(2)
    y = T @ rng.standard_normal(4) + rng.standard_normal(len(T))
    model = FactorizedLinearRegression().fit(X, y)
    frame = pd.DataFrame(T, columns=NAMES)
    got = partial_dependence(model, X, features, kind="both", grid_resolution=8)
    expected = partial_dependence(model, frame, features, kind="both", grid_resolution=8)
    for key in ("average", "individual"):
        close(got[key], expected[key])
    for got_grid, expected_grid in zip(got["grid_values"], expected["grid_values"]):
        close(got_grid, expected_grid)
    assert X.shift is None  # partial_dependence changed its copy only


def test_partial_dependence_of_a_classifier():
    X, T, rng = named_scenario(3)
    y = (T @ rng.standard_normal(4) > 0).astype(int)
    model = FactorizedLogisticRegression().fit(X, y)
    got = partial_dependence(model, X, [2], grid_resolution=6)
    expected = partial_dependence(model, pd.DataFrame(T, columns=NAMES), [2],
                                  grid_resolution=6)
    close(got["average"], expected["average"], rtol=1e-7, atol=1e-9)


@pytest.mark.filterwarnings("ignore::sklearn_ilargi.MaterializationWarning")  # StandardScaler
@pytest.mark.parametrize("remainder", ["drop", "passthrough"])
def test_column_transformer_selects_columns_by_name(remainder):
    X, T, _ = named_scenario(4)
    frame = pd.DataFrame(T, columns=NAMES)

    def transformer():
        return ColumnTransformer([("s", StandardScaler(), ["d", "a"])], remainder=remainder)

    on_matrix, on_frame = transformer(), transformer()
    close(on_matrix.fit_transform(X), on_frame.fit_transform(frame))
    close(on_matrix.transform(X[:7]), on_frame.transform(frame[:7]))
    assert list(on_matrix.get_feature_names_out()) == list(on_frame.get_feature_names_out())
    assert list(on_matrix.feature_names_in_) == NAMES


@pytest.mark.filterwarnings("ignore::sklearn_ilargi.MaterializationWarning")
def test_column_transformer_by_position_without_names():
    X = small_matrix()
    T = X.materialize()
    got = ColumnTransformer([("s", StandardScaler(), [3, 0])]).fit(X)
    assert not hasattr(got, "feature_names_in_")
    close(got.transform(X), ColumnTransformer([("s", StandardScaler(), [3, 0])]).fit_transform(T))
    with pytest.raises(ValueError, match="not columns of the dataframe"):
        ColumnTransformer([("s", StandardScaler(), ["a"])]).fit(X)


def test_scikit_learn_indexing_of_rows_and_columns():
    X, T, _ = named_scenario(5)
    close(_safe_indexing(X, [3, 1]).materialize(), T[[3, 1]])
    close(_safe_indexing(X, 4), T[4])
    close(_safe_indexing(X, "b", axis=1), T[:, 1])
    close(_safe_indexing(X, [True, False, True, False], axis=1).materialize(), T[:, [0, 2]])
    with pytest.raises(TypeError, match="integer indices"):
        _safe_indexing(X, np.arange(len(T)) < 4)


def test_scikit_learn_rows_of_a_fold_are_read_back_as_an_array():
    """``_safe_indexing`` hands a fold's rows to the matrix as a list of Python ints (a
    search does, for every candidate): they come back as one integer array, select the
    rows the array selects (negative positions from the end), and a position out of range
    is refused; the splitter's array is left as it was."""
    from sklearn_ilargi.normalized._frame import _positions

    X, T, _ = named_scenario(5)
    rows = np.array([4, 0, -1, 2])
    kept = rows.copy()
    close(_safe_indexing(X, rows).materialize(), T[rows])
    assert_array_equal(rows, kept)
    read = _positions(rows.tolist())
    assert isinstance(read, np.ndarray) and read.dtype == np.int64
    assert_array_equal(read, rows)
    for other in ([True, False], ["a"], [1.5, 2], []):
        assert _positions(other) is other  # anything but Python ints: numpy's own reading
    with pytest.raises(IndexError, match=f"out of range for {len(T)} rows"):
        _safe_indexing(X, np.array([0, len(T)]))
