"""What the probes of issue "Reliability" found to hold, kept holding.

No input is ever mutated (estimators, ``from_tables``, ``from_matrices`` and the matrix's
operations); fitted estimators and matrices round-trip through pickle, joblib, deepcopy, clone
and skops; threads sharing one matrix get bit-identical results; scikit-learn's tools run on a
NormalizedMatrix without joining it. The process-based test is one (loky's start-up takes
seconds).
"""

import copy
import inspect
import io
import pickle
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from unittest import mock

import joblib
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal
from sklearn.base import clone
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.model_selection import (
    GridSearchCV,
    HalvingGridSearchCV,
    cross_validate,
    train_test_split,
)
from sklearn.pipeline import make_pipeline

from sklearn_ilargi import (
    FactorizedKMeans,
    FactorizedLinearRegression,
    FactorizedLogisticRegression,
    FactorizedLogisticRegressionCV,
    FactorizedNMF,
    FactorizedPCA,
    FactorizedRidge,
    FactorizedRidgeCV,
    FactorizedStandardScaler,
    Join,
    NormalizedMatrix,
    Union,
    config_context,
    from_tables,
)
from sklearn_ilargi.tests._estimators import estimator_classes
from sklearn_ilargi.tests._scenarios import build, random_scenario, scenarios

SETTINGS = settings(max_examples=25, deadline=None)


# ---------------------------------------------------------------------- snapshots of inputs
def state(x):
    """A deep copy of what ``x`` holds, to compare with :func:`assert_unchanged` later."""
    if isinstance(x, NormalizedMatrix):
        return ("NormalizedMatrix", x.shape, x.dtype, state(x.shift), state(x.feature_names),
                [(state(b.source), state(b.row_map.indices), b.row_map.n_source,
                  state(b.columns)) for b in x.blocks])
    if isinstance(x, (list, tuple)):
        return type(x)(state(item) for item in x)
    if isinstance(x, dict):
        return {key: state(value) for key, value in x.items()}
    if sp.issparse(x) or isinstance(x, (np.ndarray, pd.DataFrame, pd.Series)):
        return x.copy()
    return x


def assert_unchanged(before, x):
    """``x`` holds what it held when ``before = state(x)`` was taken, to the bit."""
    _assert_same(before, state(x))


def _assert_same(before, after):
    assert type(before) is type(after)
    if isinstance(before, (list, tuple)):
        assert len(before) == len(after)
        for b, a in zip(before, after):
            _assert_same(b, a)
    elif isinstance(before, dict):
        assert before.keys() == after.keys()
        for key in before:
            _assert_same(before[key], after[key])
    elif sp.issparse(before):  # its arrays as stored: sorting them in place is a change too
        assert (before.format, before.shape, before.dtype) == (after.format, after.shape,
                                                               after.dtype)
        for name in ("data", "indices", "indptr", "row", "col", "offsets"):
            if hasattr(before, name):
                assert_array_equal(getattr(before, name), getattr(after, name))
    elif isinstance(before, pd.DataFrame):
        pd.testing.assert_frame_equal(before, after, check_exact=True)
    elif isinstance(before, pd.Series):
        pd.testing.assert_series_equal(before, after, check_exact=True)
    elif isinstance(before, np.ndarray):
        assert (before.dtype, before.shape) == (after.dtype, after.shape)
        assert_array_equal(before, after)
    else:
        assert before == after or (before != before and after != after)


# ---------------------------------------------------------------------- data
def matrix_and_join(seed, n_target=40):
    """A random scenario with a fact table (so that every target row has values)."""
    rng = np.random.default_rng(seed)
    sources, row_maps, column_maps, n_columns = random_scenario(rng, n_target=n_target)
    sources.insert(0, rng.standard_normal((n_target, 2)))
    row_maps.insert(0, np.arange(n_target))
    column_maps = [np.array([n_columns, n_columns + 1])] + column_maps
    nm = build((sources, row_maps, column_maps, n_columns + 2))
    return nm, nm.materialize(sparse=False)


def targets(T, seed):
    """(regression target, class labels, sample weights) for the rows of ``T``."""
    rng = np.random.default_rng(seed)
    y = T @ rng.standard_normal(T.shape[1]) + 0.1 * rng.standard_normal(len(T))
    labels = (y > np.median(y)).astype(int)
    return y, labels, rng.uniform(0.5, 2.0, len(T))


def as_input(kind, nm, T):
    """The data of ``nm`` as the estimator input ``kind``."""
    if kind == "normalized":
        return nm
    if kind == "sparse":
        return sp.csr_matrix(T)
    if kind == "frame":
        return pd.DataFrame(T, columns=[f"c{j}" for j in range(T.shape[1])])
    return T


#: (estimator, its target: "regression", "labels" or None, whether it needs X >= 0)
ESTIMATORS = [
    (FactorizedLinearRegression(), "regression", False),
    (FactorizedRidge(alpha=0.5), "regression", False),
    (FactorizedRidge(solver="gd", max_iter=30), "regression", False),
    (FactorizedRidgeCV(), "regression", False),
    (FactorizedRidgeCV(cv=3), "regression", False),
    (FactorizedLogisticRegression(max_iter=30), "labels", False),
    (FactorizedLogisticRegressionCV(Cs=2, cv=3, max_iter=30), "labels", False),
    (FactorizedKMeans(n_clusters=2, n_init=1, max_iter=10, random_state=0), None, False),
    (FactorizedPCA(n_components=2, random_state=0), None, False),
    (FactorizedNMF(n_components=2, max_iter=30, random_state=0), None, True),
    (FactorizedStandardScaler(), None, False),
]
ESTIMATOR_IDS = [f"{type(e).__name__}-{i}" for i, (e, _, _) in enumerate(ESTIMATORS)]
METHODS = ("predict", "predict_proba", "decision_function", "transform", "score",
           "score_samples")


def fit_arguments(estimator, target, X, T, seed, *, weighted=True):
    """The arguments of ``estimator.fit`` for data ``X`` (whose join is ``T``)."""
    y, labels, weights = targets(T, seed)
    y = {"regression": y, "labels": labels, None: None}[target]
    if isinstance(X, pd.DataFrame) and y is not None:
        y = pd.Series(y, name="y")
    kwargs = {"sample_weight": weights} if weighted and _takes_weights(estimator) else {}
    return ([X] if y is None else [X, y]), kwargs


def _takes_weights(estimator):
    return "sample_weight" in inspect.signature(estimator.fit).parameters


def every_call(estimator, args, kwargs):
    """Fit, then every method the fitted estimator has, on the same inputs."""
    fitted = clone(estimator).fit(*args, **kwargs)
    for method in METHODS:
        if hasattr(fitted, method):
            try:
                getattr(fitted, method)(*(args if method == "score" else args[:1]))
            except TypeError as error:  # PCA's score refuses sparse data, as scikit-learn's
                if not (sp.issparse(args[0]) and "Sparse data was passed" in str(error)):
                    raise
    if hasattr(fitted, "fit_transform"):
        clone(estimator).fit_transform(*args, **kwargs)
    if hasattr(fitted, "inverse_transform"):
        Z = fitted.transform(args[0])
        before = state(Z)
        fitted.inverse_transform(Z)
        assert_unchanged(before, Z)
    return fitted


# ---------------------------------------------------------------------- no mutation
def test_the_probes_cover_every_estimator():
    assert {type(estimator) for estimator, _, _ in ESTIMATORS} == set(estimator_classes())


@pytest.mark.parametrize("estimator, target, nonnegative", ESTIMATORS, ids=ESTIMATOR_IDS)
@pytest.mark.parametrize("kind", ["normalized", "dense", "sparse", "frame"])
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_estimators_leave_their_inputs_unchanged(estimator, target, nonnegative, kind):
    if kind == "sparse" and not estimator.__sklearn_tags__().input_tags.sparse:
        pytest.skip(f"{type(estimator).__name__} takes no sparse input")
    strategies = ("factorized", "materialized") if kind == "normalized" else ("auto",)
    for seed in range(2):
        nm, T = matrix_and_join(seed)
        if nonnegative:
            nm, T = abs(nm), np.abs(T)
        args, kwargs = fit_arguments(estimator, target, as_input(kind, nm, T), T, seed)
        before = state((args, kwargs))
        for strategy in strategies:
            every_call(clone(estimator).set_params(strategy=strategy), args, kwargs)
            assert_unchanged(before, (args, kwargs))


@pytest.mark.parametrize("estimator", [FactorizedPCA(n_components=2, copy=False),
                                       FactorizedStandardScaler(copy=False),
                                       FactorizedKMeans(n_clusters=2, n_init=1, copy_x=False)])
@pytest.mark.parametrize("strategy", ["factorized", "materialized"])
def test_copy_false_never_writes_into_a_matrixs_sources(estimator, strategy):
    """``copy=False`` lets scikit-learn scale an array in place; a NormalizedMatrix's sources
    are its own (the user's arrays, shared by every selection of rows), never scratch."""
    for nm in (matrix_and_join(0)[0],
               NormalizedMatrix.from_matrices([np.random.default_rng(1).random((30, 3))],
                                              [np.arange(30)])):
        before = state(nm)
        every_call(clone(estimator).set_params(strategy=strategy), [nm], {})
        assert_unchanged(before, nm)


def operands(nm, seed):
    """Operands of every shape that the matrix's operations take."""
    rng = np.random.default_rng(seed)
    n, c = nm.shape
    return {
        "vector": rng.standard_normal(c),
        "columns": rng.standard_normal((c, 3)),
        "fortran": np.asfortranarray(rng.standard_normal((c, 2))),
        "sparse": sp.random(c, 2, density=0.5, format="csr", random_state=seed),
        "rows": rng.standard_normal((n, 2)),
        "left": rng.standard_normal((2, n)),
        "weights": rng.uniform(0.5, 2.0, n),
        "factors": rng.uniform(0.5, 2.0, c),
        "selection": rng.integers(0, n, n // 2),
        "labels": rng.integers(0, 3, n),
        "mask": rng.random(n) < 0.5,
        "picked": np.flatnonzero(rng.random(c) < 0.5),
    }


def every_operation(nm, o):
    """Each operation of a NormalizedMatrix, once, with the operands ``o``."""
    nm @ o["vector"], nm @ o["columns"], nm @ o["fortran"], nm @ o["sparse"]
    nm.T @ o["rows"], o["left"] @ nm, nm.T @ nm, nm.T @ nm[np.arange(nm.shape[0])]
    nm.gram(), nm.gram(o["weights"]), nm.group_sums(o["labels"], 3, o["weights"])
    nm.sum(), nm.sum(axis=0), nm.sum(axis=1), nm.mean(axis=0), nm.row_norms()
    nm.min(axis=0), nm.max(axis=0), nm.all_finite()
    (nm * o["factors"]) @ o["vector"], (nm * 2.0).gram(), (nm / o["factors"]).gram()
    (nm + o["factors"]) @ o["vector"], (nm - 1.0).gram(), (-nm).T @ o["rows"]
    nm.apply(np.sin).gram(), abs(nm).materialize(), (nm ** 2).sum(axis=0)
    nm[o["selection"]] @ o["vector"], nm[o["mask"]].gram(), nm[:, o["picked"]].gram()
    nm[o["selection"], o["picked"]].materialize(), nm.materialize(), nm.toarray()
    nm.with_shift(o["factors"]).gram(), nm.copy()
    changed = nm.copy()
    changed[:, 0] = 3.0
    changed[o["selection"]] @ o["vector"]
    selected = nm[o["selection"]]
    selected[:, 0] = -1.0
    selected.gram()


@SETTINGS
@given(scenarios(), st.integers(0, 2**32 - 1))
def test_matrix_operations_leave_the_matrix_and_operands_unchanged(case, seed):
    nm, _ = case
    if 0 in nm.shape:
        return
    o = operands(nm, seed)
    before = state((nm, list(o.values())))
    every_operation(nm, o)
    assert_unchanged(before, (nm, list(o.values())))


@SETTINGS
@given(st.integers(0, 2**32 - 1))
def test_from_matrices_leaves_its_inputs_unchanged(seed):
    rng = np.random.default_rng(seed)
    sources, row_maps, column_maps, n_columns = random_scenario(rng, n_target=20)
    # Besides the scenario's: integers, float32, a CSC, a CSR with unsorted indices and a
    # duplicate entry, a DataFrame; an int32 row map, an indicator matrix, a list, a Series;
    # mapping matrices.
    unsorted = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 4.0]), np.array([2, 0, 1, 1]),
                              np.array([0, 2, 4])), shape=(2, 3))
    frame = pd.DataFrame({"a": rng.random(3), "b": rng.integers(0, 5, 3)})
    extra = [rng.integers(-3, 3, (4, 2)), rng.random((3, 2)).astype(np.float32),
             sp.csc_matrix(rng.random((5, 2))), unsorted, frame]
    extra_maps = [rng.integers(-1, 4, 20).astype(np.int32),
                  sp.csr_matrix(np.eye(3)[rng.integers(0, 3, 20)]),
                  list(rng.integers(0, 5, 20)), rng.integers(0, 2, 20),
                  pd.Series(rng.integers(-1, 3, 20))]
    first = np.cumsum([n_columns] + [s.shape[1] for s in extra])
    width = int(first[-1])
    mappings = [sp.csr_matrix((np.ones(s.shape[1]), (start + np.arange(s.shape[1]),
                                                     np.arange(s.shape[1]))),
                              shape=(width, s.shape[1])) for s, start in zip(extra, first)]
    arguments = (sources + extra, row_maps + extra_maps, column_maps + mappings)
    before = state(arguments)
    nm = NormalizedMatrix.from_matrices(*arguments, n_columns=width)
    every_operation(nm, operands(nm, seed))
    assert_unchanged(before, arguments)


def tables(seed):
    """Random tables of every kind of column, and joins of every kind over them."""
    rng = np.random.default_rng(seed)
    n, n_dim = 12, 5
    base = pd.DataFrame({
        "k": rng.integers(0, n_dim + 1, n),  # some keys match nothing
        "x": rng.standard_normal(n),
        "flag": rng.random(n) < 0.5,
        "when": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 9, n), "D"),
        "city": rng.choice(["Delft", "Gouda", None], n),
        "kind": pd.Categorical(rng.choice(["a", "b"], n)),
        "target": rng.standard_normal(n),
    })
    base.loc[rng.random(n) < 0.2, "x"] = np.nan
    dim = pd.DataFrame({"k": rng.permutation(n_dim), "x": rng.standard_normal(n_dim),
                        "size": pd.array(rng.integers(0, 9, n_dim), dtype="Int64"),
                        "m": rng.integers(0, 3, n_dim)})
    many = pd.DataFrame({"m": rng.integers(0, 3, 6), "w": rng.standard_normal(6)})
    other = base.sample(frac=0.5, random_state=seed).reset_index(drop=True)
    pairs = (rng.integers(0, n, 4), rng.integers(0, n_dim, 4))
    how = str(rng.choice(["inner", "left", "outer"]))
    joins = [Join(dim, on="k", how=how, overlap="suffix", name="dim"),
             Join(many, on="m", how="left", parent="dim"),
             Join(dim, pairs=pairs, how="left", overlap="suffix", name="matched")]
    return base, other, dim, many, joins


@pytest.mark.parametrize("seed", range(4))
def test_from_tables_leaves_its_tables_unchanged(seed):
    base, other, dim, many, joins = tables(seed)
    frames = [base, other, dim, many]
    before = state(frames)
    from_tables(base, joins, target="target")
    from_tables(Union([base, other]), joins[:2], target="target", fill_value=-1.0)
    from_tables(base, [Join(dim, on="k", overlap="coalesce")],
                features=["k", "x", "size", "city"])
    assert_unchanged(before, frames)


# ---------------------------------------------------------------------- round trips
def fitted_on_a_matrix(estimator, target, nonnegative, seed=0):
    nm, T = matrix_and_join(seed)
    if nonnegative:
        nm, T = abs(nm), np.abs(T)
    args, kwargs = fit_arguments(estimator, target, nm, T, seed)
    with config_context(strategy="factorized"):
        return clone(estimator).fit(*args, **kwargs), args, kwargs


def outputs(estimator, X):
    """What the fitted ``estimator`` says about ``X``."""
    return [getattr(estimator, method)(X) for method in METHODS[:4]
            if hasattr(estimator, method)]


def assert_same_outputs(first, second):
    for a, b in zip(first, second, strict=True):
        assert_array_equal(a.materialize() if isinstance(a, NormalizedMatrix) else a,
                           b.materialize() if isinstance(b, NormalizedMatrix) else b)


def by_joblib(x):
    buffer = io.BytesIO()
    joblib.dump(x, buffer)
    buffer.seek(0)
    return joblib.load(buffer)


def by_skops(x):
    skops_io = pytest.importorskip("skops.io")
    data = skops_io.dumps(x)
    return skops_io.loads(data, trusted=skops_io.get_untrusted_types(data=data))


ROUND_TRIPS = {"pickle": lambda x: pickle.loads(pickle.dumps(x)), "joblib": by_joblib,
               "deepcopy": copy.deepcopy, "skops": by_skops}


@pytest.mark.parametrize("estimator, target, nonnegative", ESTIMATORS, ids=ESTIMATOR_IDS)
@pytest.mark.parametrize("how", ROUND_TRIPS)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fitted_estimators_round_trip(estimator, target, nonnegative, how):
    fitted, args, _ = fitted_on_a_matrix(estimator, target, nonnegative)
    X = args[0]
    again = ROUND_TRIPS[how](fitted)
    assert type(again) is type(fitted) and again.get_params() == fitted.get_params()
    assert_same_outputs(outputs(again, X), outputs(fitted, X))
    assert_same_outputs(outputs(fitted, ROUND_TRIPS[how](X)), outputs(fitted, X))


@pytest.mark.parametrize("estimator, target, nonnegative", ESTIMATORS, ids=ESTIMATOR_IDS)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_clone_fits_the_same_model(estimator, target, nonnegative):
    fitted, args, kwargs = fitted_on_a_matrix(estimator, target, nonnegative)
    with config_context(strategy="factorized"):
        refitted = clone(fitted).fit(*args, **kwargs)
    assert_same_outputs(outputs(refitted, args[0]), outputs(fitted, args[0]))


@pytest.mark.parametrize("how", ROUND_TRIPS)
def test_matrices_round_trip(how):
    for seed in range(3):
        nm = matrix_and_join(seed)[0] - 0.5
        o = operands(nm, seed)
        again = ROUND_TRIPS[how](nm)
        for operation in (lambda X: X @ o["columns"], lambda X: X.T @ o["rows"],
                          lambda X: X.gram(o["weights"]), lambda X: X[o["selection"]].gram(),
                          lambda X: X.materialize()):
            assert_array_equal(operation(again), operation(nm))
        assert_array_equal(again.feature_names, nm.feature_names)


# ---------------------------------------------------------------------- threads
def shared_star(seed=0, n_target=3000):
    """A star with a fact table, dense and sparse dimensions and left-join misses."""
    rng = np.random.default_rng(seed)
    dims = [rng.standard_normal((40, 6)), sp.random(30, 50, density=0.1, format="csr",
                                                      random_state=seed),
            rng.standard_normal((25, 3))]
    row_maps = [np.arange(n_target)] + [rng.integers(-1, d.shape[0], n_target)
                                  for d in dims]
    return NormalizedMatrix.from_matrices([rng.standard_normal((n_target, 3))] + dims,
                                          row_maps)


def thread_work(nm, seed=0):
    """Products and fits on ``nm``, forced factorized."""
    rng = np.random.default_rng(seed)
    n, c = nm.shape
    w, x, r = rng.uniform(0.5, 2, n), rng.standard_normal((c, 2)), rng.standard_normal((n, 2))
    y = nm @ rng.standard_normal(c)
    labels = (y > 0).astype(int)
    return [
        nm @ x, nm.T @ r, nm.gram(), nm.gram(w), nm.T @ nm[np.arange(n)],
        FactorizedRidge(strategy="factorized").fit(nm, y, sample_weight=w).coef_,
        FactorizedLogisticRegression(strategy="factorized", max_iter=20)
        .fit(nm, labels).coef_,
        FactorizedKMeans(3, n_init=1, max_iter=5, random_state=0, strategy="factorized")
        .fit(nm).cluster_centers_,
        FactorizedPCA(2, strategy="factorized", random_state=0).fit(nm).components_,
    ]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_four_threads_on_one_matrix_agree_to_the_bit():
    # Small thresholds, so that the products also cut the rows into slices on threads of
    # their own, and the threads share the matrix's caches from cold.
    with config_context(parallel_slice_rows=500, parallel_group_rows=500):
        expected = thread_work(shared_star())
        nm = shared_star()
        start = threading.Barrier(4)

        def work(_):
            start.wait()
            return [thread_work(nm) for _ in range(2)]

        with ThreadPoolExecutor(4) as pool:
            results = [r for runs in pool.map(work, range(4)) for r in runs]
    for result in results:
        for got, want in zip(result, expected, strict=True):
            assert_array_equal(got, want)


# ---------------------------------------------------------------------- scikit-learn tools
@contextmanager
def joins_refused(max_rows=0):
    """Make ``NormalizedMatrix.materialize`` fail on more than ``max_rows`` rows (K-means'
    initialization joins the few rows it picks as centers)."""
    materialize = NormalizedMatrix.materialize

    def guarded(self, *args, **kwargs):
        if self.shape[0] > max_rows:
            raise AssertionError(f"a {self.shape[0]} x {self.shape[1]} NormalizedMatrix "
                                 "was joined")
        return materialize(self, *args, **kwargs)

    with mock.patch.object(NormalizedMatrix, "materialize", guarded):
        yield


class RidgeThatNeverJoins(FactorizedRidge):
    """A factorized ridge whose fit and score fail if they join (in whatever process)."""

    def fit(self, X, y, sample_weight=None):
        with joins_refused():
            return super().fit(X, y, sample_weight)

    def score(self, X, y, sample_weight=None):
        with joins_refused():
            return super().score(X, y, sample_weight)


def tool_data(seed=0, n_target=120):
    rng = np.random.default_rng(seed)
    nm = NormalizedMatrix.from_matrices(
        [rng.standard_normal((n_target, 2)), rng.standard_normal((8, 3)),
         rng.standard_normal((5, 2))],
        [np.arange(n_target), rng.integers(0, 8, n_target), rng.integers(-1, 5, n_target)],
        feature_names=[f"f{j}" for j in range(7)])
    y = nm @ rng.standard_normal(7) + 0.1 * rng.standard_normal(n_target)
    return nm, y, (y > np.median(y)).astype(int)


def test_the_guard_sees_a_join():
    X, y, _ = tool_data()
    RidgeThatNeverJoins(strategy="factorized").fit(X, y).score(X, y)
    with pytest.raises(AssertionError, match="NormalizedMatrix was joined"):
        RidgeThatNeverJoins(strategy="materialized").fit(X, y)


def test_searches_in_worker_processes_never_join():
    X, y, _ = tool_data()
    search = GridSearchCV(RidgeThatNeverJoins(strategy="factorized"), {"alpha": [0.1, 1.0]},
                          cv=2, n_jobs=2, error_score="raise").fit(X, y)
    scores = cross_validate(RidgeThatNeverJoins(strategy="factorized"), X, y, cv=2, n_jobs=2,
                            error_score="raise")
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert np.isfinite(scores["test_score"]).all()
    with pytest.raises(AssertionError, match="NormalizedMatrix was joined"):  # seen there too
        cross_validate(RidgeThatNeverJoins(strategy="materialized"), X, y, cv=2, n_jobs=2,
                       error_score="raise")


FACTORIZED = {"strategy": "factorized"}
TOOL_ESTIMATORS = [
    (FactorizedRidge(**FACTORIZED), {"alpha": [0.1, 1.0, 10.0]}, "regression"),
    (FactorizedLogisticRegression(**FACTORIZED), {"C": [0.1, 1.0, 10.0]}, "labels"),
    (FactorizedKMeans(2, n_init=1, random_state=0, **FACTORIZED), {"n_clusters": [2, 3, 4]},
     None),
    (make_pipeline(FactorizedStandardScaler(**FACTORIZED), FactorizedPCA(3, **FACTORIZED),
                   FactorizedLogisticRegression()), {"factorizedpca__n_components": [2, 3, 4]},
     "labels"),
    (make_pipeline(FactorizedStandardScaler(**FACTORIZED), FactorizedRidge(**FACTORIZED)),
     {"factorizedridge__alpha": [0.1, 1.0, 10.0]}, "regression"),
    (FactorizedRidgeCV(cv=3, **FACTORIZED), {"fit_intercept": [True, False]}, "regression"),
]


@pytest.mark.parametrize("estimator, grid, target", TOOL_ESTIMATORS,
                         ids=lambda p: type(p).__name__ if hasattr(p, "fit") else "")
def test_scikit_learn_tools_never_join(estimator, grid, target):
    X, y, labels = tool_data()
    y = {"regression": y, "labels": labels, None: None}[target]
    with joins_refused(max_rows=4), joblib.parallel_config(backend="threading", n_jobs=2):
        if y is None:
            (X_train, X_test), y_train, y_test = train_test_split(X, random_state=0), None, None
        else:
            X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
        assert isinstance(X_train, NormalizedMatrix)
        fitted = clone(estimator).fit(X_train, y_train)
        score = fitted.score(X_test, y_test)
        scores = cross_validate(estimator, X, y, cv=3, n_jobs=2)
        search = GridSearchCV(estimator, grid, cv=3, n_jobs=2).fit(X, y)
        halving = HalvingGridSearchCV(estimator, grid, cv=3, factor=2, min_resources=40,
                                      n_jobs=2, random_state=0).fit(X, y)
    assert np.isfinite([score, *scores["test_score"], search.best_score_,
                        halving.best_score_]).all()
    # The same numbers as scikit-learn's tools on the join.
    T = X.materialize()
    joined = GridSearchCV(estimator, grid, cv=3).fit(T, y)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               joined.cv_results_["mean_test_score"], rtol=1e-6, atol=1e-8)
