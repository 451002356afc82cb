"""from_tables over a Dask DataFrame fact table equals from_tables over the same pandas one."""

import time

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal

dask = pytest.importorskip("dask", reason="the distributed extra (dask) is not installed")
dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed")

from sklearn_ilargi import (  # noqa: E402
    FactorizedLogisticRegression, FactorizedRidge, Join, from_tables)
from sklearn_ilargi.normalized import PartitionedMatrix  # noqa: E402
from sklearn_ilargi.tests._clusters import in_process_client  # noqa: E402


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def tables(seed=0, n=120):
    """Sales (with a null store key and an offset column), stores (strings: one-hot), and
    regions hanging from stores (a snowflake); store 10 and 11 are in no table."""
    rng = np.random.default_rng(seed)
    stores = pd.DataFrame({"store": np.arange(10), "size": rng.random(10) * 100,
                           "city": rng.choice(["Delft", "Leiden", "Gouda"], 10),
                           "region": rng.integers(0, 4, 10)})
    regions = pd.DataFrame({"region_id": np.arange(3), "people": rng.random(3)})
    sales = pd.DataFrame({"store": rng.integers(0, 12, n).astype(float),
                          "units": rng.random(n) + 1e6, "promo": rng.random(n) < 0.5,
                          "price": rng.random(n), "y": rng.random(n)})
    sales.loc[3, "store"] = np.nan
    return sales, stores, regions


def snowflake(stores, regions, how):
    return [Join(stores, on="store", how=how, name="stores"),
            Join(regions, left_on="region", right_on="region_id", parent="stores", how=how)]


def assert_same(expected, got):
    X0, y0 = expected
    X, y = got
    assert isinstance(X, PartitionedMatrix)
    assert list(X.feature_names) == list(X0.feature_names)
    assert X.shape == X0.shape
    assert_allclose(X.materialize(sparse=False).compute(), X0.materialize(sparse=False))
    assert_array_equal(y.compute(), y0)


@pytest.mark.parametrize("how", ["inner", "left"])
def test_snowflake_equals_the_in_memory_tables(how):
    sales, stores, regions = tables()
    joins = snowflake(stores, regions, how)
    expected = from_tables(sales, joins, target="y")
    got = from_tables(dd.from_pandas(sales, npartitions=5), joins, target="y")
    assert_same(expected, got)
    assert got[0].npartitions == 5
    model = FactorizedRidge(alpha=0.1).fit(*got)
    reference = FactorizedRidge(alpha=0.1).fit(*expected)
    assert_allclose(model.coef_, reference.coef_, rtol=1e-9)


def test_an_inner_join_can_empty_a_partition():
    sales, stores, _ = tables()
    sales = sales.sort_values("store", na_position="first").reset_index(drop=True)
    sales.loc[:39, "store"] = 99  # the whole first partition matches nothing
    expected = from_tables(sales, [Join(stores, on="store")], target="y")
    got = from_tables(dd.from_pandas(sales, chunksize=40, sort=False),
                      [Join(stores, on="store")], target="y")
    assert got[0].row_counts == (0, 40, 16)  # the emptied partition stays, empty
    assert_same(expected, got)


def test_multi_column_keys_targets_in_a_dimension_and_features():
    rng = np.random.default_rng(1)
    dim = pd.DataFrame({"a": [0, 0, 1, 1], "b": ["x", "y", "x", "y"], "w": rng.random(4),
                        "label": [1.0, 2.0, 3.0, 4.0]})
    fact = pd.DataFrame({"a": rng.integers(0, 2, 50), "b": rng.choice(["x", "y"], 50),
                         "v": rng.random(50), "u": rng.random(50)})
    joins = [Join(dim, on=["a", "b"])]
    expected = from_tables(fact, joins, target="label", features=["v", "w"])
    got = from_tables(dd.from_pandas(fact, npartitions=3), joins, target="label",
                      features=["v", "w"])
    assert_same(expected, got)
    X = from_tables(dd.from_pandas(fact, npartitions=3), joins)
    assert list(X.feature_names) == list(from_tables(fact, joins).feature_names)


def test_categorical_fact_columns_can_be_dropped():
    sales, stores, _ = tables()
    sales["channel"] = np.where(sales["promo"], "web", "shop")
    frame = dd.from_pandas(sales, npartitions=3)
    with pytest.raises(TypeError, match="column 'channel'.*categorical='drop'"):
        from_tables(frame, [Join(stores, on="store")])
    X = from_tables(frame, [Join(stores, on="store")], categorical="drop")
    assert "channel" not in X.feature_names and "city" not in "".join(X.feature_names)


@pytest.mark.parametrize("join, message", [
    (lambda s: Join(s, on="store", how="outer"), "how='outer' is not supported"),
    (lambda s: Join(pd.concat([s, s]), on="store"), "not unique"),
    (lambda s: Join(s.astype({"store": str}), on="store"), "cannot be equal"),
    (lambda s: Join(s, pairs=([0], [0])), "pairs are not supported"),
    (lambda s: Join(s, on="shop"), r"left keys \['shop'\] are in no earlier tables"),
])
def test_unsupported_joins_say_so(join, message):
    sales, stores, _ = tables()
    with pytest.raises((ValueError, TypeError, KeyError), match=message):
        from_tables(dd.from_pandas(sales, npartitions=2), [join(stores)])


def test_other_errors_name_what_is_wrong():
    sales, stores, _ = tables()
    frame = dd.from_pandas(sales, npartitions=2)
    joins = [Join(stores, on="store", how="left")]
    with pytest.raises(ValueError, match="fill_value=0 only"):
        from_tables(frame, joins, fill_value=1.0)
    with pytest.raises(ValueError, match=r"Join keys \['store'\] cannot be features"):
        from_tables(frame, joins, features=["store", "size"])
    with pytest.raises(KeyError, match="exist in no table"):
        from_tables(frame, joins, features=["size", "nothing"])
    with pytest.raises(KeyError, match="target column 'z'"):
        from_tables(frame, joins, target="z")
    with pytest.raises(ValueError, match="missing for .* target rows"):
        from_tables(frame, joins, target="size")  # left-join misses have no target
    with pytest.raises(ValueError, match="Table 'shops' is empty.*every joined table"):
        from_tables(frame, [Join(stores.iloc[:0], on="store", how="left", name="shops")])


_reads = []


def _read(frame, position):
    """A fact partition as a reader gives it, counted."""
    _reads.append(position)
    return frame


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 5 iterations
def test_a_cluster_reads_the_fact_table_where_asked():
    """On a distributed client, from_tables reads each partition once, for the target (kept
    on the workers) and the row counts; ``X.persist()`` reads it once more and keeps the
    matrix's arrays, and an iterative fit over them then reads nothing again. A closed form
    over the lazy matrix reads each partition once (and one of them once more: the pilot of
    its means)."""
    pytest.importorskip("distributed", reason="distributed is not installed")
    sales, stores, regions = tables(seed=3)
    joins = snowflake(stores, regions, "left")
    expected = from_tables(sales, joins, target="y")
    pieces = np.array_split(np.arange(len(sales)), 4)
    frame = dd.from_delayed([dask.delayed(_read)(sales.iloc[rows], k)
                             for k, rows in enumerate(pieces)], meta=sales.iloc[:0])
    with in_process_client() as client, client.as_current(), \
            dask.config.set(scheduler=client.get):
        _reads.clear()
        X, y = from_tables(frame, joins, target="y")
        assert sorted(_reads) == [0, 1, 2, 3]
        _reads.clear()
        model = FactorizedRidge(alpha=0.1).fit(X, y)
        assert len(_reads) <= 4 + 2 and set(_reads) == {0, 1, 2, 3}
        _reads.clear()
        X = X.persist()
        labels = np.asarray(y)
        FactorizedLogisticRegression(max_iter=5).fit(X, labels > np.median(labels))
        assert sorted(_reads) == [0, 1, 2, 3]
        assert_same(expected, (X, y))
        with pytest.raises(ValueError, match="missing for .* target rows"):
            from_tables(frame, [Join(stores, on="store", how="left")], target="size")
    reference = FactorizedRidge(alpha=0.1).fit(*expected)
    assert_allclose(model.coef_, reference.coef_, rtol=1e-9)


def test_the_key_indexes_are_small_and_leave_the_workers():
    """The indexes that match the fact's keys hold int32 rows (none where every key is
    present), and the workers drop them once the matrix is persisted (no lazy partition
    needs them): only the dimensions, the partitions' arrays and the target stay."""
    pytest.importorskip("distributed", reason="distributed is not installed")
    from sklearn_ilargi.tables._partitioned import _Plan

    sales, stores, regions = tables(seed=5)
    stores.loc[2, "region"] = np.nan  # a snowflake key that is missing
    joins = snowflake(stores, regions, "left")
    frame = dd.from_pandas(sales, npartitions=3)
    plan = _Plan(frame, joins, "y", None, "onehot")
    index, composed = plan.lookup.dims[0][2], plan.lookup.dims[1][2]
    assert index.rows is None and composed.dtype == np.int32
    assert composed[2] == -1
    expected = from_tables(sales, joins, target="y")
    with in_process_client() as client, client.as_current(), \
            dask.config.set(scheduler=client.get):
        X, y = from_tables(frame, joins, target="y")
        X = X.persist()  # read: the lazy matrix, and its reference to the indexes, are gone
        for _ in range(100):  # a release reaches the workers a moment later
            held = {key for keys in client.has_what().values() for key in keys}
            if not any(str(key).startswith("_Lookup") for key in held):
                break
            time.sleep(0.05)
        assert not any(str(key).startswith("_Lookup") for key in held)
        assert_same(expected, (X, y))


def test_each_dimension_is_held_once_while_planning():
    """The client plans with each dimension encoded once, in its stored layout: its source
    is the encoding itself (no join of it, no relaid copy), its columns placed as the
    in-memory from_tables places them (a category before a number here)."""
    import tracemalloc

    from sklearn_ilargi.tables._partitioned import _Plan

    rng = np.random.default_rng(7)
    n = 200_000
    orders = pd.DataFrame({"order": np.arange(n), "status": rng.choice(["F", "O", "P"], n),
                           "price": rng.random(n) * 1e6, "day": pd.Timestamp("1995-01-01")
                           + pd.to_timedelta(rng.integers(0, 2000, n), unit="D"),
                           "priority": rng.choice(["1-URGENT", "2-HIGH", "3-LOW"], n)})
    lines = pd.DataFrame({"order": rng.integers(0, n, 50), "units": rng.random(50),
                          "y": rng.random(50)})
    joins = [Join(orders, on="order", name="orders")]
    frame = dd.from_pandas(lines, npartitions=2)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        plan = _Plan(frame, joins, "y", None, "onehot")
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    (dim,) = plan.dims
    assert dim.source.flags.f_contiguous and dim.source.shape == (n, 8)
    assert peak < 1.5 * dim.source.nbytes
    assert_same(from_tables(lines, joins, target="y"), from_tables(frame, joins, target="y"))


def test_the_dimensions_go_straight_to_the_workers():
    """The dimensions are scattered from the client to the workers directly (through the
    scheduler the client and the scheduler would each serialize a copy), unless the client
    says otherwise."""
    pytest.importorskip("distributed", reason="distributed is not installed")
    sales, stores, regions = tables(seed=2)
    joins = snowflake(stores, regions, "inner")
    expected = from_tables(sales, joins, target="y")
    for direct_to_workers, direct in ((None, True), (False, False)):
        with in_process_client(direct_to_workers=direct_to_workers) as client, \
                client.as_current(), dask.config.set(scheduler=client.get):
            calls, scatter = [], client.scatter

            def spy(*args, **kwargs):
                calls.append(kwargs.get("direct"))
                return scatter(*args, **kwargs)

            client.scatter = spy
            got = from_tables(dd.from_pandas(sales, npartitions=3), joins, target="y")
            assert calls and set(calls) == {direct}
            assert_same(expected, got)


def test_a_partition_is_built_by_the_task_that_reads_its_arrays():
    """Each partition's arrays (fact values, row maps, target) are one task's result, and the
    task that builds the partition takes them from it: no task holds a piece apart, which a
    worker would keep for every partition read ahead of its build."""
    from dask.utils import key_split

    sales, stores, regions = tables(seed=7)
    frame = dd.from_pandas(sales, npartitions=3)
    with dask.config.set(scheduler="synchronous"):
        X, _ = from_tables(frame, snowflake(stores, regions, "left"), target="y")
    for part in X.partitions:
        names = {key_split(key) for key in dict(part.__dask_graph__())}
        assert "partition_arrays" in names and "item" not in names  # key_split drops the _
