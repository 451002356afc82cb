"""from_matrices rejects bad input with a message naming the source."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ilargi import NormalizedMatrix

FACT = np.ones((4, 2))
DIM = np.arange(6.0).reshape(3, 2)
MAP = np.array([0, 1, 2, 0])


def make(sources=(FACT, DIM), indicators=(np.arange(4), MAP), mappings=None, **kwargs):
    return NormalizedMatrix.from_matrices(list(sources), list(indicators), mappings, **kwargs)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(sources=(), indicators=()), ValueError, "at least one source"),
        (dict(indicators=(np.arange(4),)), ValueError, "2 sources but 1 indicators"),
        (dict(mappings=[None]), ValueError, "2 sources but 1 mappings"),
        (dict(indicators=(np.arange(4), [0, 1, 2])), ValueError, "covers 3 target rows"),
        (dict(indicators=(np.arange(4), [0, 1, 3, 0])), ValueError, "source 1 points outside"),
        (dict(indicators=(np.arange(4), [0, -2, 1, 0])), ValueError, "source 1 points outside"),
        (dict(indicators=(np.arange(4), [0.0, 1.0, 2.0, 0.0])), TypeError, "must hold integers"),
        (dict(indicators=(np.arange(4), np.zeros((4, 1, 1)))), ValueError, "got 3-D"),
        (dict(indicators=(np.arange(4), np.eye(4, 3) * 2)), ValueError, "only 0 and 1"),
        (dict(indicators=(np.arange(4), np.ones((4, 3)))), ValueError, "has 3 ones"),
        (dict(indicators=(np.arange(4), np.eye(4, 2))), ValueError, "has 2 columns"),
        (dict(sources=(FACT, np.array([[1.0, np.nan]] * 3))), ValueError, "source 1 contains NaN"),
        (dict(sources=(FACT, np.array([[1.0, np.inf]] * 3))), ValueError, "NaN or infinity"),
        (dict(sources=(FACT, sp.csr_matrix([[np.nan, 0]] * 3))), ValueError, "NaN or infinity"),
        (dict(sources=(FACT, np.array([["a", "b"]] * 3))), TypeError, "must be numeric"),
        (dict(sources=(FACT, np.array([[None, 1]] * 3))), TypeError, "dtype object"),
        (dict(sources=(FACT, np.ones(3))), ValueError, "must be 2-D"),
        (dict(mappings=[[0, 1], [2]]), ValueError, "length 2"),
        (dict(mappings=[[0, 1], [2, -3]]), ValueError, "below -1"),
        (dict(mappings=[[0, 1], [2.0, 3.0]]), TypeError, "must hold integers"),
        (dict(mappings=[[0, 1], [2, 2]]), ValueError, "more than one column of source 1"),
        (dict(mappings=[[0, 1], [2, 9]], n_columns=4), ValueError, "points to column 9"),
        (dict(mappings=[np.eye(3, 2), np.ones((3, 2))]), ValueError, "mapped to 3 target"),
        (dict(mappings=[np.eye(3, 2), np.eye(3, 2) * 5]), ValueError, "only 0 and 1"),
        (dict(mappings=[np.eye(3, 2), np.eye(4, 2)]), ValueError, "disagree"),
        (dict(mappings=[np.eye(3, 3), np.eye(3, 2)]), ValueError, "has 3 columns but"),
        (dict(n_columns=3), ValueError, "side by side have 4"),
        (dict(n_columns=-1), ValueError, "non-negative"),
        (dict(feature_names=["a"]), ValueError, "feature_names has 1"),
        (dict(source_names=["only"]), ValueError, "name every source"),
    ],
)
def test_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        make(**kwargs)


def test_source_names_appear_in_messages():
    with pytest.raises(ValueError, match="source 1 \\('customer'\\) points outside"):
        make(indicators=(np.arange(4), [0, 1, 5, 0]), source_names=["orders", "customer"])


def test_inputs_are_not_mutated():
    fact, dim, row_map = FACT.copy(), DIM.copy(), MAP.copy()
    nm = make(sources=(fact, dim), indicators=(np.arange(4), row_map))
    (nm * 2 - 1).gram()
    nm.apply(np.square)
    np.testing.assert_array_equal(fact, FACT)
    np.testing.assert_array_equal(dim, DIM)
    np.testing.assert_array_equal(row_map, MAP)


def test_indicator_and_mapping_matrices_equal_the_maps():
    indicator = sp.csr_matrix((np.ones(3), ([0, 1, 3], [0, 1, 2])), shape=(4, 3))
    mapping = np.zeros((5, 2))
    mapping[[3, 4], [0, 1]] = 1
    from_matrices = make(indicators=(np.eye(4), indicator), mappings=[np.eye(5, 2), mapping])
    from_maps = make(indicators=(np.arange(4), [0, 1, -1, 2]), mappings=[[0, 1], [3, 4]],
                     n_columns=5)
    np.testing.assert_array_equal(from_matrices.materialize(), from_maps.materialize())
    assert from_maps.shape == (4, 5)
    assert not from_maps.materialize()[:, 2].any()


def test_integer_and_boolean_sources_become_float64():
    nm = make(sources=(np.ones((4, 2), dtype=bool), np.arange(6).reshape(3, 2)))
    assert nm.dtype == np.float64
    np.testing.assert_array_equal(nm.materialize()[1], [1, 1, 2, 3])


def test_empty_sources_and_targets():
    empty_dim = make(sources=(FACT, np.zeros((0, 2))), indicators=(np.arange(4), [-1] * 4))
    np.testing.assert_array_equal(empty_dim.materialize()[:, 2:], 0)
    no_rows = make(sources=(np.zeros((0, 2)), DIM), indicators=(np.arange(0), np.arange(0)))
    assert no_rows.shape == (0, 4)
    assert no_rows.gram().shape == (4, 4) and not no_rows.gram().any()


def test_shared_indicator_object_gives_one_row_map():
    from sklearn_ilargi.normalized._row_map import RowMap

    shared = np.array([0, 2, -1, 1])
    nm = make(sources=(FACT, DIM, DIM * 2), indicators=(np.arange(4), shared, shared))
    assert nm.blocks[1].row_map is nm.blocks[2].row_map
    given = RowMap(shared, 3)
    assert make(indicators=(np.arange(4), given)).blocks[1].row_map is given
    with pytest.raises(ValueError, match="points into 3 rows but the source has 2"):
        make(sources=(FACT, DIM[:2]), indicators=(np.arange(4), given))
