"""The memory check of the cross-validated estimators' materialized paths.

On a dense join, ``FactorizedRidgeCV`` and ``FactorizedLogisticRegressionCV`` copy it (a
centered copy, a fold's selected rows and their centered copy): the copies count in the
estimate of the path's peak, so that a path which passes the check runs within the memory
it was allowed, and a limit that cannot hold the copies rules the path out before anything
is allocated.
"""

import tracemalloc

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_ilargi import (
    FactorizedLogisticRegressionCV,
    FactorizedRidgeCV,
    InsufficientMemoryError,
    NormalizedMatrix,
    config_context,
)
from sklearn_ilargi.cost._candidates import MEMORY_HEADROOM, Candidate
from sklearn_ilargi.cost._features import candidate_features
from sklearn_ilargi.cost._memory import peak_bytes

N_ROWS, N_COLUMNS = 8000, 60
JOIN_BYTES = N_ROWS * N_COLUMNS * 8

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

#: (estimator, settings) of every path of the two estimators that copies a dense join.
COPYING = {
    "leave-one-out": (FactorizedRidgeCV(), {}),
    "5 folds": (FactorizedRidgeCV(cv=5), {}),
    "5 folds, each from its own rows": (FactorizedRidgeCV(cv=5),
                                        {"cv_gram_max_cancellation": 0.5}),
    "5 folds without intercept": (FactorizedRidgeCV(cv=5, fit_intercept=False), {}),
    "5 folds, conjugate gradients": (FactorizedRidgeCV(cv=5),
                                     {"closed_form_max_columns": 10}),
    "5 folds, conjugate gradients without intercept": (
        FactorizedRidgeCV(cv=5, fit_intercept=False), {"closed_form_max_columns": 10}),
    "logistic, 5 folds": (FactorizedLogisticRegressionCV(Cs=2, cv=5, max_iter=20), {}),
}
EVERY = {**COPYING, "leave-one-out without intercept": (FactorizedRidgeCV(fit_intercept=False),
                                                        {})}


@pytest.fixture(scope="module")
def star():
    """A dense star whose join is 8000 x 60 (3.7 MiB), with a target of each kind."""
    rng = np.random.default_rng(0)
    fact, dim = rng.standard_normal((N_ROWS, 20)), rng.standard_normal((200, 40))
    X = NormalizedMatrix.from_matrices([fact, dim],
                                       [np.arange(N_ROWS), rng.integers(0, 200, N_ROWS)])
    y = X.materialize() @ rng.standard_normal(N_COLUMNS) + rng.standard_normal(N_ROWS)
    return X, y, (y > np.median(y)).astype(int)


def fit(model, star):
    X, y, labels = star
    return model.fit(X, labels if isinstance(model, FactorizedLogisticRegressionCV) else y)


def traced_peak(run):
    """The peak of the memory that Python allocations take while ``run()`` runs, in bytes,
    and what it returns."""
    tracemalloc.start()
    try:
        out = run()
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


def materialized_needs(decision):
    """The bytes that the materialized path needs at its peak beyond the sources, as the
    memory check estimates them: without the copies of the join, and with them."""
    shared = decision.features
    row = candidate_features(shared, "cpu", "materialized")
    resident = shared["fact_bytes"]
    return row["path_memory"] - resident, peak_bytes(shared, row, decision.profile) - resident


@pytest.mark.parametrize("case", list(EVERY))
def test_the_materialized_path_runs_within_what_the_check_allowed(star, case):
    """A path that passes the check may plan to take MEMORY_HEADROOM of the memory: what it
    allocates stays within the memory that its estimate asked for."""
    model, settings = EVERY[case]
    with config_context(**settings):
        peak, fitted = traced_peak(lambda: fit(clone(model).set_params(
            strategy="materialized"), star))
    assert fitted.decision_.features["mat_sparse"] == 0.0
    _, estimate = materialized_needs(fitted.decision_)
    assert peak <= estimate / MEMORY_HEADROOM


@pytest.mark.parametrize("case", list(COPYING))
def test_a_limit_that_cannot_hold_the_copies_rules_the_path_out(star, case):
    """Under a limit that holds the join but not its copies, auto runs factorized and
    explains why; forced, the materialized path raises before it allocates the join,
    naming the estimator, the strategy and the bytes."""
    model, settings = COPYING[case]
    name = type(model).__name__
    with config_context(**settings):
        reference = fit(clone(model).set_params(strategy="factorized"), star)
        without_copies, with_copies = materialized_needs(reference.decision_)
        assert with_copies >= without_copies + JOIN_BYTES
        limit = (without_copies + with_copies) / 2 / MEMORY_HEADROOM
        with config_context(memory_limit=limit):
            auto = fit(clone(model), star)
            forced = clone(model).set_params(strategy="materialized")
            peak, caught = traced_peak(lambda: pytest.raises(InsufficientMemoryError, fit,
                                                             forced, star))
    assert auto.strategy_ == "factorized"
    assert Candidate("cpu", "materialized") in auto.decision_.infeasible
    assert "infeasible: the path needs" in auto.decision_.explain()
    assert caught.match(rf"^{name} cannot run with strategy='materialized'( \(solver '\w+'\))?"
                        r": cpu/materialized: the path needs [\d.]+ MiB more at its peak, more "
                        r"than the [\d.]+ MiB it may take")
    assert peak < JOIN_BYTES / 4
