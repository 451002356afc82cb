"""Settings reach the fits that run in worker threads and in worker processes.

Settings are process-wide; an estimator that is pickled to a worker process carries those that
differ from the defaults (``sklearn_ilargi._config.carried_settings``). The process tests are
few and small: starting loky's workers takes seconds (they are reused between those tests).
"""

import os
import pickle
from concurrent.futures import ThreadPoolExecutor

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import GridSearchCV, cross_validate

from sklearn_ilargi import (
    FactorizedLinearRegression,
    FactorizedRidge,
    Join,
    NormalizedMatrix,
    config_context,
    from_tables,
    get_config,
    set_config,
)
from sklearn_ilargi._config import OPTIONS, carried_settings, settings_to_carry
from sklearn_ilargi.tables import _input

DEFAULTS = {name: option.default for name, option in OPTIONS.items()}
#: A threshold setting that the test fits carry along with the strategy.
THRESHOLD = {"gram_join_max_columns": 3}


def low_redundancy(seed=0, n=60):
    """Data on which the cost model chooses the materialized path."""
    rng = np.random.default_rng(seed)
    fact, dim = rng.random((n, 2)), rng.random((50, 3))
    X = NormalizedMatrix.from_matrices([fact, dim], [np.arange(n), rng.integers(0, 50, n)])
    return X, rng.random(n)


class SettingsRecorder(FactorizedLinearRegression):
    """Records the settings that its fit chose its path under."""

    def _dispatch(self, X, *args, **kwargs):
        self.settings_seen_ = get_config()
        return super()._dispatch(X, *args, **kwargs)


def fit_strategy(estimator, X, y):
    return estimator.fit(X, y).strategy_


def fit_and_report(estimator, X, y):
    """What a worker sends back: the strategy, the settings seen, the worker's settings."""
    fitted = estimator.fit(X, y)
    return fitted.strategy_, fitted.settings_seen_, get_config(), os.getpid()


@pytest.fixture
def data():
    X, y = low_redundancy()
    assert fit_strategy(FactorizedLinearRegression(), X, y) == "materialized"
    return X, y


@pytest.fixture(autouse=True)
def settings_are_back():
    assert get_config() == DEFAULTS
    yield
    assert get_config() == DEFAULTS


def test_fits_in_a_thread_pool(data):
    X, y = data
    with config_context(strategy="factorized", **THRESHOLD):
        with ThreadPoolExecutor(2) as pool:
            reports = list(pool.map(lambda _: fit_and_report(SettingsRecorder(), X, y),
                                    range(4)))
    for strategy, seen, _, _ in reports:
        assert strategy == "factorized" and seen["gram_join_max_columns"] == 3


def test_fits_in_joblib_threads(data):
    X, y = data
    with config_context(strategy="factorized", **THRESHOLD):
        reports = joblib.Parallel(n_jobs=2, prefer="threads")(
            joblib.delayed(fit_and_report)(SettingsRecorder(), X, y) for _ in range(4))
    for strategy, seen, _, _ in reports:
        assert strategy == "factorized" and seen["gram_join_max_columns"] == 3


def test_fits_in_joblib_processes(data):
    X, y = data
    with config_context(strategy="factorized", **THRESHOLD):
        reports = joblib.Parallel(n_jobs=2)(
            joblib.delayed(fit_and_report)(SettingsRecorder(), X, y) for _ in range(2))
    for strategy, seen, worker_settings, pid in reports:
        assert pid != os.getpid()
        assert strategy == "factorized" and seen["gram_join_max_columns"] == 3
        assert worker_settings == DEFAULTS  # carried for the fit only
    # The workers are reused: they kept nothing of the carried settings.
    after = joblib.Parallel(n_jobs=2)(
        joblib.delayed(fit_and_report)(SettingsRecorder(), X, y) for _ in range(2))
    for strategy, seen, _, _ in after:
        assert strategy == "materialized" and seen == DEFAULTS


def test_searches_in_processes(data):
    X, y = data
    with config_context(strategy="factorized"):
        search = GridSearchCV(FactorizedRidge(), {"alpha": [0.1, 1.0]}, cv=2, n_jobs=2,
                              scoring=lambda estimator, X, y: estimator.strategy_ == "factorized")
        search.fit(X, y)
        scores = cross_validate(FactorizedRidge(), X, y, cv=2, n_jobs=2, return_estimator=True)
    assert (search.cv_results_["mean_test_score"] == 1).all()
    assert search.best_estimator_.strategy_ == "factorized"  # refitted here, in the block
    assert [e.strategy_ for e in scores["estimator"]] == ["factorized"] * 2


def nested_search(estimator, X, y):
    """In a worker: a search with ``n_jobs=1``, whose candidates are clones."""
    search = GridSearchCV(estimator, {"fit_intercept": [True, False]}, cv=2, refit=False,
                          scoring=lambda e, X, y: e.strategy_ == "factorized")
    return search.fit(X, y).cv_results_["mean_test_score"].tolist()


def test_clones_in_a_worker_carry_the_settings(data):
    X, y = data
    with config_context(strategy="factorized"):
        scores = joblib.Parallel(n_jobs=2)(
            joblib.delayed(nested_search)(FactorizedLinearRegression(), X, y)
            for _ in range(2))
    assert scores == [[1.0, 1.0]] * 2


def set_and_fit(settings, estimator, X, y):
    """In a worker: change its own settings, then fit an estimator that carries others."""
    set_config(**settings)
    try:
        return estimator.fit(X, y).strategy_
    finally:
        set_config(**{name: DEFAULTS[name] for name in settings})


def test_a_processs_own_settings_win(data):
    X, y = data
    with config_context(strategy="factorized"):
        strategies = joblib.Parallel(n_jobs=2)(
            joblib.delayed(set_and_fit)(settings, FactorizedLinearRegression(), X, y)
            for settings in ({"strategy": "materialized"}, {"gram_join_max_columns": 3}, {}))
    # Its own strategy; its own threshold (and so none of the carried); none: the carried.
    assert strategies == ["materialized", "materialized", "factorized"]


def test_carried_settings_apply_in_another_process_only():
    with config_context(strategy="factorized", **THRESHOLD):
        here = settings_to_carry()
    assert here["settings"] == {"strategy": "factorized", **THRESHOLD}
    with carried_settings(here):  # the process that pickled: its own settings only
        assert get_config() == DEFAULTS
    elsewhere = {**here, "process": -1}
    with carried_settings(elsewhere):
        assert get_config() == {**DEFAULTS, "strategy": "factorized", **THRESHOLD}
    with config_context(backend="cpu"), carried_settings(elsewhere):
        assert get_config() == {**DEFAULTS, "backend": "cpu"}
    # Names or values of another version are left out; None carries nothing.
    odd = {"process": -1, "settings": {"strategy": "sideways", "gone": 1, "backend": "cpu"}}
    with carried_settings(odd):
        assert get_config() == {**DEFAULTS, "backend": "cpu"}
    with carried_settings(None):
        assert get_config() == DEFAULTS


def test_a_copy_in_this_process_follows_this_processs_settings(data):
    X, y = data
    with config_context(strategy="factorized"):
        copy = pickle.loads(pickle.dumps(FactorizedLinearRegression()))
    assert fit_strategy(copy, X, y) == "materialized"


def test_pickling_leaves_the_estimator_as_it_was(data):
    X, y = data
    estimator = FactorizedLinearRegression().fit(X, y)
    before = dict(vars(estimator))
    with config_context(strategy="factorized"):
        pickle.dumps(estimator)
    assert vars(estimator).keys() == before.keys()


def test_from_tables_factorizes_in_threads_whatever_joblib_is_told(tmp_path, monkeypatch):
    """The columns are factorized side by side in threads of this process, which see its
    settings (and cache their results on the tables), also where joblib is set to processes."""
    sales = pd.DataFrame({"store": [2, 1, 2, 3, 1, 9], "item": list("abacab")})
    stores = pd.DataFrame({"store": [1, 2, 3, 4], "city": ["Delft", "Leiden", "Delft", "Gouda"],
                           "kind": ["big", "small", "small", "big"]})
    stores.to_parquet(tmp_path / "stores.parquet")  # a Parquet reader cannot be pickled
    expected = from_tables(sales, [Join(stores, on="store")]).materialize()
    seen = []
    factorize = _input.factorize

    def recording(values):
        seen.append((os.getpid(), get_config()["table_chunk_rows"]))
        return factorize(values)

    monkeypatch.setattr(_input, "factorize", recording)
    with joblib.parallel_config(backend="loky", n_jobs=2), config_context(table_chunk_rows=7):
        X = from_tables(sales, [Join(tmp_path / "stores.parquet", on="store")])
    np.testing.assert_array_equal(X.materialize(), expected)
    assert seen and set(seen) == {(os.getpid(), 7)}
