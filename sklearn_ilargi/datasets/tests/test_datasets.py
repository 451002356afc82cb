"""Synthetic scenarios and TPC-H (tiny scale factor, generated into a temporary cache)."""

import re
import sys
import sysconfig

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_ilargi import from_tables
from sklearn_ilargi.datasets import (
    join_with_pandas, load_tpch, make_scenario, make_star, tpch_training_set)
from sklearn_ilargi.datasets._tpch import GENERATOR_MISSING, generator_path, tpch_description

INSTALL_HINT = 'pip install "sklearn-ilargi[datasets]"'
needs_tpchgen = pytest.mark.skipif(generator_path() is None, reason=GENERATOR_MISSING)


def hide_tpchgen(monkeypatch, empty_folder):
    """Make this Python's script folders and PATH an empty folder: no tpchgen-cli."""
    monkeypatch.setattr(sysconfig, "get_path", lambda *args, **kwargs: str(empty_folder))
    monkeypatch.setattr(sys, "executable", str(empty_folder / "python"))
    monkeypatch.setenv("PATH", str(empty_folder))


def test_make_star_shapes_and_ratios():
    s = make_star(1000, 3, tuple_ratio=20, feature_ratio=0.5, n_fact_features=4,
                  n_categories=5, random_state=0)
    assert set(s.tables) == {"fact", "dim0", "dim1", "dim2"}
    assert len(s.base) == 1000 and all(len(s.tables[f"dim{d}"]) == 50 for d in range(3))
    X, y = from_tables(s.base, s.joins, target=s.target)
    assert X.shape == (1000, 4 + 3 * (2 + 5))
    assert y.shape == (1000,)


def test_make_scenario_is_seeded():
    a = make_scenario(300, 2, depth=2, n_overlap=1, unmatched=0.1, how="left",
                      random_state=4)
    b = make_scenario(300, 2, depth=2, n_overlap=1, unmatched=0.1, how="left",
                      random_state=4)
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name])
    assert {"dim0_1", "dim1_1"} <= set(a.tables)


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_make_scenario_equals_pandas(how):
    s = make_scenario(400, 2, tuple_ratio=4, depth=2, n_overlap=2, n_categories=3,
                      sparsity=0.5, unmatched=0.1, how=how, random_state=5)
    out = from_tables(s.base, s.joins, target=s.target)
    X = out[0] if s.target else out
    ref = join_with_pandas(s.base, s.joins, target=s.target)
    frame = ref[0] if s.target else ref
    ours = pd.DataFrame(X.materialize(), columns=X.feature_names)[frame.columns].to_numpy()
    expected = frame.to_numpy()
    if how == "outer":
        ours, expected = (a[np.lexsort(a.T[::-1])] for a in (ours, expected))
    assert_allclose(ours, expected, rtol=1e-12)


@pytest.fixture(scope="module")
def tpch_home(tmp_path_factory):
    return tmp_path_factory.mktemp("tpch_cache")


@needs_tpchgen
def test_load_tpch_generates_once(tpch_home):
    tables = load_tpch(0.01, tpch_home)
    assert len(tables["lineitem"]) == 60175 and len(tables["nation"]) == 25
    assert tables["lineitem"]["l_extendedprice"].dtype == np.float64
    assert np.issubdtype(tables["orders"]["o_orderdate"].dtype, np.datetime64)
    folder = tpch_home / "tpch" / "sf0.01"
    stamp = (folder / "lineitem.parquet").stat().st_mtime
    load_tpch(0.01, tpch_home, tables=["nation"])
    assert (folder / "lineitem.parquet").stat().st_mtime == stamp


@needs_tpchgen
def test_tpch_training_set_equals_pandas(tpch_home):
    X, y = tpch_training_set(0.01, tpch_home)
    assert X.shape[0] == 60175
    tables = load_tpch(0.01, tpch_home)
    frame, y_ref = join_with_pandas(**tpch_description(tables))
    assert_array_equal(y, y_ref)
    ours = pd.DataFrame(X.materialize(), columns=X.feature_names)
    assert_allclose(ours[frame.columns].to_numpy(), frame.to_numpy(), rtol=1e-12)
    assert "n_name_GERMANY" in X.feature_names and "ps_supplycost" in X.feature_names
    # the snowflake keeps each dimension at its own size
    assert X.nbytes < ours.to_numpy().nbytes / 2


def test_tpch_bad_arguments_are_refused_before_generating(tmp_path):
    with pytest.raises(ValueError, match="scale_factor"):
        load_tpch(0, tmp_path)
    with pytest.raises(ValueError, match="No TPC-H table 'nope'"):
        load_tpch(0.01, tmp_path, tables=["nope"])
    assert not (tmp_path / "tpch").exists()


def test_generating_without_tpchgen_says_how_to_install(tmp_path, monkeypatch):
    hide_tpchgen(monkeypatch, tmp_path)
    assert generator_path() is None
    with pytest.raises(ImportError, match=re.escape(INSTALL_HINT)):
        load_tpch(0.01, tmp_path / "cache")
    with pytest.raises(ImportError, match=re.escape(INSTALL_HINT)):
        tpch_training_set(0.01, tmp_path / "cache")


@needs_tpchgen
def test_generated_tables_are_read_without_tpchgen(tpch_home, tmp_path, monkeypatch):
    load_tpch(0.01, tpch_home, tables=["nation"])
    hide_tpchgen(monkeypatch, tmp_path)
    assert len(load_tpch(0.01, tpch_home, tables=["nation"])["nation"]) == 25
