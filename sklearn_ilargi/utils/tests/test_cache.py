"""The cache of expensive results (the ``cache`` setting): same numbers, the right hits.

What is counted are hits and misses (:func:`sklearn_ilargi.cache_info`), never times.
Changing a source in place after a fit cached results over it is the documented unsafe case
(its digest is computed once per object); only the remedy, :func:`clear_cache`, is tested.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from joblib import Memory
from sklearn.model_selection import GridSearchCV

from sklearn_ilargi import (
    FactorizedKMeans,
    FactorizedLinearRegression,
    FactorizedLogisticRegression,
    FactorizedNMF,
    FactorizedPCA,
    FactorizedRidge,
    FactorizedStandardScaler,
    NormalizedMatrix,
    cache_info,
    clear_cache,
    config_context,
    get_config,
)
from sklearn_ilargi._config import OPTIONS
from sklearn_ilargi.utils import TrainingMatrix

N_ROWS = 90

#: One estimator of every family, with what makes its fit repeatable.
ESTIMATORS = {
    "linear_regression": lambda: FactorizedLinearRegression(),
    "ridge": lambda: FactorizedRidge(alpha=0.5),
    "logistic": lambda: FactorizedLogisticRegression(C=0.5),
    "kmeans": lambda: FactorizedKMeans(n_clusters=3, n_init=1, random_state=0),
    "pca": lambda: FactorizedPCA(n_components=2, random_state=0),
    "nmf": lambda: FactorizedNMF(n_components=2, init="nndsvda", max_iter=50),
    "scaler": lambda: FactorizedStandardScaler(),
}
CLASSIFIERS = {"logistic"}
#: The families whose factorized fit asks for results that the cache keeps (logistic
#: regression's solver takes products only).
REUSING = {"linear_regression", "ridge", "kmeans", "pca", "nmf", "scaler"}


def sources(seed=0):
    """A dense fact table, a dense dimension and a sparse one (non-negative, for NMF)."""
    rng = np.random.default_rng(seed)
    fact = rng.random((N_ROWS, 2)) + 1.0
    dense = rng.random((12, 3))
    sparse = sp.random(9, 4, density=0.4, format="csr", random_state=seed)
    return fact, dense, sparse


def row_maps(seed=0):
    rng = np.random.default_rng(seed)
    left = rng.integers(0, 9, N_ROWS)
    left[::7] = -1  # a left join's misses
    return [np.arange(N_ROWS), rng.integers(0, 12, N_ROWS), left]


def star(seed=0, parts=None):
    return NormalizedMatrix.from_matrices(parts or sources(seed), row_maps(seed))


def targets(seed=0):
    rng = np.random.default_rng(seed + 1)
    y = rng.standard_normal(N_ROWS)
    return y, (y > 0).astype(int)


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_cache()
    assert get_config()["cache"] is None
    yield
    clear_cache()
    assert get_config()["cache"] is None


def fitted_arrays(estimator):
    """The fitted attributes that hold numbers."""
    return {name: value for name, value in vars(estimator).items()
            if name.endswith("_") and not name.startswith("_")
            and isinstance(value, (np.ndarray, float, int, np.number))}


def assert_same_bits(first, second):
    assert first.keys() == second.keys()
    for name in first:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name, strict=True)


def total(counts):
    return sum(counts.values())


def gram_counts():
    info = cache_info()
    return info.misses.get("gram", 0), info.hits.get("gram", 0)


# ---------------------------------------------------------------------- the same numbers
@pytest.mark.parametrize("data", ["normalized", "materialized", "dense", "sparse"])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_fits_give_the_same_bits_with_and_without_the_cache(name, data):
    X = star()
    if data == "dense":
        X = X.materialize(sparse=False)
    elif data == "sparse":
        X = sp.csr_matrix(X.materialize(sparse=False))
    y = targets()[1] if name in CLASSIFIERS else targets()[0]
    params = {"strategy": {"normalized": "factorized"}.get(data, data)} if data in (
        "normalized", "materialized") else {}
    if name == "scaler" and data == "sparse":
        params["with_mean"] = False  # as scikit-learn's, which refuses to center sparse data

    def fit():
        return fitted_arrays(ESTIMATORS[name]().set_params(**params).fit(X, y))

    without = fit()
    with config_context(cache="memory"):
        computed = fit()
        misses = total(cache_info().misses)
        reused = fit()
    info = cache_info()
    assert (misses > 0) == (total(info.hits) > 0)
    assert misses > 0 or data != "normalized" or name not in REUSING
    assert total(info.misses) == misses  # the second fit computed nothing the first had
    assert_same_bits(without, computed)
    assert_same_bits(without, reused)


def test_weighted_fits_give_the_same_bits_and_weights_are_keys():
    X, (y, _) = star(), targets()
    weights = np.random.default_rng(3).random(N_ROWS)

    def fit(w):
        return fitted_arrays(FactorizedRidge(strategy="factorized").fit(X, y, sample_weight=w))

    without = fit(weights)
    with config_context(cache="memory"):
        assert_same_bits(without, fit(weights))
        assert gram_counts() == (1, 0)
        assert_same_bits(without, fit(weights.copy()))  # the same weights, by content
        assert gram_counts() == (1, 1)
        fit(weights * 2)
        assert gram_counts() == (2, 1)


# ---------------------------------------------------------------------- the keys
def test_a_fold_gets_its_own_entry_and_the_same_rows_hit():
    X = star()
    fold = np.arange(N_ROWS)[np.arange(N_ROWS) % 3 != 0]
    with config_context(cache="memory"):
        expected = TrainingMatrix(X[fold]).gram()
        TrainingMatrix(X).gram()
        assert gram_counts() == (2, 0)
        again = TrainingMatrix(X[fold.copy()]).gram()  # new row maps, the same rows
        assert gram_counts() == (2, 1)
        TrainingMatrix(X[fold[::-1]]).gram()  # the same rows in another order
        TrainingMatrix(X[fold[1:]]).gram()
        assert gram_counts() == (4, 1)
    np.testing.assert_array_equal(again, expected, strict=True)


@given(st.lists(st.integers(0, N_ROWS - 1), min_size=1, max_size=12),
       st.lists(st.integers(0, N_ROWS - 1), min_size=1, max_size=12))
@settings(max_examples=25, deadline=None)
def test_two_selections_share_an_entry_exactly_when_they_select_the_same_rows(first, second):
    clear_cache()
    X = star()
    with config_context(cache="memory"):
        TrainingMatrix(X[np.array(first)]).column_sums()
        TrainingMatrix(X[np.array(second)]).column_sums()
    hits = cache_info().hits.get("column_sums", 0)
    assert hits == int(first == second)


def test_a_selection_digests_its_rows_once_and_keeps_its_own_copy():
    """The maps of ``X[rows]`` are fingerprinted by the maps they were taken from and the
    rows, one array that they share; the rows are the selection's own copy, so that changing
    the caller's array afterwards changes neither the selection nor its key."""
    X = star()
    rows = np.arange(N_ROWS)[::2].copy()
    selected = X[rows]
    taken = [b.row_map.taken_from for b in selected.blocks if b.row_map.taken_from]
    assert taken and all(rows_of is taken[0][1] for _, rows_of in taken)
    assert not np.shares_memory(taken[0][1], rows)
    key = TrainingMatrix(selected)._key()
    rows[:] = 0
    assert TrainingMatrix(X[np.arange(N_ROWS)[::2]])._key() == key
    assert TrainingMatrix(X[rows])._key() != key
    with config_context(cache="memory"):
        first = TrainingMatrix(selected).gram()
        again = TrainingMatrix(X[np.arange(N_ROWS)[::2]]).gram()
    assert gram_counts() == (1, 1)
    joined = X.materialize()[::2]
    np.testing.assert_allclose(again, joined.T @ joined, rtol=1e-12)
    np.testing.assert_array_equal(first, again, strict=True)


def changed(what):
    """A matrix that differs from :func:`star` in one respect."""
    if what == "source":
        fact, dense, sparse = sources()
        dense = dense.copy()
        dense[0, 0] += 1.0
        return star(parts=(fact, dense, sparse))
    if what == "sparse source":
        fact, dense, sparse = sources()
        sparse = sparse.copy()
        sparse.data[0] += 1.0
        return star(parts=(fact, dense, sparse))
    if what == "row map":
        maps = row_maps()
        maps[1] = maps[1].copy()
        maps[1][0] = (maps[1][0] + 1) % 12
        return NormalizedMatrix.from_matrices(sources(), maps)
    if what == "shift":
        return star().with_shift(np.full(9, 0.5))
    if what == "dtype":
        return NormalizedMatrix.from_matrices(
            [s.astype(np.float32) for s in sources()], row_maps())
    raise ValueError(what)


@pytest.mark.parametrize("what", ["source", "sparse source", "row map", "shift", "dtype"])
def test_a_change_of_the_matrix_misses(what):
    with config_context(cache="memory"):
        TrainingMatrix(star()).gram()
        TrainingMatrix(changed(what)).gram()
    assert gram_counts() == (2, 0)


def test_equal_sources_in_new_objects_hit():
    with config_context(cache="memory"):
        first = TrainingMatrix(star()).gram()
        second = TrainingMatrix(star(parts=tuple(s.copy() for s in sources()))).gram()
    assert gram_counts() == (1, 1)
    np.testing.assert_array_equal(first, second, strict=True)


def test_operations_offsets_and_centers_have_keys_of_their_own():
    X = star()
    mean = TrainingMatrix(X).column_sums() / N_ROWS
    with config_context(cache="memory"):
        matrix = TrainingMatrix(X)
        matrix.gram()
        matrix.centered(mean).gram()
        matrix.centered(mean * 2).gram()
        matrix.column_sums()
        TrainingMatrix(X, offset=mean).column_sums()
    info = cache_info()
    assert info.misses == {"gram": 3, "column_sums": 2}
    assert info.hits == {}


def test_a_centered_matrix_whose_results_are_kept_is_never_built():
    X, (y, _) = star(), targets()
    mean = TrainingMatrix(X).column_sums() / N_ROWS
    with config_context(cache="memory"):
        first = TrainingMatrix(X).centered(mean)
        expected = first.gram(), first.reused_rmatmul(y)
        second = TrainingMatrix(X).centered(mean)
        reused = second.gram(), second.reused_rmatmul(y)
        assert second._X is None  # no source was copied to center it
    for a, b in zip(expected, reused):
        np.testing.assert_array_equal(a, b, strict=True)
    np.testing.assert_array_equal(TrainingMatrix(X).centered(mean).gram(), expected[0],
                                  strict=True)


def test_a_kept_result_is_not_changed_by_its_user():
    X = star()
    with config_context(cache="memory"):
        first = TrainingMatrix(X).gram()
        expected = first.copy()
        first[:] = 0.0
        np.testing.assert_array_equal(TrainingMatrix(X).gram(), expected, strict=True)
        second = TrainingMatrix(X).gram()
        second[:] = 1.0
        np.testing.assert_array_equal(TrainingMatrix(X).gram(), expected, strict=True)


def test_clear_cache_digests_a_changed_source_again():
    fact, dense, sparse = sources()
    X = star(parts=(fact, dense, sparse))
    with config_context(cache="memory"):
        TrainingMatrix(X).gram()
        dense *= 2.0  # the unsafe case: a source changed in place (see the module)
        clear_cache()
        after = TrainingMatrix(X).gram()
    assert gram_counts() == (1, 0)
    np.testing.assert_array_equal(after, TrainingMatrix(X).gram(), strict=True)


def test_iterative_products_are_not_kept():
    X, (y, _) = star(), targets()
    with config_context(cache="memory"):
        TrainingMatrix(X).rmatmul(y)
        TrainingMatrix(X).matmul(np.ones(9))
    assert cache_info().misses == {} and cache_info().entries == 0


def test_off_by_default_and_nothing_is_counted():
    X = star()
    TrainingMatrix(X).gram()
    assert cache_info().misses == {} and cache_info().hits == {}


# ---------------------------------------------------------------------- where results stay
def test_memory_holds_at_most_its_budget_dropping_the_least_recently_used():
    X = star()
    size = TrainingMatrix(X).gram().nbytes
    folds = [np.arange(N_ROWS)[np.arange(N_ROWS) % 3 != k] for k in range(3)]
    with config_context(cache="memory", cache_max_bytes=2 * size):
        for fold in folds:
            TrainingMatrix(X[fold]).gram()
        info = cache_info()
        assert (info.entries, info.nbytes, info.max_bytes) == (2, 2 * size, 2 * size)
        TrainingMatrix(X[folds[2]]).gram()  # kept
        TrainingMatrix(X[folds[0]]).gram()  # dropped: it was used least recently
    assert gram_counts() == (4, 1)
    with config_context(cache="memory", cache_max_bytes=0):
        TrainingMatrix(X).gram()
    assert cache_info().entries == 0


@pytest.mark.parametrize("kind", ["str", "path", "memory"])
def test_a_folder_or_a_joblib_memory_keeps_results_on_disk(tmp_path, kind):
    where = {"str": str(tmp_path), "path": tmp_path,
             "memory": Memory(tmp_path, verbose=0)}[kind]
    X, (y, _) = star(), targets()
    without = fitted_arrays(FactorizedRidge(strategy="factorized").fit(X, y))
    with config_context(cache=where):
        computed = fitted_arrays(FactorizedRidge(strategy="factorized").fit(X, y))
        clear_cache()  # what this process held and counted; the folder stays
        reused = fitted_arrays(FactorizedRidge(strategy="factorized").fit(X, y))
    assert gram_counts() == (0, 1)
    assert cache_info().entries == 0
    assert_same_bits(without, computed)
    assert_same_bits(without, reused)


@pytest.mark.parametrize("value", ["memory", "some/folder", OPTIONS["cache"].default])
def test_the_setting_accepts_its_kinds_of_value(value, tmp_path):
    with config_context(cache=value):
        assert get_config()["cache"] == value
    with config_context(cache=Memory(tmp_path, verbose=0)):
        assert isinstance(get_config()["cache"], Memory)


# ---------------------------------------------------------------------- searches
ALPHAS = {"alpha": [0.01, 0.1, 1.0, 10.0]}


def search(**params):
    return GridSearchCV(FactorizedRidge(strategy="factorized"), ALPHAS, cv=3, **params)


def test_a_grid_search_computes_each_fold_gram_once():
    X, (y, _) = star(), targets()
    without = search().fit(X, y)
    with config_context(cache="memory"):
        cached = search().fit(X, y)
    # Three folds and the refit on every row; every other candidate reads its fold's.
    assert gram_counts() == (3 + 1, 3 * (len(ALPHAS["alpha"]) - 1))
    assert cache_info().misses["rmatmul"] == 3 + 1
    assert cached.best_params_ == without.best_params_
    np.testing.assert_array_equal(cached.cv_results_["mean_test_score"],
                                  without.cv_results_["mean_test_score"], strict=True)
    np.testing.assert_array_equal(cached.best_estimator_.coef_,
                                  without.best_estimator_.coef_, strict=True)


def test_worker_processes_share_a_folder(tmp_path):
    """The candidates that ran in two worker processes left every fold's gram in the
    folder: a search here afterwards computes none."""
    X, (y, _) = star(), targets()
    with config_context(cache=str(tmp_path)):
        in_workers = search(n_jobs=2, refit=False).fit(X, y)
        assert gram_counts() == (0, 0)  # every fit ran in a worker
        here = search(refit=False).fit(X, y)
    assert gram_counts() == (0, 3 * len(ALPHAS["alpha"]))
    # The same grams; the scores' own products ran with other BLAS threads in the workers.
    np.testing.assert_allclose(here.cv_results_["mean_test_score"],
                               in_workers.cv_results_["mean_test_score"], rtol=1e-9,
                               atol=1e-12)
