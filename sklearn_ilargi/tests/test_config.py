"""The settings: their defaults, their checks, and how set_config and config_context apply them."""

import re

import numpy as np
import pytest

from sklearn_ilargi import config_context, get_config, set_config
from sklearn_ilargi._config import OPTIONS

#: Values each kind of setting refuses.
WRONG_VALUES = {
    "choice": ["fast", 123, None],
    "path": [123, 1.5],
    "cache": [123, 1.5, ""],
    "verbosity": [-1, 1.5, "1"],
    "int": [-1, True, 1.5, "8", None],
    "count": [0, -1, True, 1.5],
    "float": [-0.5, float("nan"), True, "1", None],
    "bytes": [0, -1, float("inf"), float("nan"), True, "1GB"],
}
WRONG = [pytest.param(name, value, id=f"{name}={value!r}")
         for name, option in OPTIONS.items() for value in WRONG_VALUES[option.kind]]


def test_every_kind_of_setting_has_wrong_values_to_check():
    assert {option.kind for option in OPTIONS.values()} <= set(WRONG_VALUES)


def test_the_defaults_are_the_settings_of_a_fresh_process():
    """No test leaves a setting changed, so the settings seen here are the defaults."""
    assert get_config() == {name: option.default for name, option in OPTIONS.items()}


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_every_default_passes_its_own_check(name):
    default = OPTIONS[name].default
    with config_context(**{name: default}):
        assert get_config()[name] == default


@pytest.mark.parametrize("name, value", WRONG)
def test_a_wrong_value_is_refused_naming_the_setting(name, value):
    before = get_config()
    with pytest.raises(ValueError, match=re.escape(f"setting {name!r}")):
        set_config(**{name: value})
    with pytest.raises(ValueError, match=re.escape(f"setting {name!r}")):
        with config_context(**{name: value}):
            pass
    assert get_config() == before


@pytest.mark.parametrize("name, value", [("cost_model", 123), ("strategy", "fast"),
                                         ("gathered_values_per_row", -1.0),
                                         ("dense_storage_max_cells", True),
                                         ("rows_per_gather", 0)])
def test_the_examples_of_wrong_values(name, value):
    with pytest.raises(ValueError, match=re.escape(f"The setting {name!r} must be")):
        set_config(**{name: value})


def test_an_unknown_setting_is_refused_by_name():
    with pytest.raises(ValueError, match="Unknown setting 'dense_cells'"):
        set_config(dense_cells=0)
    with pytest.raises(ValueError, match="Unknown setting 'dense_cells'"):
        with config_context(dense_cells=0):
            pass


def test_a_failed_set_config_changes_nothing():
    before = get_config()
    with pytest.raises(ValueError, match="'cost_model'"):
        set_config(strategy="factorized", pair_slots=3, cost_model=123)
    assert get_config() == before


def test_set_config_changes_until_changed_back():
    try:
        set_config(strategy="materialized", pair_slots=3)
        assert (get_config()["strategy"], get_config()["pair_slots"]) == ("materialized", 3)
    finally:
        set_config(strategy=OPTIONS["strategy"].default,
                   pair_slots=OPTIONS["pair_slots"].default)
    assert get_config()["strategy"] == "auto"


def test_values_are_stored_as_plain_numbers():
    with config_context(rows_per_gather=np.int64(7), dense_storage_density=np.float32(0.5),
                        gathered_values_per_row=2, verbose=True):
        config = get_config()
        assert type(config["rows_per_gather"]) is int and config["rows_per_gather"] == 7
        assert type(config["dense_storage_density"]) is float
        assert type(config["gathered_values_per_row"]) is float
        assert config["verbose"] == 1


def test_config_context_restores_on_exit_and_nests():
    before = get_config()
    with config_context(strategy="factorized", one_thread_cells=0):
        assert get_config()["strategy"] == "factorized"
        with config_context(strategy="materialized"):
            assert get_config()["strategy"] == "materialized"
            assert get_config()["one_thread_cells"] == 0
        assert get_config()["strategy"] == "factorized"
    assert get_config() == before


def test_config_context_restores_on_an_exception():
    before = get_config()
    with pytest.raises(RuntimeError, match="inside"):
        with config_context(backend="cpu", table_chunk_rows=7):
            assert get_config()["table_chunk_rows"] == 7
            raise RuntimeError("inside")
    assert get_config() == before


def test_get_config_returns_a_copy():
    config = get_config()
    config["strategy"] = "factorized"
    assert get_config()["strategy"] == "auto"
