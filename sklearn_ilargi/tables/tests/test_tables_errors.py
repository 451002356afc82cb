"""Bad input to from_tables: a clear error naming the table and the column."""

import numpy as np
import pandas as pd
import pytest

from sklearn_ilargi import Join, Union, from_tables


@pytest.fixture
def fact():
    return pd.DataFrame({"k": [1, 2, 2], "v": [1.0, 2.0, 3.0]})


@pytest.fixture
def dim():
    return pd.DataFrame({"k": [1, 2], "d": [10.0, 20.0]})


def test_duplicate_keys_where_validate_says_unique(fact, dim):
    dup = pd.DataFrame({"k": [1, 1, 2], "d": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match=r"many_to_one.*table 'dims'.*\['k'\]"):
        from_tables(fact, [Join(dup, on="k", validate="many_to_one", name="dims")])
    with pytest.raises(ValueError, match=r"one_to_one.*table 'base'.*\['k'\]"):
        from_tables(fact, [Join(dim, on="k", validate="one_to_one")])
    with pytest.raises(ValueError, match="one_to_many.*table 'base'"):
        from_tables(fact, [Join(dim, on="k", validate="one_to_many")])
    from_tables(fact, [Join(dim, on="k", validate="many_to_one")])
    from_tables(fact, [Join(dup, on="k", validate="many_to_many")])


def test_key_column_missing(fact, dim):
    with pytest.raises(KeyError, match="'nope'.*table 'base'"):
        from_tables(fact, [Join(dim, left_on="nope", right_on="k")])
    with pytest.raises(KeyError, match="'nope'.*table 'dims'"):
        from_tables(fact, [Join(dim, left_on="k", right_on="nope", name="dims")])
    with pytest.raises(KeyError, match="'k'.*table 'u\\[1\\]'"):
        from_tables(Union([fact, fact.drop(columns="k")], name="u"), [Join(dim, on="k")])


def test_incompatible_key_types(fact):
    text = pd.DataFrame({"k": ["1", "2"], "d": [1.0, 2.0]})
    with pytest.raises(TypeError, match=r"table 'base' column 'k'.*table 'txt' column 'k'"):
        from_tables(fact, [Join(text, on="k", name="txt")])


def test_target_with_nulls(fact, dim):
    bad = fact.assign(y=[1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="target column 'y' of table 'base' has 1 null"):
        from_tables(bad, [Join(dim, on="k")], target="y")
    short = pd.DataFrame({"k": [1], "t": [5.0]})
    with pytest.raises(ValueError, match="target column 't' of table 'table1' is missing"):
        from_tables(fact, [Join(short, on="k", how="left")], target="t")
    with pytest.raises(KeyError, match="target column 'zz'"):
        from_tables(fact, target="zz")
    with pytest.raises(ValueError, match="in several tables"):
        from_tables(fact, [Join(dim.assign(v=1.0), on="k", overlap="coalesce")], target="v")


def test_empty_table(fact, dim):
    with pytest.raises(ValueError, match="The joins leave no target rows"):
        from_tables(fact, [Join(dim.iloc[:0], on="k", name="dims")])
    with pytest.raises(ValueError, match="Table 'base' is empty"):
        from_tables(fact.iloc[:0])


def test_no_rows_left(fact):
    other = pd.DataFrame({"k": [7], "d": [1.0]})
    with pytest.raises(ValueError, match="no target rows"):
        from_tables(fact, [Join(other, on="k")])


def test_parent_that_names_no_earlier_join(fact, dim):
    with pytest.raises(ValueError, match="parent 'ghost' names no table"):
        from_tables(fact, [Join(dim, on="k", parent="ghost")])


def test_cycle(fact, dim):
    a = dim.rename(columns={"d": "a"})
    b = dim.rename(columns={"d": "b"})
    with pytest.raises(ValueError, match="not an earlier table.*cycle"):
        from_tables(fact, [Join(a, on="k", name="a", parent="b"),
                           Join(b, on="k", name="b", parent="a")])
    with pytest.raises(ValueError, match="this join"):
        from_tables(fact, [Join(a, on="k", name="a", parent="a")])


def test_two_joins_with_the_same_name(fact, dim):
    with pytest.raises(ValueError, match="named 'd'"):
        from_tables(fact, [Join(dim, on="k", name="d"),
                           Join(dim.rename(columns={"d": "e"}), on="k", name="d")])


def test_feature_that_cannot_be_encoded(fact, dim):
    odd = dim.assign(blob=[[1, 2], [3]])
    with pytest.raises(TypeError, match="Table 'odd' column 'blob' cannot be encoded"):
        from_tables(fact, [Join(odd, on="k", name="odd")])
    X = from_tables(fact, [Join(odd, on="k", name="odd")], features=["v", "d"])
    assert X.shape == (3, 2)


def test_bad_arguments(fact, dim):
    with pytest.raises(ValueError, match="how must be"):
        from_tables(fact, [Join(dim, on="k", how="right")])
    with pytest.raises(ValueError, match="validate must be"):
        from_tables(fact, [Join(dim, on="k", validate="1:1")])
    with pytest.raises(ValueError, match="overlap must be"):
        from_tables(fact, [Join(dim, on="k", overlap="merge")])
    with pytest.raises(ValueError, match="give the keys"):
        from_tables(fact, [Join(dim)])
    with pytest.raises(ValueError, match="either on or left_on"):
        from_tables(fact, [Join(dim, on="k", left_on="k", right_on="k")])
    with pytest.raises(ValueError, match="left_on has 2 columns"):
        from_tables(fact, [Join(dim, left_on=["k", "v"], right_on="k")])
    with pytest.raises(KeyError, match=r"Feature column\(s\) \['zz'\]"):
        from_tables(fact, [Join(dim, on="k")], features=["zz"])
    with pytest.raises(TypeError, match="Join objects"):
        from_tables(fact, [dim])
    with pytest.raises(TypeError, match="expected a pandas DataFrame"):
        from_tables(fact.to_numpy())
    with pytest.raises(ValueError, match="categorical must be"):
        from_tables(fact, categorical="ordinal")
    with pytest.raises(ValueError, match="fill_value"):
        from_tables(fact, fill_value=np.nan)
    with pytest.raises(ValueError, match="No feature columns"):
        from_tables(fact[["k"]].assign(y=1.0), [Join(dim[["k"]], on="k")], target="y")


def test_categorical_refused_or_dropped(fact):
    text = fact.assign(c=["a", "b", "a"])
    with pytest.raises(TypeError, match="Table 'base' column 'c' is categorical"):
        from_tables(text, categorical="error")
    with pytest.raises(TypeError, match="column 'c' is categorical"):
        from_tables(text, features=["c"], categorical="drop")


def test_bad_pairs(fact, dim):
    with pytest.raises(ValueError, match=r"right pair rows must be in \[0, 2\).*'table1'"):
        from_tables(fact, [Join(dim, pairs=([0], [5]))])
    with pytest.raises(ValueError, match=r"pair \(0, 1\) is given twice"):
        from_tables(fact, [Join(dim, pairs=([0, 0], [1, 1]))])
    with pytest.raises(ValueError, match="either pairs or keys"):
        from_tables(fact, [Join(dim, on="k", pairs=([0], [0]))])


def test_overlap_of_different_kinds(fact, dim):
    other = pd.DataFrame({"k": [1, 2], "d": ["x", "y"]})
    with pytest.raises(TypeError, match="Cannot coalesce column 'd'"):
        from_tables(fact, [Join(dim, on="k"), Join(other, on="k", overlap="coalesce")])


def test_infinite_value(fact, dim):
    with pytest.raises(ValueError, match="Table 'table1' column 'd' contains infinity"):
        from_tables(fact, [Join(dim.assign(d=[1.0, np.inf]), on="k")])


def test_missing_parquet(tmp_path, fact):
    with pytest.raises(FileNotFoundError, match="no Parquet file"):
        from_tables(fact, [Join(str(tmp_path / "none.parquet"), on="k")])
