"""from_tables == pandas.merge over random key distributions."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from sklearn_ilargi import Join, from_tables
from sklearn_ilargi.datasets import join_with_pandas

keys = st.lists(st.integers(0, 6), min_size=1, max_size=25)


def _materialized(X, columns):
    return pd.DataFrame(X.materialize(), columns=X.feature_names)[columns].to_numpy()


def _rows(a):
    return a[np.lexsort(a.T[::-1])]


@settings(max_examples=40, deadline=None)
@given(left=keys, right=keys, right2=keys, how=st.sampled_from(["inner", "left", "outer"]),
       how2=st.sampled_from(["inner", "left", "outer"]), fill=st.sampled_from([0.0, -2.0]))
def test_random_keys(left, right, right2, how, how2, fill):
    """Keys that match nothing, duplicates on either side, chained joins."""
    fact = pd.DataFrame({"k": left, "v": np.arange(len(left), dtype=float) + 1})
    dim = pd.DataFrame({"k": right, "d": np.arange(len(right), dtype=float) * 10 + 5,
                        "c": [f"c{x % 3}" for x in right]})
    dim2 = pd.DataFrame({"k": right2, "e": np.arange(len(right2), dtype=float) - 7})
    joins = [Join(dim, on="k", how=how, name="d1"), Join(dim2, on="k", how=how2, name="d2")]
    try:
        X = from_tables(fact, joins, fill_value=fill)
    except ValueError as error:  # an inner join can leave nothing
        assert "no target rows" in str(error)
        assert len(fact.merge(dim, on="k", how=how).merge(dim2, on="k", how=how2)) == 0
        return
    ref = join_with_pandas(fact, joins, fill_value=fill)
    ours = _materialized(X, list(ref.columns))
    expected = ref.to_numpy(dtype=float)
    assert ours.shape == expected.shape
    raw = fact.merge(dim, on="k", how=how).merge(dim2, on="k", how=how2)
    raw = raw[["v", "d", "e"]].fillna(fill).to_numpy()
    plain = _materialized(X, ["v", "d", "e"])
    if "outer" in (how, how2):
        ours, expected = _rows(ours), _rows(expected)
        raw, plain = _rows(raw), _rows(plain)
    assert_allclose(ours, expected, rtol=0, atol=0)
    assert_allclose(plain, raw, rtol=0, atol=0)  # straight pandas.merge, no helper


@settings(max_examples=40, deadline=None)
@given(n_left=st.integers(1, 12), n_right=st.integers(1, 12),
       data=st.data(), how=st.sampled_from(["inner", "left", "outer"]))
def test_random_pairs(n_left, n_right, data, how):
    """Entity-resolution pairs: any bipartite matching, including none."""
    all_pairs = [(i, j) for i in range(n_left) for j in range(n_right)]
    chosen = data.draw(st.lists(st.sampled_from(all_pairs), unique=True, max_size=15))
    pairs = (np.array([p[0] for p in chosen], dtype=int),
             np.array([p[1] for p in chosen], dtype=int))
    a = pd.DataFrame({"x": np.arange(n_left, dtype=float) + 1})
    b = pd.DataFrame({"z": np.arange(n_right, dtype=float) + 100})
    joins = [Join(b, pairs=pairs, how=how)]
    if how == "inner" and not chosen:
        return
    X = from_tables(a, joins)
    ref = join_with_pandas(a, joins)
    ours, expected = _materialized(X, list(ref.columns)), ref.to_numpy(dtype=float)
    if how == "outer":
        ours, expected = _rows(ours), _rows(expected)
    assert_allclose(ours, expected, rtol=0, atol=0)


@settings(max_examples=30, deadline=None)
@given(left=st.lists(st.tuples(st.integers(0, 2), st.sampled_from("ab")), min_size=1,
                     max_size=15),
       right=st.lists(st.tuples(st.integers(0, 2), st.sampled_from("abc")), min_size=1,
                      max_size=15),
       how=st.sampled_from(["inner", "left"]))
def test_random_two_column_keys(left, right, how):
    fact = pd.DataFrame(left, columns=["p", "s"]).assign(v=np.arange(len(left), dtype=float))
    dim = pd.DataFrame(right, columns=["p", "s"]).assign(d=np.arange(len(right)) + 0.5)
    joins = [Join(dim, on=["p", "s"], how=how)]
    if how == "inner" and not len(fact.merge(dim, on=["p", "s"])):
        return
    X = from_tables(fact, joins)
    ref = join_with_pandas(fact, joins)
    assert_allclose(_materialized(X, list(ref.columns)), ref.to_numpy(dtype=float), atol=0)
