import numpy as np
import pytest

from sklearn_ilargi.normalized._row_map import RowMap
from sklearn_ilargi.normalized._row_map import index_dtype


def test_compose_snowflake_keeps_misses():
    fact_to_orders = RowMap(np.array([0, 2, -1, 1]), 3)
    orders_to_customer = RowMap(np.array([1, -1, 0]), 2)
    composed = fact_to_orders.compose(orders_to_customer)
    assert list(composed.indices) == [1, 0, -1, -1]
    assert composed.n_source == 2 and composed.has_missing


def test_compose_with_identity_and_mismatch():
    inner = RowMap(np.array([1, 0]), 2)
    assert RowMap.identity(2).compose(inner) is inner
    with pytest.raises(ValueError, match="Cannot compose"):
        RowMap.identity(3).compose(inner)


def test_take_and_mask():
    row_map = RowMap(np.array([3, -1, 0, 1]), 4)
    taken = row_map.take(np.array([0, 2, 2]))
    assert list(taken.indices) == [3, 0, 0] and not taken.has_missing
    masked = RowMap.identity(3).mask(np.array([False, True, False]))
    assert list(masked.indices) == [0, -1, 2] and masked.has_missing


def test_int32_where_it_fits():
    assert index_dtype(10) == np.int32
    assert index_dtype(2**31) == np.int64
