"""KeyIndex: the rows of a dimension by its keys, against pandas' own lookup."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

from sklearn_ilargi.tables._key_index import KeyIndex, _IntegerKeys


def pandas_rows(table, keys, frame, frame_keys):
    """The reference: a merge on the keys, each frame row's table row or -1."""
    indexed = table[keys].reset_index(drop=True).reset_index(names="_row").dropna(subset=keys)
    left = frame[frame_keys].reset_index(drop=True)
    left.columns = keys
    merged = left.astype(object).merge(indexed.astype({k: object for k in keys}), on=keys,
                                       how="left")
    return merged["_row"].fillna(-1).to_numpy(dtype=np.int64)


@st.composite
def keyed_tables(draw):
    """A table with unique keys (one or two columns; dense, sparse or offset ranges; some
    null), and a frame of keys to look up: present ones, absent ones, nulls, and floats."""
    n = draw(st.integers(0, 60))
    n_keys = draw(st.sampled_from([1, 2]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    spread = draw(st.sampled_from([1, 2, 10, 10**6]))  # a table over the range, or sorted
    offset = draw(st.sampled_from([0, -50, 10**9, -(2**40)]))
    columns = {}
    for k in range(n_keys):
        high = max(n * spread, 1) if k == 0 else draw(st.sampled_from([3, 1000]))
        columns[f"k{k}"] = rng.integers(0, high, n) + offset
    table = pd.DataFrame(columns).drop_duplicates().reset_index(drop=True)
    table["v"] = np.arange(len(table))
    if len(table) and draw(st.booleans()):  # a row without its key: not indexed
        table["k0"] = table["k0"].astype("Int64")
        table.loc[rng.integers(0, len(table)), "k0"] = pd.NA
    m = draw(st.integers(0, 40))
    picked = table[[f"k{k}" for k in range(n_keys)]].iloc[rng.integers(0, max(len(table), 1), m)
                                                         ] if len(table) else None
    frame = pd.DataFrame({f"k{k}": (rng.integers(-5, 5, m) + offset).astype(np.int64)
                          for k in range(n_keys)})
    if picked is not None:
        hit = rng.random(m) < 0.7
        for k in range(n_keys):
            values = frame[f"k{k}"].to_numpy(dtype=object, copy=True)
            values[hit] = picked[f"k{k}"].to_numpy(dtype=object)[hit]
            frame[f"k{k}"] = values
    kind = draw(st.sampled_from(["int64", "Int64", "float64"]))
    for k in range(n_keys):
        column = pd.array(frame[f"k{k}"], dtype="Int64")
        if m and draw(st.booleans()):
            column[rng.integers(0, m)] = pd.NA
        frame[f"k{k}"] = column
        if kind == "float64":
            frame[f"k{k}"] = frame[f"k{k}"].astype("float64")
            if m:
                frame.loc[rng.integers(0, m), f"k{k}"] = 0.5 + offset
        elif kind == "int64" and not frame[f"k{k}"].isna().any():
            frame[f"k{k}"] = frame[f"k{k}"].astype(np.int64)
    return table, [f"k{k}" for k in range(n_keys)], frame


@settings(max_examples=150, deadline=None)
@given(keyed_tables())
def test_the_rows_equal_a_merge(case):
    table, keys, frame = case
    index = KeyIndex(table, keys, "dim")
    got = index.look_up(frame, keys, np.int32)
    assert got.dtype == np.int32
    assert_array_equal(got, pandas_rows(table, keys, frame, keys))


def test_integer_keys_are_indexed_by_arrays():
    """Dense keys by a table over their range, sparse ones by the sorted keys; strings,
    floats and codes beyond 64 bits by pandas."""
    dense = pd.DataFrame({"k": np.arange(1, 1001) * 2})
    sparse = pd.DataFrame({"k": np.arange(1000) * 10**6})
    assert KeyIndex(dense, ["k"], "d")._integer.table is not None
    assert KeyIndex(sparse, ["k"], "s")._integer.sorted is not None
    assert KeyIndex(pd.DataFrame({"k": ["a", "b"]}), ["k"], "t")._integer is None
    assert KeyIndex(pd.DataFrame({"k": [0.5, 1.0]}), ["k"], "f")._integer is None
    wide = pd.DataFrame({"a": [0, 2**40], "b": [0, 2**40]})
    assert _IntegerKeys.of([wide["a"], wide["b"]]) is None
    frame = pd.DataFrame({"a": [2**40, 0, 1], "b": [2**40, 0, 0]})
    assert_array_equal(KeyIndex(wide, ["a", "b"], "w").look_up(frame, ["a", "b"], np.int64),
                       [1, 0, -1])


def test_unsigned_keys_beyond_int64():
    table = pd.DataFrame({"k": np.array([1, 2**63 + 5], dtype=np.uint64)})
    frame = pd.DataFrame({"k": np.array([2**63 + 5, 1, 7], dtype=np.uint64)})
    assert_array_equal(KeyIndex(table, ["k"], "u").look_up(frame, ["k"], np.int64), [1, 0, -1])
    small = pd.DataFrame({"k": np.array([3, 4], dtype=np.uint64)})
    assert_array_equal(KeyIndex(small, ["k"], "u").look_up(frame, ["k"], np.int64),
                       [-1, -1, -1])


@pytest.mark.parametrize("keys", [["k"], ["k", "j"]])
@pytest.mark.parametrize("values", [[1, 2, 1], [10**9, 5, 10**9], ["a", "b", "a"]])
def test_repeated_keys_are_refused_naming_the_table(keys, values):
    table = pd.DataFrame({"k": values, "j": [0, 0, 0]})
    with pytest.raises(ValueError, match="'stores'.*not unique"):
        KeyIndex(table, keys, "stores")
