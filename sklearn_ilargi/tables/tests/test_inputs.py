"""Tables read the way users read them: every reader gives the same matrix, bit for bit.

The same tables, written to Parquet once, are read back as pandas objects (``Decimal`` and
``datetime.date`` objects: ``pandas.read_parquet``'s defaults), pandas with Arrow dtypes, a
pyarrow Table, a Parquet path, a pyarrow Dataset, a RecordBatchReader, polars (eager and lazy)
and a DuckDB relation; ``from_tables`` must give the same ``materialize()`` and target from each.
Decimals are the float64 nearest to them (``float(decimal.Decimal)``), which Arrow's own cast to
float64 is not.
"""

import datetime
import decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

from sklearn_ilargi import Join, Union, from_tables
from sklearn_ilargi.tables._input import (
    NUMERIC,
    decimal_floats,
    numeric_values,
)

EPOCH = datetime.date(1970, 1, 1)
#: Arrow's view types came with pyarrow 16.
HAS_VIEWS = hasattr(pa, "string_view")
NEEDS_VIEWS = pytest.mark.skipif(not HAS_VIEWS, reason="pyarrow before 16 has no view types")


def _polars():
    return pytest.importorskip("polars", reason="polars is not installed (test extra)")


def _duckdb():
    return pytest.importorskip("duckdb", reason="duckdb is not installed (test extra)")


def _batches(path):
    parquet = pq.ParquetFile(path)
    return pa.RecordBatchReader.from_batches(parquet.schema_arrow,
                                             parquet.iter_batches(batch_size=7))


#: Each way to read a Parquet file into something ``from_tables`` takes.
READERS = {
    "pandas": pd.read_parquet,
    "pandas-arrow": lambda path: pd.read_parquet(path, dtype_backend="pyarrow"),
    "arrow": pq.read_table,
    "path": lambda path: path,
    "dataset": ds.dataset,
    "record-batch-reader": _batches,
    "polars": lambda path: _polars().read_parquet(path),
    "polars-lazy": lambda path: _polars().scan_parquet(path),
    "duckdb": lambda path: _duckdb().sql(f"SELECT * FROM read_parquet('{path}')"),
}


# ---------------------------------------------------------------- decimals, exactly
def _decimal_array(unscaled, kind):
    """An Arrow decimal array of these unscaled integers (None: null), built from buffers so
    that any precision and scale can be tried."""
    data = b"".join((u or 0).to_bytes(kind.byte_width, "little", signed=True) for u in unscaled)
    valid = pa.array([u is not None for u in unscaled]).buffers()[1]
    return pa.Array.from_buffers(kind, len(unscaled), [valid, pa.py_buffer(data)])


def _nearest_float(unscaled, scale):
    """``float(Decimal)`` of the exact decimal (a context wide enough not to round)."""
    if unscaled is None:
        return np.nan
    return float(decimal.Decimal(unscaled).scaleb(-scale, decimal.Context(prec=200)))


@st.composite
def decimal_columns(draw):
    width, most = draw(st.sampled_from([(pa.decimal32, 9), (pa.decimal64, 18),
                                        (pa.decimal128, 38), (pa.decimal256, 76)]))
    precision = draw(st.integers(1, most))
    scale = draw(st.integers(-30, precision + 30))  # beyond 10**22 either way too
    bound = 10 ** precision - 1
    # unscaled integers of every size: within 2**53, around it, within int64, beyond
    sizes = st.one_of(st.integers(-bound, bound),
                      st.integers(-2 ** 53 - 3, 2 ** 53 + 3).filter(lambda u: abs(u) <= bound),
                      st.integers(-2 ** 63, 2 ** 63 - 1).filter(lambda u: abs(u) <= bound))
    unscaled = draw(st.lists(st.one_of(st.none(), sizes), min_size=1, max_size=30))
    return unscaled, scale, width(precision, scale)


@settings(max_examples=150, deadline=None)
@given(decimal_columns(), st.integers(0, 3))
def test_decimal_floats_are_correctly_rounded(column, offset):
    unscaled, scale, kind = column
    array = _decimal_array(unscaled, kind)
    expected = [_nearest_float(u, scale) for u in unscaled]
    assert_array_equal(decimal_floats(array), expected)
    start = min(offset, len(array))
    sliced = array.slice(start)  # an array that starts inside its buffer
    assert_array_equal(decimal_floats(sliced), expected[start:])
    chunked = pa.chunked_array([array, sliced, array.slice(0, 0)], kind)
    assert_array_equal(decimal_floats(chunked), expected + expected[start:])
    assert decimal_floats(pa.chunked_array([], kind)).shape == (0,)


@pytest.mark.parametrize("text", ["57.55", "0.07", "-1e-30", "12345678901234567.89",
                                  "9" * 38, "1" + "0" * 60 + ".5"])
def test_decimal_floats_equal_float_of_decimal(text):
    value = decimal.Decimal(text)
    kind = pa.decimal256(76, max(-value.as_tuple().exponent, 0))
    assert decimal_floats(pa.array([value, None], kind))[0] == float(value)


@st.composite
def decimal_objects(draw):
    """An object column of ``Decimal``s of a few scales, nulls of every kind among them."""
    scales = draw(st.lists(st.integers(-5, 30), min_size=1, max_size=3))
    digits = st.integers(-10 ** 40 + 1, 10 ** 40 - 1)
    values = draw(st.lists(st.one_of(
        st.tuples(digits, st.sampled_from(scales)).map(
            lambda d: decimal.Decimal(d[0]).scaleb(-d[1], decimal.Context(prec=100))),
        st.sampled_from([None, np.nan, pd.NA, decimal.Decimal("NaN"),
                         decimal.Decimal("-0.00")])), min_size=1, max_size=30))
    return pd.Series(values, dtype=object)


@given(decimal_objects())
def test_decimal_objects_are_float_of_decimal(series):
    """Every value is ``float(Decimal)`` bit for bit (NaN where null), a negative zero made
    zero as in an Arrow decimal."""
    expected = np.array([np.nan if pd.isna(v) else float(v) for v in series]) + 0.0
    values = numeric_values(series, NUMERIC, np.nan, "column 'p'")
    assert_array_equal(values.view(np.int64)[~np.isnan(values)],
                       expected.view(np.int64)[~np.isnan(expected)])
    assert_array_equal(np.isnan(values), np.isnan(expected))


def test_decimal_objects_match_arrow_decimals_bit_for_bit():
    """Objects and the Arrow decimal they came from give the same bits, -0 included."""
    values = [decimal.Decimal("57.55"), None, decimal.Decimal("-0.00"),
              decimal.Decimal("0.07"), decimal.Decimal("-1.10")]
    objects = numeric_values(pd.Series(values, dtype=object), NUMERIC, 0.0, "p")
    price = pa.array(values, pa.decimal128(15, 2))
    arrow = numeric_values(pd.Series(decimal_floats(price)), NUMERIC, 0.0, "p")
    assert_array_equal(objects.view(np.int64), arrow.view(np.int64))
    assert not np.signbit(objects[objects == 0]).any()


def test_decimal_target_nulls_are_counted():
    """A decimal target with nulls is refused, whichever way its nulls are spelled."""
    for null in (None, np.nan, pd.NA, decimal.Decimal("NaN")):
        base = pd.DataFrame({"x": [1.0, 2.0, 3.0],
                             "price": pd.Series([decimal.Decimal("1.5"), null,
                                                 decimal.Decimal("2")], dtype=object)})
        with pytest.raises(ValueError, match="target column 'price' of table .* has 1 null"):
            from_tables(base, target="price")
    arrow = pa.table({"x": [1.0, 2.0], "price": pa.array([decimal.Decimal("1.5"), None],
                                                          pa.decimal128(15, 2))})
    with pytest.raises(ValueError, match="has 1 null"):
        from_tables(arrow, target="price")
    whole = arrow.slice(0, 1)
    with pytest.raises(ValueError, match=r"has 1 null values \(1 in 'u\[1\]'\)"):
        from_tables(Union([whole.to_pandas(), arrow.to_pandas()], name="u"), target="price")
    _, y = from_tables(Union([whole.to_pandas(), whole], name="u"), target="price")
    assert_array_equal(y, [1.5, 1.5])


def test_arrow_decimal_is_not_cast():
    """Arrow's cast makes 57.55 the float after the one nearest to it; from_tables does not."""
    price = pa.array([decimal.Decimal("57.55"), decimal.Decimal("0.07")], pa.decimal128(15, 2))
    assert price.cast(pa.float64())[0].as_py() != 57.55  # what a plain cast would give
    base = pa.table({"price": price})
    for table in (base, base.to_pandas(), base.to_pandas(types_mapper=pd.ArrowDtype)):
        assert_array_equal(from_tables(table).materialize().ravel(), [57.55, 0.07])


def test_decimal_target_is_correctly_rounded():
    price = pa.array([decimal.Decimal("57.55"), decimal.Decimal("1.10")], pa.decimal128(15, 2))
    base = pa.table({"x": [1.0, 2.0], "price": price})
    for table in (base, base.to_pandas(), base.to_pandas(types_mapper=pd.ArrowDtype)):
        _, y = from_tables(table, target="price")
        assert y.dtype == np.float64
        assert_array_equal(y, [57.55, 1.1])


# ---------------------------------------------------------------- dates and datetimes
def test_arrow_dates_in_pandas_are_days():
    days = pa.array([datetime.date(1970, 1, 2), None, datetime.date(1969, 12, 31)])
    base = pd.DataFrame({
        "d32": pd.array(days, dtype=pd.ArrowDtype(pa.date32())),
        "d64": pd.array(days.cast(pa.date64()), dtype=pd.ArrowDtype(pa.date64())),
    })
    X = from_tables(base, fill_value=0.5)
    assert_array_equal(X.materialize(), [[1.0, 1.0], [0.5, 0.5], [-1.0, -1.0]])


@pytest.mark.parametrize("zone", [None, "Europe/Amsterdam"])
def test_same_instant_gives_same_days_in_every_unit(zone):
    """A count of nanoseconds since 1970 has more digits than float64 holds: the days must
    not depend on the unit the instant is counted in."""
    rng = np.random.default_rng(0)
    seconds = rng.integers(-4 * 10 ** 9, 4 * 10 ** 9, size=200)
    instants = pd.Series(pd.to_datetime(seconds, unit="s"))
    if zone is not None:
        instants = instants.dt.tz_localize("UTC").dt.tz_convert(zone)
    expected = seconds // 86400 + (seconds % 86400) / 86400
    for unit in ("s", "ms", "us", "ns"):
        numpy_typed = instants.dt.as_unit(unit)
        arrow_typed = numpy_typed.astype(pd.ArrowDtype(pa.timestamp(unit, tz=zone)))
        for column in (numpy_typed, arrow_typed, pa.array(numpy_typed)):
            X = from_tables(pa.table({"t": column}) if isinstance(column, pa.Array)
                            else pd.DataFrame({"t": column}))
            assert_array_equal(X.materialize().ravel(), expected)


# ---------------------------------------------------------------- the inputs themselves
def _shop(tmp_path):
    fact = pa.table({"k": [1, 2, 1], "units": [3.0, 4.0, 5.0],
                     "price": pa.array([decimal.Decimal("57.55"), None, decimal.Decimal("1")],
                                       pa.decimal128(15, 2))})
    dim = pa.table({"k": [1, 2], "city": ["Delft", "Leiden"]})
    paths = []
    for name, table in (("fact", fact), ("dim", dim)):
        paths.append(str(tmp_path / f"{name}.parquet"))
        pq.write_table(table, paths[-1])
    return paths


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_is_a_table(reader, tmp_path):
    fact, dim = _shop(tmp_path)
    X, y = from_tables(READERS[reader](fact), [Join(READERS[reader](dim), on="k")],
                       target="units")
    assert list(X.feature_names) == ["price", "city_Delft", "city_Leiden"]
    assert_array_equal(X.materialize(), [[57.55, 1, 0], [0, 0, 1], [1, 1, 0]])
    assert_array_equal(y, [3.0, 4.0, 5.0])


@NEEDS_VIEWS
def test_string_views_in_pandas_are_strings():
    """``read_parquet(dtype_backend="pyarrow")`` of strings stored as views gives pandas
    columns that pandas itself cannot factorize or compare: keys and features alike are read
    as the same strings in plain Arrow are."""
    view = pd.ArrowDtype(pa.string_view())
    fact = {"k": ["b", "a", "b", None], "word": ["x", None, "y", "x"], "units": [1.0, 2, 3, 4]}
    dim = {"k": ["a", "b"], "size": [10.0, 20.0]}

    def frame(columns, dtype, index=None):
        return pd.DataFrame({c: pd.array(v, dtype=dtype) if c in ("k", "word") else v
                             for c, v in columns.items()}, index=index)

    expected = from_tables(frame(fact, pd.ArrowDtype(pa.string())),
                           [Join(frame(dim, pd.ArrowDtype(pa.string())), on="k", how="left")],
                           target="units")
    got = from_tables(frame(fact, view, index=[7, 5, 9, 1]),
                      [Join(frame(dim, view), on="k", how="left")], target="units")
    assert list(got[0].feature_names) == list(expected[0].feature_names) == [
        "word_x", "word_y", "size"]
    assert_array_equal(got[0].materialize(), expected[0].materialize())
    assert_array_equal(got[1], expected[1])


def test_arrow_dictionaries_in_pandas_are_categoricals():
    """A pandas column of Arrow dictionary type, key or feature, is read as the Arrow
    column is (a categorical), not refused as a key of unknown type."""
    words = pa.array(["b", "a", None, "b"]).dictionary_encode()
    fact = pa.table({"k": words, "word": words, "units": [1.0, 2.0, 3.0, 4.0]})
    dim = pa.table({"k": ["a", "b"], "size": [10.0, 20.0]})
    expected = from_tables(fact, [Join(dim, on="k", how="left")], target="units")
    got = from_tables(fact.to_pandas(types_mapper=pd.ArrowDtype),
                      [Join(dim.to_pandas(), on="k", how="left")], target="units")
    assert list(got[0].feature_names) == list(expected[0].feature_names)
    assert_array_equal(got[0].materialize(), expected[0].materialize())
    assert_array_equal(got[1], expected[1])


@pytest.mark.parametrize("arrow_type", [pa.list_(pa.int64()), pa.duration("s")]
                         + ([pa.binary_view()] if HAS_VIEWS else []), ids=str)
def test_arrow_dtypes_without_encoding_are_named(arrow_type):
    values = pa.array([[1], [2]] if pa.types.is_list(arrow_type) else
                      [b"a", b"b"] if pa.types.is_binary_view(arrow_type) else [1, 2],
                      arrow_type)
    table = pd.DataFrame({"x": pd.array(values, dtype=pd.ArrowDtype(arrow_type)),
                          "z": [1.0, 2.0]})
    with pytest.raises(TypeError, match="Table 'base' column 'x' cannot be encoded"):
        from_tables(table)
    X = from_tables(table, features=["z"])
    assert_array_equal(X.materialize(), [[1.0], [2.0]])


def test_record_batch_reader_in_a_union(tmp_path):
    fact, _ = _shop(tmp_path)
    X = from_tables(Union([_batches(fact), _batches(fact)]), features=["units"])
    assert_array_equal(X.materialize().ravel(), [3.0, 4.0, 5.0] * 2)
    with pytest.raises(TypeError, match="Union takes a list of tables, got a single "
                                        "RecordBatchReader"):
        Union(_batches(fact))


def test_dataset_reads_only_the_columns_needed(tmp_path):
    """A column whose stored values cannot be read as its declared type is never read."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": [1.0, 2.0], "bad": ["a", "b"]}), path)
    dataset = ds.dataset(path, schema=pa.schema({"x": pa.float64(), "bad": pa.int8()}))
    with pytest.raises(pa.ArrowInvalid):
        dataset.to_table(columns=["bad"])
    assert_array_equal(from_tables(dataset, features=["x"]).materialize().ravel(), [1.0, 2.0])


def test_parquet_path_reads_one_needed_column_at_a_time(tmp_path, monkeypatch):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({
        "x": [1.0, 2.0], "unused": ["a", "b"],
        "price": pa.array([decimal.Decimal("57.55"), decimal.Decimal("2")],
                          pa.decimal128(15, 2))}), path)
    read = []
    original = pq.ParquetFile.read

    def recorded(self, columns=None, **kwargs):
        read.append(columns)
        return original(self, columns=columns, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", recorded)
    X = from_tables(str(path), features=["x", "price"])
    assert_array_equal(X.materialize(), [[1.0, 57.55], [2.0, 2.0]])  # 57.55: not cast
    assert sorted(read) == [["price"], ["x"]]


def test_tuple_named_columns_are_columns():
    """What a table finds about a column (its kind, its categories) is kept apart from its
    columns, which pandas may name with tuples."""
    base = pd.DataFrame({"c": ["a", "b"], ("factorized", "c"): [1.0, 2.0],
                         ("kind", "c"): [3.0, 4.0]})
    X = from_tables(base)
    assert list(X.feature_names) == ["c_a", "c_b", "('factorized', 'c')", "('kind', 'c')"]
    assert_array_equal(X.materialize(), [[1, 0, 1, 3], [0, 1, 2, 4]])


def test_unknown_input_names_what_is_taken():
    with pytest.raises(TypeError, match=r"Table 'base' is a dict; expected a pandas DataFrame, "
                                        r".*pyarrow Dataset, a polars DataFrame or LazyFrame, "
                                        r"or an object with the Arrow stream interface"):
        from_tables({"x": [1.0]})


# ---------------------------------------------------------------- every reader, bit for bit
@st.composite
def star_tables(draw):
    """A fact table and a dimension with numeric, decimal, date, datetime, string (Arrow's
    string, large string or string view), categorical, boolean and all-null columns, most
    with nulls."""
    n_fact, n_dim = draw(st.integers(1, 25)), draw(st.integers(1, 8))

    def column(values, size, nulls=True):
        elements = st.one_of(st.none(), values) if nulls else values
        return draw(st.lists(elements, min_size=size, max_size=size))

    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, precision))
    decimal_type = pa.decimal128(precision, scale)
    decimals = st.integers(-10 ** precision + 1, 10 ** precision - 1)  # unscaled
    days = st.integers(-40_000, 60_000).map(lambda d: EPOCH + datetime.timedelta(days=d))
    instants = st.integers(-2 * 10 ** 15, 4 * 10 ** 15).map(  # microseconds since 1970
        lambda us: datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=us))
    words = st.sampled_from(["a", "b", "c", "dé", ""])
    # pandas' Arrow dtypes of string views (how tpchgen-cli stores strings) are read as Arrow
    word_type = draw(st.sampled_from([pa.string(), pa.large_string()]
                                     + ([pa.string_view()] if HAS_VIEWS else [])))
    fact = pa.table({
        "k": pa.array(column(st.integers(0, n_dim), n_fact), pa.int64()),  # n_dim: no match
        "x": pa.array(column(st.floats(-1e12, 1e12), n_fact), pa.float64()),
        "count": pa.array(column(st.integers(-2 ** 63, 2 ** 63 - 1), n_fact), pa.int64()),
        "price": _decimal_array(column(decimals, n_fact), decimal_type),
        "day": pa.array(column(days, n_fact), pa.date32()),
        "at": pa.array(column(instants, n_fact), pa.timestamp("us")),
        "word": pa.array(column(words, n_fact), word_type),
        "flag": pa.array(column(st.booleans(), n_fact), pa.bool_()),
        "unknown": pa.nulls(n_fact),  # all null: the fill value, whichever way it is read
        "y": _decimal_array(column(decimals, n_fact, nulls=False), decimal_type),
    })
    dim = pa.table({
        "k": pa.array(draw(st.permutations(range(n_dim))), pa.int64()),
        "tax": _decimal_array(column(decimals, n_dim), decimal_type),
        "kind": pa.array(column(words, n_dim), pa.string()).dictionary_encode(),
        "opened": pa.array(column(days, n_dim), pa.date32()),
    })
    return fact, dim, draw(st.sampled_from(["inner", "left"])), draw(st.sampled_from([0.0, -1.5]))


def _matrix(fact, dim, how, fill_value):
    try:
        X, y = from_tables(fact, [Join(dim, on="k", how=how, name="dim")], target="y",
                           fill_value=fill_value)
    except ValueError as error:  # all keys unmatched: refused alike by every reader
        return str(error)
    return list(X.feature_names), X.materialize(), y


@pytest.mark.parametrize("reader", READERS)
@settings(max_examples=12, deadline=None)
@given(tables=star_tables())
def test_every_reader_gives_the_same_matrix(reader, tables, tmp_path_factory):
    fact, dim, how, fill_value = tables
    folder = tmp_path_factory.mktemp("tables")
    paths = [str(folder / "fact.parquet"), str(folder / "dim.parquet")]
    pq.write_table(fact, paths[0])
    pq.write_table(dim, paths[1])
    expected = _matrix(fact, dim, how, fill_value)
    got = _matrix(*(READERS[reader](p) for p in paths), how, fill_value)
    if isinstance(expected, str):
        assert got == expected
        return
    assert got[0] == expected[0]
    assert np.array_equal(got[1], expected[1])  # bit for bit: no tolerance
    assert got[2].dtype == np.float64 and np.array_equal(got[2], expected[2])
    if how == "left":  # one target row per fact row, in order: the decimals are float(Decimal)
        price = expected[1][:, expected[0].index("price")]
        assert_array_equal(price, [fill_value if p is None else float(p)
                                   for p in fact.column("price").to_pylist()])
