"""Synthetic star and snowflake scenarios with chosen redundancy, width and join type."""

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from ..tables._spec import Join


@dataclass
class Scenario:
    """Tables and their join description.

    ``from_tables(s.base, s.joins, target=s.target)`` builds the NormalizedMatrix;
    ``join_with_pandas(s.base, s.joins, target=s.target)`` builds the same data with pandas.

    Parameters
    ----------
    tables : dict of str to DataFrame
        Every table by name; ``tables["fact"]`` is the base.
    joins : list of Join
        How the other tables join the fact table, in order.
    target : str or None, default="y"
        Name of the fact table's target column ``"y"``; None for outer joins, whose extra
        rows have no target value (``y`` stays in the fact table as a feature then).
    params : dict, default={}
        The arguments of the function that generated it (:func:`make_scenario`, ...).
    y_class : ndarray of shape (n_fact_rows,) or None, default=None
        A class target, one per row of the fact table, where the generator makes one
        (:func:`make_onehot_star`); kept out of the tables so that it is no feature.

    See Also
    --------
    make_scenario : Generate one.
    make_onehot_star : Generate one with wide one-hot dimensions.

    Examples
    --------
    >>> from sklearn_ilargi import from_tables
    >>> from sklearn_ilargi.datasets import make_scenario
    >>> s = make_scenario(100, 1, tuple_ratio=10, n_fact_features=2, feature_ratio=1,
    ...                   random_state=0)
    >>> sorted(s.tables)
    ['dim0', 'fact']
    >>> s.base.shape, s.tables["dim0"].shape
    ((100, 4), (10, 3))
    >>> X, y = from_tables(s.base, s.joins, target=s.target)
    >>> list(X.feature_names)
    ['f0', 'f1', 'dim0_x0', 'dim0_x1']
    """

    tables: dict
    joins: list
    target: str = "y"
    params: dict = field(default_factory=dict)
    y_class: object = None

    @property
    def base(self):
        """The fact table, ``tables["fact"]``: the base of the joins."""
        return self.tables["fact"]


def make_scenario(n_rows=10_000, n_dimensions=2, *, tuple_ratio=10.0, feature_ratio=2.0,
                  n_fact_features=4, n_categories=0, sparsity=0.0, how="inner", depth=1,
                  n_overlap=0, unmatched=0.0, random_state=None):
    """Generate a star (``depth=1``) or snowflake schema around a fact table.

    Parameters
    ----------
    n_rows : int
        Rows of the fact table.
    n_dimensions : int
        Dimension tables joined to the fact table.
    tuple_ratio : float
        Fact rows per dimension row (each level of a snowflake divides again).
    feature_ratio : float
        Numeric features of each dimension per fact feature.
    n_fact_features : int
        Numeric features of the fact table.
    n_categories : int
        When positive, each dimension has a string column with this many categories
        (one-hot width).
    sparsity : float
        Share of the numeric feature values set to 0.
    how : {"inner", "left", "outer"}
        Join type of every join.
    depth : int
        Levels of each dimension chain (2: fact -> dim -> dim's dimension).
    n_overlap : int
        Columns that the first two dimensions both have (joined with ``overlap="coalesce"``,
        the first dimension's value winning): source redundancy.
    unmatched : float
        Share of fact (and outer-level) keys that match no dimension row.
    random_state : int, RandomState or None
        Seeds every generated value and key; an int gives the same tables every call.

    Returns
    -------
    Scenario
        The tables (``"fact"``, ``"dim0"``, ``"dim0_1"``, ...) and their joins; the fact
        table's ``y`` is the sum of its features plus noise.

    See Also
    --------
    make_star : A star schema (``depth=1``, no overlap).

    Examples
    --------
    A snowflake of two levels with left joins, a fifth of the keys matching nothing:

    >>> from sklearn_ilargi import from_tables
    >>> from sklearn_ilargi.datasets import make_scenario
    >>> s = make_scenario(200, 1, depth=2, how="left", unmatched=0.2, random_state=0)
    >>> [j.name for j in s.joins]
    ['dim0', 'dim0_1']
    >>> X, y = from_tables(s.base, s.joins, target=s.target)
    >>> X.shape
    (200, 20)
    """
    rng = check_random_state(random_state)
    if how not in ("inner", "left", "outer"):
        raise ValueError(f"how must be 'inner', 'left' or 'outer', got {how!r}.")
    if n_overlap and n_dimensions < 2:
        raise ValueError("n_overlap needs at least two dimensions.")
    n_dim_features = max(1, int(round(feature_ratio * n_fact_features)))
    fact = {f"f{j}": _values(rng, n_rows, sparsity) for j in range(n_fact_features)}
    tables, joins = {}, []
    y = np.sum([fact[c] for c in fact], axis=0) if fact else np.zeros(n_rows)
    for d in range(n_dimensions):
        n_child = n_rows
        parent = None
        for level in range(depth):
            name = f"dim{d}" if level == 0 else f"dim{d}_{level}"
            key = f"k_{name}"
            n_dim = max(1, int(round(n_child / tuple_ratio)))
            keys = _keys(rng, n_child, n_dim, unmatched)
            if parent is None:
                fact[key] = keys
            else:
                tables[parent][key] = keys
            dim = {key: rng.permutation(n_dim)}
            for j in range(n_dim_features):
                dim[f"{name}_x{j}"] = _values(rng, n_dim, sparsity)
            if n_categories:
                dim[f"{name}_cat"] = np.array(
                    [f"c{v}" for v in rng.randint(n_categories, size=n_dim)], dtype=object)
            if level == 0 and d < 2 and n_overlap:
                for j in range(n_overlap):
                    dim[f"shared{j}"] = _values(rng, n_dim, sparsity)
            tables[name] = pd.DataFrame(dim)
            joins.append(dict(on=key, how=how, name=name, parent=parent,
                              overlap="coalesce" if (d == 1 and level == 0) else "error"))
            parent = name
            n_child = n_dim
    fact["y"] = y + 0.1 * rng.standard_normal(n_rows)
    tables = {"fact": pd.DataFrame(fact), **tables}
    joins = [Join(tables[spec["name"]], **spec) for spec in joins]
    params = dict(n_rows=n_rows, n_dimensions=n_dimensions, tuple_ratio=tuple_ratio,
                  feature_ratio=feature_ratio, n_fact_features=n_fact_features,
                  n_categories=n_categories, sparsity=sparsity, how=how, depth=depth,
                  n_overlap=n_overlap, unmatched=unmatched)
    # an outer join adds target rows that no fact row (so no target value) belongs to
    return Scenario(tables, joins, None if how == "outer" else "y", params)


def make_star(n_rows=10_000, n_dimensions=2, *, tuple_ratio=10.0, feature_ratio=2.0,
              n_fact_features=4, n_categories=0, sparsity=0.0, how="inner", random_state=None):
    """A star schema: ``make_scenario`` with ``depth=1`` and no overlap.

    Parameters
    ----------
    n_rows : int, default=10_000
        Rows of the fact table.
    n_dimensions : int, default=2
        Dimension tables joined to the fact table.
    tuple_ratio : float, default=10.0
        Fact rows per dimension row.
    feature_ratio : float, default=2.0
        Numeric features of each dimension per fact feature.
    n_fact_features : int, default=4
        Numeric features of the fact table.
    n_categories : int, default=0
        When positive, each dimension has a string column with this many categories.
    sparsity : float, default=0.0
        Share of the numeric feature values set to 0.
    how : {"inner", "left", "outer"}, default="inner"
        Join type of every join.
    random_state : int, RandomState or None, default=None
        Seeds every generated value and key.

    Returns
    -------
    Scenario
        The fact table, the dimensions ``"dim0"``, ``"dim1"``, ... and their joins.

    See Also
    --------
    make_scenario : Snowflakes, overlaps and unmatched keys too.

    Examples
    --------
    >>> from sklearn_ilargi import from_tables
    >>> from sklearn_ilargi.datasets import make_star
    >>> s = make_star(1000, 2, tuple_ratio=10, random_state=0)
    >>> X, y = from_tables(s.base, s.joins, target=s.target)
    >>> X.shape
    (1000, 20)
    """
    return make_scenario(n_rows, n_dimensions, tuple_ratio=tuple_ratio,
                         feature_ratio=feature_ratio, n_fact_features=n_fact_features,
                         n_categories=n_categories, sparsity=sparsity, how=how,
                         random_state=random_state)


def _values(rng, n, sparsity):
    values = rng.standard_normal(n)
    if sparsity:
        values[rng.uniform(size=n) < sparsity] = 0.0
    return values


def _keys(rng, n_child, n_dim, unmatched):
    keys = rng.randint(n_dim, size=n_child)
    if n_child >= n_dim:
        keys[rng.permutation(n_child)[:n_dim]] = np.arange(n_dim)  # every dimension row used
    if unmatched:
        keys[rng.uniform(size=n_child) < unmatched] = n_dim + 1  # matches nothing
    return keys
