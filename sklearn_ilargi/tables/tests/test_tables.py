"""from_tables against pandas.merge + get_dummies, scenario by scenario."""

import datetime
import decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_ilargi import Join, NormalizedMatrix, Union, config_context, from_tables
from sklearn_ilargi.datasets import join_with_pandas, make_scenario, make_star
from sklearn_ilargi.tests._scenarios import sources_as_given


def _frame_of(X):
    return pd.DataFrame(X.materialize(), columns=X.feature_names)


def _sorted_rows(a):
    return a[np.lexsort(a.T[::-1])] if a.size else a


def check_against_pandas(base, joins=(), *, ordered=True, **kwargs):
    """from_tables == join_with_pandas: same columns by name, same rows (as multisets)."""
    out = from_tables(base, joins, **kwargs)
    ref = join_with_pandas(base, joins, **kwargs)
    X, y = out if isinstance(out, tuple) else (out, None)
    frame, y_ref = ref if isinstance(ref, tuple) else (ref, None)
    assert isinstance(X, NormalizedMatrix)
    ours = _frame_of(X)
    assert ours.shape[0] == frame.shape[0]
    missing = set(frame.columns) - set(ours.columns)
    assert not missing, missing
    extra = [c for c in ours.columns if c not in frame.columns]
    assert_array_equal(ours[extra].to_numpy(), 0)  # categories no target row uses
    a, b = ours[list(frame.columns)].to_numpy(), frame.to_numpy(dtype=np.float64)
    if y is not None:
        assert_array_equal(y, y_ref)
        a = np.column_stack([a, y.astype(np.float64)])
        b = np.column_stack([b, y_ref.astype(np.float64)])
    if not ordered:
        a, b = _sorted_rows(a), _sorted_rows(b)
    assert_allclose(a, b, rtol=1e-12, atol=0)
    return X


# ---------------------------------------------------------------- tiny hand-made tables
@pytest.fixture
def shop():
    sales = pd.DataFrame({
        "store": [2, 1, 2, 3, 1, 9],
        "item": ["a", "b", "a", "c", "a", "b"],
        "units": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    })
    stores = pd.DataFrame({
        "store": [1, 2, 3, 4],
        "size": [10.0, 20.0, 30.0, 40.0],
        "city": ["Delft", "Leiden", "Delft", "Gouda"],
    })
    items = pd.DataFrame({"item": ["a", "b", "b", "d"], "price": [1.5, 2.5, 3.5, 4.5],
                          "color": pd.Categorical(["red", "blue", "red", "green"])})
    return sales, stores, items


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_many_to_one(shop, how):
    sales, stores, _ = shop
    check_against_pandas(sales, [Join(stores, on="store", how=how)], ordered=how != "outer")


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_many_to_many(shop, how):
    sales, _, items = shop
    check_against_pandas(sales, [Join(items, on="item", how=how)], ordered=how != "outer")


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_one_to_many(how):
    people = pd.DataFrame({"pid": [1, 2, 3], "age": [30.0, 40.0, 50.0]})
    visits = pd.DataFrame({"pid": [2, 2, 1, 5, 2], "cost": [1.0, 2.0, 3.0, 4.0, 5.0]})
    check_against_pandas(people, [Join(visits, on="pid", how=how, validate="one_to_many")],
                         ordered=how != "outer")


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_two_joins(shop, how):
    sales, stores, items = shop
    joins = [Join(stores, on="store", how=how, name="stores"),
             Join(items, on="item", how=how, name="items")]
    check_against_pandas(sales, joins, ordered=how != "outer")


@pytest.mark.parametrize("fill_value", [0.0, -1.5])
def test_left_misses_take_fill_value(shop, fill_value):
    sales, stores, _ = shop
    X = check_against_pandas(sales, [Join(stores, on="store", how="left")],
                             fill_value=fill_value)
    row = _frame_of(X).iloc[5]  # store 9 matches nothing
    assert row["size"] == fill_value
    assert row[["city_Delft", "city_Leiden", "city_Gouda"]].sum() == 0


@pytest.mark.parametrize("how", ["left", "outer"])
@pytest.mark.parametrize("fill_value", [0.0, -1.5])
def test_an_empty_joined_table_misses_every_row(shop, how, fill_value):
    """As with pandas.merge, a left or outer join with an empty table keeps every row, a miss
    for that table: its numeric columns take fill_value, its categories have no column."""
    sales, stores, items = shop
    empty = stores.iloc[:0]
    joins = [Join(empty, on="store", how=how, name="stores"),
             Join(items, on="item", how="left", name="items")]
    X = check_against_pandas(sales, joins, fill_value=fill_value, ordered=how != "outer")
    assert "size" in X.feature_names and not any(n.startswith("city") for n in X.feature_names)
    arrow = from_tables(pa.Table.from_pandas(sales), [
        Join(pa.Table.from_pandas(empty, preserve_index=False), on="store", how=how,
             name="stores"), Join(pa.Table.from_pandas(items), on="item", how="left",
                                  name="items")], fill_value=fill_value)
    assert list(arrow.feature_names) == list(X.feature_names)
    assert_array_equal(arrow.materialize(), X.materialize())


def test_outer_puts_unmatched_right_rows_last(shop):
    sales, stores, _ = shop
    X = from_tables(sales, [Join(stores, on="store", how="outer")])
    frame = _frame_of(X)
    assert X.shape[0] == 7
    assert frame["size"].iloc[-1] == 40.0 and frame["units"].iloc[-1] == 0.0


def test_target_and_feature_names(shop):
    sales, stores, _ = shop
    X, y = from_tables(sales, [Join(stores, on="store")], target="units")
    assert list(X.feature_names) == ["item_a", "item_b", "item_c", "size", "city_Delft",
                                     "city_Gouda", "city_Leiden"]
    assert_array_equal(y, [1.0, 2.0, 3.0, 4.0, 5.0])
    X, y = from_tables(sales, [Join(stores, on="store")], target="size")
    assert_array_equal(y, [20.0, 10.0, 20.0, 30.0, 10.0])
    assert "size" not in X.feature_names and "units" in X.feature_names


def test_one_hot_stays_sparse_and_per_table(shop):
    sales, stores, _ = shop
    X = from_tables(sales, [Join(stores, on="store")])
    assert {b.source.shape[0] for b in X.blocks} == {6, 4}  # fact rows, store rows
    assert X.nbytes < 2000
    # Many categories: the encoded dimension is mostly zeros and stays scipy.sparse (under
    # the shipped storage policy: too large to be stored dense, too full to be gathered).
    cities = pd.DataFrame({"store": np.arange(400), "city": [f"c{i}" for i in range(400)]})
    facts = pd.DataFrame({"store": np.arange(2000) % 400, "units": np.ones(2000)})
    X = from_tables(facts, [Join(cities, on="store")])
    sparse = [b for b in X.blocks if hasattr(b.source, "nnz")]
    assert [b.source.shape for b in sparse] == [(400, 400)]


def test_features_selection_and_categorical_drop(shop):
    sales, stores, _ = shop
    X = check_against_pandas(sales, [Join(stores, on="store")], features=["size", "city"])
    assert list(X.feature_names) == ["size", "city_Delft", "city_Gouda", "city_Leiden"]
    X = check_against_pandas(sales, [Join(stores, on="store")], categorical="drop")
    assert list(X.feature_names) == ["units", "size"]


# ---------------------------------------------------------------- snowflake, keys, pairs
@pytest.mark.parametrize("how", ["inner", "left"])
def test_snowflake_chain(how):
    s = make_scenario(600, 2, tuple_ratio=4, depth=3, n_categories=3, unmatched=0.1,
                      how=how, random_state=0)
    X = check_against_pandas(s.base, s.joins, target=s.target)
    assert X.shape[0] == (600 if how == "left" else X.shape[0])


def test_snowflake_outer():
    s = make_scenario(300, 1, tuple_ratio=3, depth=2, unmatched=0.2, how="outer",
                      random_state=1)
    check_against_pandas(s.base, s.joins, ordered=False)


def test_parent_is_found_from_the_keys():
    fact = pd.DataFrame({"o": [1, 2, 1], "v": [1.0, 2.0, 3.0]})
    orders = pd.DataFrame({"o": [1, 2], "cust": [7, 8], "total": [5.0, 6.0]})
    cust = pd.DataFrame({"cust": [8, 7], "bal": [0.5, 0.25]})
    joins = [Join(orders, on="o", name="orders"), Join(cust, on="cust")]
    X = check_against_pandas(fact, joins)
    assert_array_equal(_frame_of(X)["bal"], [0.25, 0.5, 0.25])


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_multi_column_keys(how):
    rng = np.random.RandomState(0)
    line = pd.DataFrame({"p": rng.randint(4, size=50), "s": rng.randint(3, size=50),
                         "q": rng.standard_normal(50)})
    ps = pd.DataFrame({"pk": np.repeat(np.arange(4), 2), "sk": np.tile([0, 2], 4),
                       "cost": rng.standard_normal(8)})
    check_against_pandas(line, [Join(ps, left_on=["p", "s"], right_on=["pk", "sk"], how=how)],
                         ordered=how != "outer")


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_entity_resolution_pairs(how):
    a = pd.DataFrame({"w": [60.0, 70.0, 80.0, 90.0]})
    b = pd.DataFrame({"h": [1.6, 1.7, 1.8]})
    pairs = (np.array([2, 0, 2]), np.array([1, 0, 0]))
    X = check_against_pandas(a, [Join(b, pairs=pairs, how=how)], ordered=how != "outer")
    if how == "inner":
        assert_array_equal(X.materialize(), [[60.0, 1.6], [80.0, 1.6], [80.0, 1.7]])


# ---------------------------------------------------------------- union and overlap
def test_union_as_base_with_missing_columns():
    a = pd.DataFrame({"k": [1, 2], "x": [1.0, 2.0], "c": ["u", "v"]})
    b = pd.DataFrame({"k": [2, 3, 1], "x": [3.0, 4.0, 5.0], "z": [9.0, 8.0, 7.0]})
    dim = pd.DataFrame({"k": [1, 2, 3], "d": [0.1, 0.2, 0.3]})
    for fill_value in (0.0, 2.5):
        X = check_against_pandas(Union([a, b], name="ab"), [Join(dim, on="k")],
                                 fill_value=fill_value)
        assert_array_equal(_frame_of(X)["z"], [fill_value, fill_value, 9.0, 8.0, 7.0])


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_union_as_joined_table(how):
    fact = pd.DataFrame({"k": [1, 4, 2, 2], "v": [1.0, 2.0, 3.0, 4.0]})
    part1 = pd.DataFrame({"k": [1, 2], "d": [10.0, 20.0]})
    part2 = pd.DataFrame({"k": [3, 2], "d": [30.0, 40.0]})
    check_against_pandas(fact, [Join(Union([part1, part2]), on="k", how=how)],
                         ordered=how != "outer")


def test_overlap_error_names_tables_and_column(shop):
    sales, stores, _ = shop
    other = stores.rename(columns={"store": "sid"})
    with pytest.raises(ValueError, match=r"'table1' and 'table2'.*'size'"):
        from_tables(sales, [Join(stores, on="store"),
                            Join(other, left_on="store", right_on="sid")])


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_overlap_coalesce_first_source_wins(how):
    fact = pd.DataFrame({"a": [1, 2, 3, 4], "b": [1, 1, 2, 9]})
    h1 = pd.DataFrame({"a": [1, 3], "weight": [60.0, 61.0], "blood": ["A", "B"]})
    h2 = pd.DataFrame({"b": [1, 2], "weight": [70.0, 71.0], "blood": ["O", "A"]})
    joins = [Join(h1, on="a", how="left", name="h1"),
             Join(h2, on="b", how=how, name="h2", overlap="coalesce")]
    X = check_against_pandas(fact, joins, ordered=how != "outer")
    if how == "left":
        frame = _frame_of(X)
        assert_array_equal(frame["weight"], [60.0, 70.0, 61.0, 0.0])
        assert_array_equal(frame[["blood_A", "blood_B", "blood_O"]].sum(axis=1), [1, 1, 1, 0])


def test_overlap_suffix_like_pandas(shop):
    sales, stores, _ = shop
    other = stores.rename(columns={"store": "sid"})
    X = check_against_pandas(sales, [Join(stores, on="store"),
                                     Join(other, left_on="store", right_on="sid",
                                          overlap="suffix")])
    merged = sales.merge(stores, on="store").merge(other, left_on="store", right_on="sid")
    assert {"size_x", "size_y"} <= set(merged.columns) & set(X.feature_names)


def test_composition_union_left_snowflake():
    s = make_scenario(200, 2, tuple_ratio=5, depth=2, unmatched=0.2, how="left",
                      n_categories=2, random_state=3)
    fact = s.base
    half = len(fact) // 2
    base = Union([fact.iloc[:half], fact.iloc[half:].drop(columns=["f0"])], name="fact")
    check_against_pandas(base, s.joins, target="y", fill_value=-1.0)


# ---------------------------------------------------------------- column kinds and inputs
def test_decimal_bool_date_category_columns():
    base = pd.DataFrame({
        "k": [1, 2, 1],
        "price": [decimal.Decimal("1.25"), decimal.Decimal("2.50"), None],
        "flag": [True, False, True],
        "day": [datetime.date(1970, 1, 2), datetime.date(1970, 1, 11), None],
        "ts": pd.to_datetime(["1970-01-01 12:00", "1970-01-03 00:00", "1970-01-01 00:00"]),
        "kind": pd.Categorical(["x", None, "y"], categories=["x", "y", "z"]),
    })
    dim = pd.DataFrame({"k": [1, 2], "n": pd.array([5, None], dtype="Int64")})
    X = from_tables(base, [Join(dim, on="k")], fill_value=0.0)
    frame = _frame_of(X)
    assert_array_equal(frame["price"], [1.25, 2.5, 0.0])
    assert_array_equal(frame["flag"], [1.0, 0.0, 1.0])
    assert_array_equal(frame["day"], [1.0, 10.0, 0.0])
    assert_array_equal(frame["ts"], [0.5, 2.0, 0.0])
    assert_array_equal(frame[["kind_x", "kind_y", "kind_z"]], [[1, 0, 0], [0, 0, 0], [0, 1, 0]])
    assert_array_equal(frame["n"], [5.0, 0.0, 5.0])


def test_arrow_and_parquet_inputs(shop, tmp_path):
    sales, stores, _ = shop
    path = tmp_path / "stores.parquet"
    pq.write_table(pa.Table.from_pandas(stores), path)
    decimals = pa.table({"store": [1, 2, 3, 4],
                         "tax": pa.array([decimal.Decimal("0.10"), None, decimal.Decimal("0.30"),
                                          decimal.Decimal("0.40")], pa.decimal128(5, 2))})
    expected = from_tables(sales, [Join(stores, on="store")]).materialize()
    for table in (pa.Table.from_pandas(stores), path, str(path)):
        X = from_tables(pa.Table.from_pandas(sales), [Join(table, on="store")])
        assert_array_equal(X.materialize(), expected)
    X = from_tables(sales, [Join(decimals, on="store")], features=["tax"])
    assert_allclose(X.materialize().ravel(), [0.0, 0.1, 0.0, 0.3, 0.1])
    assert from_tables(path, features=["size"]).shape == (4, 1)


def test_null_keys_match_nothing():
    base = pd.DataFrame({"k": [1.0, np.nan, 2.0], "v": [1.0, 2.0, 3.0]})
    dim = pd.DataFrame({"k": [np.nan, 1.0, 2.0], "d": [100.0, 10.0, 20.0]})
    X = from_tables(base, [Join(dim, on="k", how="left")])
    assert_array_equal(_frame_of(X)["d"], [10.0, 0.0, 20.0])
    X = from_tables(base, [Join(dim, on="k", how="outer")])
    assert X.shape[0] == 4  # the null-key dimension row stays unmatched
    s = pd.DataFrame({"k": ["a", None], "v": [1.0, 2.0]})
    X = from_tables(s, [Join(pd.DataFrame({"k": ["a", None], "d": [1.0, 5.0]}), on="k")])
    assert X.shape[0] == 1


def test_string_and_categorical_keys_match():
    base = pd.DataFrame({"k": pd.Categorical(["a", "b", "a"]), "v": [1.0, 2.0, 3.0]})
    dim = pd.DataFrame({"k": ["b", "a"], "d": [2.0, 1.0]})
    X = from_tables(base, [Join(dim, on="k")])
    assert_array_equal(_frame_of(X)["d"], [1.0, 2.0, 1.0])


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
@pytest.mark.parametrize("n_categories", [0, 4])
def test_synthetic_stars(how, n_categories):
    s = make_star(500, 3, tuple_ratio=5, n_categories=n_categories, sparsity=0.3, how=how,
                  random_state=7)
    check_against_pandas(s.base, s.joins, target=s.target, ordered=how != "outer")


def test_products_equal_the_materialized_matrix():
    s = make_scenario(400, 2, tuple_ratio=4, n_categories=3, n_overlap=2, how="left",
                      unmatched=0.1, random_state=2)
    X, _ = check_against_pandas(s.base, s.joins, target=s.target, fill_value=0.5), None
    T = X.materialize()
    w = np.random.RandomState(0).standard_normal(X.shape[1])
    assert_allclose(X @ w, T @ w, rtol=1e-10)
    assert_allclose(X.gram(), T.T @ T, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_wide_integer_and_multi_column_keys(how):
    """Keys far apart (hashed, not addressed) and two-column keys renumbered by the right side."""
    rng = np.random.RandomState(1)
    big = np.array([3, 10**12, -(10**15), 7 * 10**9])
    fact = pd.DataFrame({"a": big[rng.randint(4, size=40)], "b": rng.randint(1000, size=40),
                         "v": rng.standard_normal(40)})
    dim = fact.iloc[[0, 1, 2, 2, 5, 9]][["a", "b"]].assign(d=rng.standard_normal(6))
    dim.loc[dim.index[-1], "b"] = 5000  # matches nothing
    check_against_pandas(fact, [Join(dim, on=["a", "b"], how=how)], ordered=how != "outer")
    check_against_pandas(fact, [Join(dim.drop(columns="b"), on="a", how=how)],
                         ordered=how != "outer")


def test_polars_input(shop):
    pl = pytest.importorskip("polars")
    sales, stores, _ = shop
    expected = from_tables(sales, [Join(stores, on="store")]).materialize()
    X = from_tables(pl.from_pandas(sales), [Join(pl.from_pandas(stores), on="store")])
    assert_array_equal(X.materialize(), expected)


def test_sparse_block_across_row_chunks():
    """Numeric (with zeros) and one-hot columns in one CSR, built a few rows at a time."""
    rng = np.random.RandomState(0)
    base = pd.DataFrame({"k": rng.randint(5, size=50),
                         "x": rng.choice([0.0, 1.5, -2.0], size=50),
                         "c": rng.choice(["a", "b", None], size=50)})
    dim = pd.DataFrame({"k": np.arange(5), "z": [0.0, 1.0, 0.0, 2.0, 3.0],
                        "t": ["u", "v", "u", None, "w"]})
    # Over 1/6 full, these tables would be encoded dense: kept CSR, they are encoded a few
    # rows at a time.
    with sources_as_given(dense_storage_density=2.0, table_chunk_rows=7):
        X = check_against_pandas(base, [Join(dim, on="k", how="left")])
    assert all(sp.issparse(b.source) for b in X.blocks)


@pytest.mark.parametrize("layout", ["csr", "row-major", "column-major"])
def test_every_storage_layout_of_an_encoded_table(shop, layout):
    """Tables are encoded straight into the layout the core stores: the same values."""
    density, min_rows = {"csr": (2.0, 1 << 16), "row-major": (0.0, 1 << 40),
                         "column-major": (0.0, 1)}[layout]
    sales, stores, items = shop
    # A category only the other table has: a column the fact table's block never writes.
    fact = pd.DataFrame({"b": [1, 1, 2, 9, 2], "x": [0.0, 1.0, 0.0, 2.0, 3.0],
                         "blood": ["A", "B", None, "A", None]})
    dim = pd.DataFrame({"b": [1, 2], "blood": ["O", "A"], "z": [5.0, 0.0]})
    with sources_as_given(dense_storage_density=density, column_major_min_rows=min_rows):
        check_against_pandas(sales, [Join(stores, on="store", how="left"),
                                     Join(items, on="item", how="left")])
        X = check_against_pandas(fact, [Join(dim, on="b", how="left", overlap="coalesce")])
    source = X.blocks[0].source
    assert sp.issparse(source) == (layout == "csr")
    assert source.flags.f_contiguous if layout == "column-major" else True


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_two_column_keys_over_wide_ranges(how):
    """Keys whose combined codes would need compacting (a part's suppliers, say): matched by
    looking each pair up among its first value's few pairs, as pandas.merge matches them."""
    rng = np.random.default_rng(7)
    parts = rng.choice(10**6, 50, replace=False)
    dim = pd.DataFrame({"p": np.repeat(parts, 3), "s": rng.integers(0, 10**5, 150),
                        "cost": rng.random(150)}).drop_duplicates(["p", "s"])
    pick = rng.integers(0, len(dim), 300)
    fact = pd.DataFrame({"p": dim["p"].to_numpy()[pick], "s": dim["s"].to_numpy()[pick],
                         "x": rng.random(300)})
    fact.loc[:30, "s"] = rng.integers(0, 10**5, 31)  # pairs the dimension lacks
    check_against_pandas(fact, [Join(dim, on=["p", "s"], how=how)], ordered=how != "outer")


@pytest.mark.parametrize("pair_slots", [0, 8, 100])  # hashed, looked up where few, looked up
@pytest.mark.parametrize("pairs_per_prefix", [1, 4, 40])
def test_two_column_key_codes_match_equal_pairs(pairs_per_prefix, pair_slots):
    """Left and right key pairs get equal codes exactly when equal; -1 when absent or null."""
    from sklearn_ilargi.tables._keys import key_codes

    rng = np.random.default_rng(pairs_per_prefix)
    n_right = 400
    prefixes = rng.integers(0, 10**9, max(1, n_right // pairs_per_prefix))
    right_a = rng.choice(prefixes, n_right).astype(float)
    right_b = rng.integers(0, 10**9, n_right).astype(float)
    pick = rng.integers(0, n_right, 1000)
    left_a, left_b = right_a[pick].copy(), right_b[pick].copy()
    left_b[:100] = rng.integers(0, 10**9, 100)  # pairs the right side lacks
    left_a[100:150] = np.nan
    right_b[:20] = np.nan
    with config_context(pair_slots=pair_slots):
        left, right = key_codes([pd.Series(left_a), pd.Series(left_b)],
                                [pd.Series(right_a), pd.Series(right_b)], ["l.a", "l.b"],
                                ["r.a", "r.b"])
    code_of = {}
    for code, pair in zip(right, zip(right_a, right_b)):
        if np.isnan(pair).any():
            assert code == -1
        else:
            assert code_of.setdefault(pair, code) == code >= 0
    assert len(set(code_of.values())) == len(code_of)
    expected = [code_of.get(pair, -1) for pair in zip(left_a, left_b)]
    assert_array_equal(left, expected)


@pytest.mark.parametrize("values", [["b", None, "a", "b", "c", None], [], [None, None]])
def test_arrow_strings_factorize_like_pandas(values):
    """Arrow-backed strings (several chunks, nulls) get pandas.factorize's codes and order."""
    from sklearn_ilargi.tables._input import factorize

    chunked = pa.chunked_array([values[:3], values[3:]], type=pa.string())
    series = pd.Series(pd.arrays.ArrowStringArray(chunked))
    codes, names = factorize(series)
    expected_codes, expected_names = pd.factorize(pd.Series(values, dtype=object))
    assert_array_equal(codes, expected_codes)
    assert names == [str(n) for n in expected_names]
