"""Reliability of from_tables: key types, suffixes, validate on pairs, keys as features and
messages that name what is wrong. Grouped by the module that owns the behaviour."""

import decimal
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

from sklearn_ilargi import Join, Union, from_tables
from sklearn_ilargi.datasets import join_with_pandas


def _frame_of(X):
    return pd.DataFrame(X.materialize(), columns=X.feature_names)


def _rows(frame):
    """Rows as a sorted array, to compare outer joins (pandas sorts them by key)."""
    a = frame.to_numpy(dtype=np.float64)
    return a[np.lexsort(a.T[::-1])]


def _merged(X, merged, fill_value=0.0):
    """Our matrix and ``merged`` (a pandas.merge result) on our feature names, as rows."""
    ours = _frame_of(X)
    theirs = merged[list(ours.columns)].astype(np.float64).fillna(fill_value)
    return _rows(ours), _rows(theirs)


def _two(left_key, right_key):
    left = pd.DataFrame({"k": left_key, "v": np.arange(len(left_key), dtype=float) + 1})
    right = pd.DataFrame({"k": right_key, "d": np.arange(len(right_key), dtype=float) + 10})
    return left, right


# ---------------------------------------------------------------- _keys: key types
NAIVE = pd.Series(pd.to_datetime(["2020-01-01", "2020-01-02", "2020-01-03"]))
AWARE = NAIVE.dt.tz_localize("UTC")


@pytest.mark.parametrize("naive, aware, pandas_refuses", [
    (NAIVE, AWARE, True),
    (NAIVE, AWARE.astype(object), True),  # tz-aware Timestamps in an object column
    ([d.date() for d in NAIVE], AWARE, True),
    # pandas matches nothing here, silently
    (NAIVE.astype("timestamp[ns][pyarrow]"), AWARE.astype("timestamp[ns, tz=UTC][pyarrow]"),
     False),
])
@pytest.mark.parametrize("how", ["inner", "left", "outer"])
@pytest.mark.parametrize("naive_left", [True, False])
def test_naive_and_aware_datetime_keys_are_refused(naive, aware, pandas_refuses, how,
                                                   naive_left):
    """Silently matching nothing would give all-zero dimension columns (or no rows)."""
    left, right = _two(*((naive, aware) if naive_left else (aware, naive)))
    if pandas_refuses:
        with pytest.raises(ValueError, match="merge on"):
            left.merge(right, on="k", how=how)
    zones = ["naive", "aware"] if naive_left else ["aware", "naive"]
    pattern = (rf"table 'base' column 'k' holds time-zone-{zones[0]} datetimes \(.+\) but "
               rf"table 'dim' column 'k' holds time-zone-{zones[1]} ones \(.+\)")
    with pytest.raises(TypeError, match=pattern):
        from_tables(left, [Join(right, on="k", how=how, name="dim")])


def test_datetime_keys_in_several_time_zones_match_by_instant():
    left, right = _two(AWARE, AWARE.dt.tz_convert("Asia/Tokyo").iloc[::-1])
    X = from_tables(left, [Join(right, on="k")])
    assert_array_equal(*_merged(X, left.merge(right, on="k")))


def test_naive_and_aware_members_of_one_union_key_are_refused():
    a, b = _two(NAIVE, NAIVE)[0], _two(AWARE, AWARE)[0]
    dim = pd.DataFrame({"k": NAIVE, "d": [1.0, 2.0, 3.0]})
    with pytest.raises(TypeError, match=r"within one union: table 'u\[0\]' column 'k' holds "
                                        r"datetimes .* table 'u\[1\]' column 'k' holds "
                                        "time-zone-aware datetimes"):
        from_tables(Union([a, b], name="u"), [Join(dim, on="k")])


def test_mixed_naive_and_aware_values_in_one_key_column():
    mixed = pd.Series([AWARE[0], NAIVE[1], NAIVE[2]], dtype=object)
    left, right = _two(mixed, NAIVE)
    with pytest.raises(TypeError, match="table 'base' column 'k' holds datetimes that cannot"):
        from_tables(left, [Join(right, on="k")])


@pytest.mark.parametrize("left_key, right_key", [
    (NAIVE, [1, 2, 3]),
    (NAIVE, [1.0, 2.0, 3.0]),
    (NAIVE, ["2020-01-01", "2020-01-02", "x"]),
    (["1", "2", "3"], [1, 2, 3]),
    (pd.Series([1, 2, 3], dtype="int64[pyarrow]"), pd.Series(["1", "2", "3"],
                                                             dtype="string[pyarrow]")),
    (pd.Categorical(["1", "2", "3"]), [1, 2, 3]),  # pandas silently matches nothing
], ids=["datetime-int", "datetime-float", "datetime-str", "str-int", "arrow-int-str",
        "category-int"])
def test_key_types_that_pandas_refuses_are_refused(left_key, right_key):
    left, right = _two(left_key, right_key)
    if not isinstance(left_key, pd.Categorical):
        with pytest.raises(ValueError, match="merge on"):
            left.merge(right, on="k")
    else:
        assert left.merge(right, on="k").empty
    with pytest.raises(TypeError, match=r"Keys of incompatible types: table 'base' column 'k' "
                                        r"holds \w+s \(.+\) but table 'dim' column 'k'"):
        from_tables(left, [Join(right, on="k", name="dim")])


@pytest.mark.parametrize("left_key, right_key", [
    ([1.0, 2.0, 4.0], [2, 1, 3]),
    ([True, False, True], [0, 1, 1]),
    (pd.Categorical(["a", "b", "a"]), ["b", "a", "c"]),
    ([decimal.Decimal(1), decimal.Decimal("2.5"), decimal.Decimal(4)], [2.5, 1.0, 3.0]),
    (pd.Series([1, None, 3], dtype="Int64"), [3, 1, 2]),
    (pd.Series(["a", "b", None], dtype="string[pyarrow]"), ["b", "a", "c"]),
    (NAIVE.astype("datetime64[ms]"), NAIVE.astype("datetime64[ns]").iloc[::-1]),
    (NAIVE.astype("timestamp[us][pyarrow]"), NAIVE.iloc[1:].astype("timestamp[ns][pyarrow]")),
], ids=["float-int", "bool-int", "category-str", "decimal-float", "Int64-int",
        "arrow-str-str", "ms-ns", "arrow-datetime"])
@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_key_types_that_pandas_matches_match_as_pandas(left_key, right_key, how):
    left, right = _two(left_key, right_key)
    X = from_tables(left, [Join(right, on="k", how=how)])
    assert_array_equal(*_merged(X, left.merge(right, on="k", how=how)))


@pytest.mark.parametrize("left_key, right_key", [
    ([d.date() for d in NAIVE], NAIVE.iloc[1:]),
    ([None, decimal.Decimal(2), decimal.Decimal(3)], [2.0, 3.0]),
    (NAIVE.astype("timestamp[us][pyarrow]"), NAIVE.iloc[1:]),
], ids=["date-datetime", "decimal-with-null-float", "arrow-numpy-datetime"])
def test_equal_keys_that_pandas_refuses_match_by_value(left_key, right_key):
    """pandas refuses these dtype pairs, but their values compare exactly: they match."""
    left, right = _two(left_key, right_key.reset_index(drop=True)
                       if isinstance(right_key, pd.Series) else right_key)
    with pytest.raises(ValueError, match="merge on"):
        left.merge(right, on="k")
    X = from_tables(left, [Join(right, on="k", how="left")])
    assert_array_equal(_frame_of(X)["d"], [0.0, 10.0, 11.0])


# ---------------------------------------------------------------- _layout: feature names
def test_suffix_that_names_an_existing_column_is_refused():
    base = pd.DataFrame({"k": [1, 2], "a": [1.0, 2.0], "a_x": [3.0, 4.0]})
    dim = pd.DataFrame({"k": [1, 2], "a": [5.0, 6.0]})
    with pytest.raises(pd.errors.MergeError):
        base.merge(dim, on="k")
    with pytest.raises(ValueError, match=r"overlap='suffix' on the join 'dim' would rename "
                                         r"column 'a' to 'a_x', a name table 'base' has"):
        from_tables(base, [Join(dim, on="k", overlap="suffix", name="dim")])
    right = dim.assign(a_y=[0.0, 1.0])
    with pytest.raises(pd.errors.MergeError):
        base.drop(columns="a_x").merge(right, on="k")
    with pytest.raises(ValueError, match="to 'a_y', a name table 'dim' has"):
        from_tables(base.drop(columns="a_x"), [Join(right, on="k", overlap="suffix",
                                                    name="dim")])


def test_suffix_beside_a_column_left_out_of_the_features():
    base = pd.DataFrame({"k": [1, 2], "a": [1.0, 2.0], "a_x": [3.0, 4.0]})
    dim = pd.DataFrame({"k": [1, 2], "a": [5.0, 6.0]})
    X = from_tables(base, [Join(dim, on="k", overlap="suffix")], features=["a"])
    assert list(X.feature_names) == ["a_x", "a_y"]
    assert_array_equal(X.materialize(), [[1.0, 5.0], [2.0, 6.0]])


def test_suffix_over_three_tables_names_like_pandas():
    base = pd.DataFrame({"k": [1, 2, 2], "a": [1.0, 2.0, 3.0]})
    dims = [pd.DataFrame({"k": [2, 1], "a": [10.0 * i, 20.0 * i]}) for i in (1, 2)]
    joins = [Join(d, on="k", overlap="suffix", name=f"d{i}") for i, d in enumerate(dims)]
    X = from_tables(base, joins)
    merged = base.merge(dims[0], on="k").merge(dims[1], on="k")
    assert list(X.feature_names) == ["a_x", "a_y", "a"] == [c for c in merged if c != "k"]
    assert_array_equal(X.materialize(), merged[["a_x", "a_y", "a"]].to_numpy())
    # a fourth "a" would rename the third to "a_x", which the first is named already
    with pytest.raises(ValueError, match=r"would rename column 'a' to 'a_x', a name table "
                                         r"'base' \(column 'a', renamed 'a_x'\) has"):
        from_tables(base, joins + [Join(dims[0], on="k", overlap="suffix", name="d2")])


def test_one_hot_name_that_equals_a_column_is_refused():
    base = pd.DataFrame({"k": [1, 2], "c": ["x", "y"], "c_x": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"Two features would be named 'c_x': column 'c' of "
                                         r"table 'base' \(category 'x'\) and column 'c_x'"):
        from_tables(base)


def test_feature_names_are_strings_and_unique():
    base = pd.DataFrame({0: [1.0, 2.0], "0": [3.0, 4.0]})
    with pytest.raises(ValueError, match="Two features would be named '0'"):
        from_tables(base)
    X = from_tables(pd.DataFrame({0: [1.0, 2.0], ("a", "b"): ["u", "v"]}))
    assert list(X.feature_names) == ["0", "('a', 'b')_u", "('a', 'b')_v"]


def test_complex_column_is_a_type_error():
    base = pd.DataFrame({"k": [1, 2], "z": [1 + 2j, 3j]})
    dim = pd.DataFrame({"k": [1, 2], "w": np.array([1j, 2], dtype=np.complex64)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning on the way
        with pytest.raises(TypeError, match="Table 'base' column 'z' holds complex numbers"):
            from_tables(base)
        with pytest.raises(TypeError, match="Table 'dim' column 'w' holds complex numbers"):
            from_tables(base, [Join(dim, on="k", name="dim")], features=["w"])
        assert from_tables(base, [Join(dim, on="k")], features=["k"]).shape == (2, 1)


def test_union_members_of_different_kinds_are_named():
    a = pd.DataFrame({"x": [1.0, 2.0]})
    b = pd.DataFrame({"x": ["p", "q"]})
    with pytest.raises(TypeError, match=r"Union 'u' column 'x' has different kinds in its "
                                        r"members \(numeric in \['u\[0\]', 'u\[2\]'\]; "
                                        r"categorical in \['u\[1\]'\]\)"):
        from_tables(Union([a, b, a], name="u"))


# ---------------------------------------------------------------- _layout: keys as features
@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_key_named_in_features_is_kept_as_pandas_keeps_it(how):
    """Same-named keys are one column (the joined table's key where only it has the row);
    differently named keys are two."""
    base = pd.DataFrame({"k": [1, 2, 2, 5], "j": [7, 8, 9, 7], "v": [1.0, 2.0, 3.0, 4.0]})
    dim = pd.DataFrame({"k": [1, 2, 3], "d": [10.0, 20.0, 30.0]})
    dim2 = pd.DataFrame({"jj": [7, 8, 6], "e": [0.5, 0.25, 0.75]})
    joins = [Join(dim, on="k", how=how), Join(dim2, left_on="j", right_on="jj", how=how)]
    X = from_tables(base, joins, features=["k", "v", "d", "j", "jj", "e"])
    assert list(X.feature_names) == ["k", "j", "v", "d", "jj", "e"]
    merged = base.merge(dim, on="k", how=how).merge(dim2, left_on="j", right_on="jj", how=how)
    assert_array_equal(*_merged(X, merged))
    ref = join_with_pandas(base, joins, features=["k", "v", "d", "j", "jj", "e"])
    assert_array_equal(_rows(_frame_of(X)), _rows(ref[list(X.feature_names)]))


@pytest.mark.parametrize("how", ["left", "outer"])
def test_equal_left_and_right_key_names_are_one_column(how):
    """left_on="k", right_on="k" is on="k" to pandas: one column, read so by a later join."""
    base = pd.DataFrame({"k": [1, 2], "v": [1.0, 2.0]})
    dim = pd.DataFrame({"k": [1, 3], "d": [5.0, 6.0]})
    dim2 = pd.DataFrame({"k": [3, 2, 1], "e": [0.5, 0.25, 0.125]})
    joins = [Join(dim, left_on="k", right_on="k", how=how), Join(dim2, on="k", how="left")]
    X = from_tables(base, joins, features=["k", "v", "d", "e"])
    merged = base.merge(dim, left_on="k", right_on="k", how=how).merge(dim2, on="k",
                                                                       how="left")
    assert list(X.feature_names) == ["k", "v", "d", "e"]
    assert_array_equal(*_merged(X, merged))


@settings(max_examples=40, deadline=None)
@given(left=st.lists(st.integers(0, 5), min_size=1, max_size=12),
       right=st.lists(st.integers(0, 5), min_size=1, max_size=12),
       how=st.sampled_from(["inner", "left", "outer"]),
       same_names=st.booleans())
def test_random_keys_as_features_equal_pandas_merge(left, right, how, same_names):
    base = pd.DataFrame({"k": left, "v": np.arange(len(left), dtype=float)})
    right_key = "k" if same_names else "r"
    dim = pd.DataFrame({right_key: right, "d": np.arange(len(right), dtype=float) + 0.5})
    join = Join(dim, left_on="k", right_on=right_key, how=how)
    merged = base.merge(dim, left_on="k", right_on=right_key, how=how)
    if merged.empty:
        return
    X = from_tables(base, [join], features=["k", "v", "d", right_key], fill_value=-1.0)
    assert len(set(X.feature_names)) == len(X.feature_names)
    assert sorted(X.feature_names) == sorted({"k", "v", "d", right_key})
    assert_array_equal(*_merged(X, merged, fill_value=-1.0))


def test_keys_named_in_features_of_a_snowflake_and_as_categories():
    fact = pd.DataFrame({"o": ["a", "b", "a"], "v": [1.0, 2.0, 3.0]})
    orders = pd.DataFrame({"o": ["a", "b"], "cust": [7, 8], "total": [5.0, 6.0]})
    cust = pd.DataFrame({"cust": [8, 7], "bal": [0.5, 0.25]})
    joins = [Join(orders, on="o", name="orders"), Join(cust, on="cust")]
    X = from_tables(fact, joins, features=["o", "cust", "bal"])
    assert list(X.feature_names) == ["o_a", "o_b", "cust", "bal"]
    assert_array_equal(X.materialize(), [[1, 0, 7, 0.25], [0, 1, 8, 0.5], [1, 0, 7, 0.25]])
    assert "cust" not in from_tables(fact, joins).feature_names  # keys are no default


def test_key_feature_and_suffix_leave_the_inputs_untouched():
    base = pd.DataFrame({"k": [2, 1, 2], "a": [1.0, 2.0, 3.0]})
    dim = pd.DataFrame({"k": [1, 2], "a": [5.0, 6.0], "c": ["x", "y"]})
    copies = base.copy(), dim.copy()
    from_tables(base, [Join(dim, on="k", how="outer", overlap="suffix")],
                features=["k", "a", "c"], fill_value=-1.0)
    pd.testing.assert_frame_equal(base, copies[0])
    pd.testing.assert_frame_equal(dim, copies[1])


# ---------------------------------------------------------------- _from_tables: validate pairs
@pytest.mark.parametrize("validate, error", [
    ("one_to_one", "row 0 of table 'b' is matched by 2 target rows"),
    ("one_to_many", "row 0 of table 'b' is matched by 2 target rows"),
    ("many_to_one", None),
    ("many_to_many", None),
])
def test_validate_on_pairs_a_right_row_twice(validate, error):
    a = pd.DataFrame({"w": [60.0, 70.0]})
    b = pd.DataFrame({"h": [1.6, 1.7]})
    join = Join(b, pairs=([0, 1], [0, 0]), validate=validate, name="b")
    if error is None:
        assert from_tables(a, [join]).shape == (2, 2)
    else:
        with pytest.raises(ValueError, match=rf"validate='{validate}' but {error} "
                                             r"\(through rows \[0, 1\] of table 'base'\)"):
            from_tables(a, [join])


@pytest.mark.parametrize("validate, error", [
    ("one_to_one", True), ("many_to_one", True), ("one_to_many", False),
])
def test_validate_on_pairs_a_left_row_twice(validate, error):
    a = pd.DataFrame({"w": [60.0, 70.0]})
    b = pd.DataFrame({"h": [1.6, 1.7]})
    join = Join(b, pairs=([0, 0], [0, 1]), validate=validate, name="b")
    if not error:
        assert from_tables(a, [join]).shape == (2, 2)
        return
    with pytest.raises(ValueError, match=rf"validate='{validate}' but row 0 of table 'base' is "
                                         r"paired with several rows of table 'b' \(rows \[0, 1\]"):
        from_tables(a, [join])


def test_validate_on_pairs_counts_target_rows_an_earlier_join_repeated():
    people = pd.DataFrame({"pid": [1, 2], "age": [30.0, 40.0]})
    visits = pd.DataFrame({"pid": [1, 1, 2], "cost": [1.0, 2.0, 3.0]})
    cards = pd.DataFrame({"card": [9.0, 8.0]})
    joins = [Join(visits, on="pid"), Join(cards, pairs=([0, 1], [0, 1]), name="cards")]
    assert from_tables(people, joins).shape == (3, 3)
    with pytest.raises(ValueError, match="row 0 of table 'cards' is matched by 2 target rows"):
        from_tables(people, joins[:1] + [Join(cards, pairs=([0, 1], [0, 1]), name="cards",
                                              validate="one_to_one")])


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n_left=st.integers(1, 5), n_right=st.integers(1, 5),
       validate=st.sampled_from(["one_to_one", "many_to_one", "one_to_many", "many_to_many"]))
def test_validate_on_random_pairs(data, n_left, n_right, validate):
    """Refused exactly when unique keys would not allow the matching: a left row paired
    twice (right side not unique) or a right row paired twice (left side not unique)."""
    every = [(i, j) for i in range(n_left) for j in range(n_right)]
    chosen = data.draw(st.lists(st.sampled_from(every), unique=True, max_size=8))
    left = [p[0] for p in chosen]
    right = [p[1] for p in chosen]
    join = Join(pd.DataFrame({"h": np.arange(n_right, dtype=float)}), pairs=(left, right),
                how="left", validate=validate)
    left_twice = len(set(left)) < len(left)
    right_twice = len(set(right)) < len(right)
    refused = {"one_to_one": left_twice or right_twice, "many_to_one": left_twice,
               "one_to_many": right_twice, "many_to_many": False}[validate]
    a = pd.DataFrame({"w": np.arange(n_left, dtype=float)})
    if refused:
        with pytest.raises(ValueError, match=f"validate='{validate}'"):
            from_tables(a, [join])
    else:
        counts = np.bincount(np.asarray(left, dtype=int), minlength=n_left)
        assert from_tables(a, [join]).shape[0] == np.maximum(counts, 1).sum()


# ---------------------------------------------------------------- _spec and messages
def test_union_of_one_table_says_a_list_is_needed(tmp_path):
    frame = pd.DataFrame({"k": [1], "v": [1.0]})
    for single in (frame, pa.Table.from_pandas(frame), str(tmp_path / "t.parquet"), 5):
        with pytest.raises(TypeError, match="Union takes a list of tables, got a single"):
            Union(single)


def test_a_single_join_or_union_where_a_list_is_expected():
    base = pd.DataFrame({"k": [1, 2, 1], "v": [1.0, 2.0, 3.0]})
    dim = pd.DataFrame({"k": [1, 2], "d": [10.0, 20.0]})
    assert_array_equal(from_tables(base, Join(dim, on="k")).materialize(),
                       from_tables(base, [Join(dim, on="k")]).materialize())
    inner = Union([base, base], name="twice")
    assert_array_equal(from_tables(Union(inner)).materialize(),
                       from_tables(inner).materialize())
    for wrong in (dim, Union([dim])):
        with pytest.raises(TypeError, match=r"joins must be a Join or a list of Join objects, "
                                            r"got a \w+; wrap a table as Join"):
            from_tables(base, wrong)
    with pytest.raises(TypeError, match=r"is a list.*to stack tables, pass Union\(\[\.\.\.\]\)"):
        from_tables([base, base])


def test_integer_and_tuple_column_names_are_used_as_they_are():
    base = pd.DataFrame({0: [1, 2, 1], 1: [1.0, 2.0, 3.0], "x": [0.5, 0.25, 0.125]})
    dim = pd.DataFrame({0: [1, 2], 2: [10.0, 20.0]})
    X, y = from_tables(base, [Join(dim, on=0)], target=1)
    assert list(X.feature_names) == ["x", "2"]
    assert_array_equal(X.materialize(), base.merge(dim, on=0)[["x", 2]].to_numpy())
    assert_array_equal(y, [1.0, 2.0, 3.0])
    with pytest.raises(KeyError, match=r"key column 5 does not exist in table 'base'; its "
                                       r"columns are \[0, 1, 'x'\]"):
        from_tables(base, [Join(dim, left_on=5, right_on=0)])
    with pytest.raises(KeyError, match="The target column 5 exists in no table"):
        from_tables(base, target=5)
    with pytest.raises(KeyError, match=r"Feature column\(s\) \['0'\]"):
        from_tables(base, features=["0"])
    wide = pd.DataFrame({("id", ""): [1, 2], ("m", "a"): [3.0, 4.0]})
    other = pd.DataFrame({("id", ""): [2, 1], ("m", "b"): [5.0, 6.0]})
    X = from_tables(wide, [Join(other, on=[("id", "")])])
    assert list(X.feature_names) == ["('m', 'a')", "('m', 'b')"]
    assert_array_equal(X.materialize(), [[3.0, 6.0], [4.0, 5.0]])


def test_union_target_errors_name_the_member():
    a = pd.DataFrame({"x": [1.0, 2.0], "y": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"target column 'y' of table 'u' is missing from the "
                                         r"union's member\(s\) \['u\[1\]'\]"):
        from_tables(Union([a, a.drop(columns="y")], name="u"), target="y")
    with pytest.raises(ValueError, match=r"has 1 null values \(1 in 'u\[1\]'\)"):
        from_tables(Union([a, a.assign(y=[np.nan, 1.0])], name="u"), target="y")


def test_union_keys_of_different_types_name_the_members():
    a = pd.DataFrame({"k": [1, 2], "x": [1.0, 2.0]})
    b = pd.DataFrame({"k": ["1", "3"], "x": [1.0, 2.0]})
    dim = pd.DataFrame({"k": [1, 2], "d": [1.0, 2.0]})
    pattern = (r"within one union: table 'u\[0\]' column 'k' holds numbers \(int64\) but "
               r"table 'u\[1\]' column 'k' holds strings")
    with pytest.raises(TypeError, match=pattern):
        from_tables(Union([a, b], name="u"), [Join(dim, on="k")])
    with pytest.raises(TypeError, match=pattern):
        from_tables(dim, [Join(Union([a, b], name="u"), on="k")])


@pytest.mark.parametrize("value", [decimal.Decimal("1e400"), decimal.Decimal("-2.5e309"),
                                   10**400], ids=["1e400", "-2.5e309", "10**400"])
def test_value_out_of_float64_range(value):
    base = pd.DataFrame({"k": [1, 2], "p": pd.Series([type(value)(1), value], dtype=object)})
    with pytest.raises(ValueError, match=r"Table 'base' column 'p' holds the value .*e\+\d+, "
                                         "out of float64's range"):
        from_tables(base)
    if isinstance(value, decimal.Decimal):  # decimal targets become float64
        with pytest.raises(ValueError, match="target column 'p' of table 'base' holds the "
                                             "value"):
            from_tables(base.assign(x=1.0), target="p")


def test_decimal_infinity_is_still_infinity():
    base = pd.DataFrame({"p": [decimal.Decimal("Infinity"), decimal.Decimal(1)]})
    with pytest.raises(ValueError, match="Table 'base' column 'p' contains infinity"):
        from_tables(base)
    tiny = from_tables(pd.DataFrame({"p": [decimal.Decimal("1e-400"), decimal.Decimal(2)]}))
    assert_array_equal(tiny.materialize().ravel(), [0.0, 2.0])
