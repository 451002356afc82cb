"""make_onehot_star: shapes, determinism, sparse blocks, the pandas join, the Zipf skew."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal
from sklearn.linear_model import Ridge

from sklearn_ilargi import NormalizedMatrix, from_tables
from sklearn_ilargi.datasets import Scenario, join_with_pandas, make_onehot_star


def small_star(**kwargs):
    params = dict(n_rows=3000, n_ids=(400, 60), n_categories=[(5,), (7, 3)], n_numeric=2,
                  random_state=0)
    params.update(kwargs)
    return make_onehot_star(**params)


def test_tables_and_matrix_have_the_declared_shapes():
    s = small_star()
    assert isinstance(s, Scenario) and s.target == "y"
    assert sorted(s.tables) == ["dim0", "dim1", "fact"]
    assert s.base.columns.tolist() == ["f0", "f1", "k_dim0", "k_dim1", "y"]
    assert s.tables["dim0"].columns.tolist() == [
        "k_dim0", "dim0_id", "dim0_cat0", "dim0_x0", "dim0_x1"]
    assert s.tables["dim1"].columns.tolist() == [
        "k_dim1", "dim1_id", "dim1_cat0", "dim1_cat1", "dim1_x0", "dim1_x1"]
    assert [len(s.tables[name]) for name in ("fact", "dim0", "dim1")] == [3000, 400, 60]
    X, y = from_tables(s.base, s.joins, target=s.target)
    assert X.shape == (3000, 2 + (400 + 5 + 2) + (60 + 7 + 3 + 2))
    assert_array_equal(y, s.base["y"].to_numpy())
    assert s.y_class.shape == (3000,) and s.y_class.dtype == np.int64


def test_three_entities_and_ids_only():
    s = make_onehot_star(2000, (300, 50, 20), n_categories=(), random_state=1)
    X, _ = from_tables(s.base, s.joins, target=s.target)
    assert X.shape == (2000, 370)
    assert [j.name for j in s.joins] == ["dim0", "dim1", "dim2"]


def test_return_X_y_is_the_scenario_joined():
    s = small_star()
    X, y, y_class = small_star(return_X_y=True)
    assert isinstance(X, NormalizedMatrix)
    X_ref, y_ref = from_tables(s.base, s.joins, target=s.target)
    assert_array_equal(X.toarray(), X_ref.toarray())
    assert_array_equal(y, y_ref)
    assert_array_equal(y_class, s.y_class)
    assert list(X.feature_names) == list(X_ref.feature_names)


def test_the_same_seed_gives_the_same_tables():
    a, b, c = small_star(random_state=3), small_star(random_state=3), small_star(random_state=4)
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name])
    assert_array_equal(a.y_class, b.y_class)
    assert not a.base.equals(c.base)
    rng = np.random.RandomState(5)
    d = small_star(random_state=rng)
    assert not d.base.equals(small_star(random_state=rng).base)  # a RandomState moves on


def test_one_hot_blocks_stay_sparse():
    X, _, _ = small_star(n_ids=(400, 300), n_numeric=0, return_X_y=True)
    sparse_blocks = [b for b in X.blocks if sp.issparse(b.source)]
    assert sorted(b.source.shape for b in sparse_blocks) == [(300, 310), (400, 405)]
    for block in sparse_blocks:  # one value per id and per attribute
        assert block.source.nnz == block.source.shape[0] * (3 if block.shape[0] == 300 else 2)
    joined = X.materialize()
    assert sp.issparse(joined) and joined.nnz == 3000 * 5


def test_matrix_equals_pandas_merge_and_get_dummies():
    s = small_star(n_rows=1500)
    X, y = from_tables(s.base, s.joins, target=s.target)
    frame, y_ref = join_with_pandas(s.base, s.joins, target=s.target)
    ours = pd.DataFrame(X.toarray(), columns=X.feature_names)
    assert sorted(frame.columns) == sorted(ours.columns)  # every id and category is used
    assert_array_equal(ours[frame.columns].to_numpy(), frame.to_numpy())
    assert_array_equal(y, y_ref)


def test_keys_follow_the_zipf_law():
    n_ids, exponent = 1000, 1.2
    s = make_onehot_star(200_000, (n_ids,), n_categories=(), zipf_exponent=exponent,
                         random_state=0)
    counts = np.sort(np.bincount(s.base["k_dim0"], minlength=n_ids))[::-1]
    assert counts.min() >= 1  # every id is referenced
    ranks = np.arange(1, 51)
    slope = np.polyfit(np.log(ranks), np.log(counts[:50]), 1)[0]
    assert slope == pytest.approx(-exponent, abs=0.15)
    assert counts[0] > 50 * np.median(counts)
    uniform = make_onehot_star(200_000, (n_ids,), n_categories=(), zipf_exponent=0.0,
                               random_state=0)
    flat = np.bincount(uniform.base["k_dim0"], minlength=n_ids)
    assert flat.max() < 1.5 * flat.mean()


def test_numeric_columns_carry_the_offset():
    s = small_star(n_rows=20_000, offset=1e9, spread=3.0)
    for column in (s.base["f0"], s.tables["dim0"]["dim0_x1"]):
        assert abs(column.mean() - 1e9) < 0.2 and column.std() == pytest.approx(3.0, rel=0.1)


def test_targets():
    s = small_star(n_rows=1500, n_ids=(100, 30), n_classes=3, noise=0.0, offset=0.0)
    assert_array_equal(np.bincount(s.y_class), [500, 500, 500])
    y = s.base["y"].to_numpy()
    for c in range(2):  # the classes are ordered bands of y
        assert y[s.y_class == c].max() <= y[s.y_class == c + 1].min()
    X, y = from_tables(s.base, s.joins, target=s.target)
    joined = X.toarray()
    assert Ridge(alpha=1e-3).fit(joined, y).score(joined, y) > 0.99  # linear in the features


@pytest.mark.parametrize("kwargs, message", [
    (dict(n_rows=0), "n_rows must be an integer of at least 1"),
    (dict(n_rows=2.5), "n_rows must be an integer"),
    (dict(n_ids=()), "n_ids must be positive integers"),
    (dict(n_ids=(10, 0)), "n_ids must be positive integers"),
    (dict(n_categories=[(3,)]), r"one such sequence per entity \(2\)"),
    (dict(n_categories=(3, 0)), "n_categories must hold positive integers"),
    (dict(zipf_exponent=-1.0), "zipf_exponent must be a finite number of at least 0"),
    (dict(spread=np.inf), "spread must be a finite number"),
    (dict(noise=-0.1), "noise must be a finite number"),
    (dict(offset=np.nan), "offset must be a finite number"),
    (dict(n_numeric=-1), "n_numeric must be an integer of at least 0"),
    (dict(n_classes=0), "n_classes must be an integer of at least 1"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_onehot_star(**{"n_rows": 100, "n_ids": (10, 5), **kwargs})
