"""The solver choice: a closed form only where X is narrow and its gram fits in memory."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ilargi import InsufficientMemoryError, NormalizedMatrix, config_context
from sklearn_ilargi.cost import OperationProfile, decide
from sklearn_ilargi.cost._solvers import GRAM_COPIES, choose_solver, closed_form_bytes

CLOSED = OperationProfile(gram=1, rmatmul=2, name="Model", solver="cholesky")
ITERATIVE = OperationProfile(matmul=31, rmatmul=32, iterations=30, name="Model",
                             solver="sparse_cg")
AUTO = OperationProfile(**{**vars(CLOSED), "alternatives": (ITERATIVE,)})


@pytest.fixture
def little_memory():
    """A fit may take at most 1 MiB."""
    with config_context(memory_limit=2**20):
        yield


def star(n_columns=40):
    return NormalizedMatrix.from_matrices(
        [np.arange(8.0)[:, None], sp.random(4, n_columns - 1, density=0.3, random_state=0,
                                             format="csr")],
        [np.arange(8), np.arange(8) % 4])


def test_the_closed_form_bytes_count_its_copies():
    assert closed_form_bytes(1000) == GRAM_COPIES * 8 * 1000**2


def test_the_closed_form_is_kept_up_to_the_column_limit():
    chosen, reason = choose_solver(100, AUTO)
    assert chosen == CLOSED and chosen.alternatives == ()
    assert reason.startswith("100 columns, at most closed_form_max_columns=4096")
    with config_context(closed_form_max_columns=99):
        chosen, reason = choose_solver(100, AUTO)
    assert chosen == ITERATIVE
    assert reason == ("not cholesky: X has 100 columns, more than "
                      "closed_form_max_columns=99")


def test_a_closed_form_whose_gram_does_not_fit_gives_way(little_memory):
    chosen, reason = choose_solver(1000, AUTO)
    assert chosen == ITERATIVE
    assert reason.startswith("not cholesky: its dense 1000 x 1000 gram takes 30.52 MiB with "
                             "its copies, and the host has 1.00 MiB available")


def test_a_named_closed_form_is_checked_for_memory_only(little_memory):
    with config_context(closed_form_max_columns=10):
        chosen, reason = choose_solver(100, CLOSED)  # 0.3 MiB: fits
    assert chosen == CLOSED and reason == "set by the estimator's parameters"
    with pytest.raises(InsufficientMemoryError, match="Model with solver 'cholesky' cannot "
                                                      "run: its dense 1000 x 1000 gram takes"):
        choose_solver(1000, CLOSED)


def test_only_closed_forms_ignore_the_column_limit(little_memory):
    other = OperationProfile(gram=1, name="Model", solver="full")
    both = OperationProfile(**{**vars(CLOSED), "alternatives": (other,)})
    with config_context(closed_form_max_columns=10):
        assert choose_solver(100, both) == (CLOSED, "the only kind of solver the parameters "
                                                    "allow")
        with pytest.raises(MemoryError, match="solver 'cholesky' cannot run"):
            choose_solver(1000, both)


def test_a_fit_without_solvers_has_no_solver_to_name():
    profile = OperationProfile(matmul=1)
    assert choose_solver(0, profile) == (profile, "")
    decision = decide(star(), profile, strategy="factorized", backend="cpu")
    assert decision.solver == "" and "solver:" not in decision.explain()


@pytest.mark.parametrize("n_columns, solver", [(40, "cholesky"), (41, "sparse_cg")])
def test_decide_prices_and_names_the_chosen_solver(n_columns, solver):
    X = star(n_columns)
    with config_context(closed_form_max_columns=40):
        decision = decide(X, AUTO, backend="cpu")
    assert decision.solver == solver and decision.profile.solver == solver
    assert decision.profile.alternatives == ()
    assert decision.features["gram"] == (1.0 if solver == "cholesky" else 0.0)
    assert f"\n  solver: {solver} (" in decision.explain()


def test_plain_input_gets_the_solver_choice_too():
    with config_context(closed_form_max_columns=5):
        decision = decide(sp.random(10, 6, density=0.5, format="csr", random_state=0), AUTO)
    assert decision.strategy == "materialized" and decision.solver == "sparse_cg"
    assert decision.profile == ITERATIVE
