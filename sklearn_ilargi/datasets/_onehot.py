"""A star of events over entities whose attributes one-hot encode to thousands of columns.

The shape of the data that factorized learning is evaluated on in practice (ratings, clicks,
listening logs, sales): a fact table of events whose foreign keys follow a Zipf law (a few
popular users and items, a long tail), into entity tables whose attributes are ids and
categories. One-hot encoded, each entity is a sparse block of 10^3 to 10^5 columns; numeric
columns such as dates, prices or years carry large offsets.
"""

import numbers

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from ..tables._from_tables import from_tables
from ..tables._spec import Join
from ._synthetic import Scenario


def make_onehot_star(n_rows=100_000, n_ids=(10_000, 1_000), *, n_categories=(20,),
                     zipf_exponent=1.0, n_numeric=0, offset=1e7, spread=1.0, n_classes=2,
                     noise=0.1, return_X_y=False, random_state=None):
    """Generate a star of events whose entity tables one-hot encode to many columns.

    The fact table ``"fact"`` holds one event per row: a foreign key into each entity table
    (``"dim0"``, ``"dim1"``, ...), drawn from a Zipf law over the entity's ids, and the
    numeric columns ``f0, f1, ...``. Each entity table holds its key ``k_dim<i>``, its id
    ``dim<i>_id`` and categorical attributes ``dim<i>_cat0, ...`` as pandas categoricals
    (which :func:`~sklearn_ilargi.from_tables` one-hot encodes into a sparse block of one
    column per id and per category), and the numeric columns ``dim<i>_x0, ...``.

    Every numeric column is ``offset + spread * N(0, 1)``: a date, price or year, whose
    digits beyond the offset carry the information. Every id is referenced by some event
    (when there are at least as many events as ids), and every category is used by some
    entity (when there are at least as many ids as categories), so that the joined matrix
    has no empty one-hot column.

    The regression target ``y`` is linear in the one-hot features and the standardized
    numeric columns: an effect per id and per category, a weight per numeric column, all
    standard normal, plus ``noise`` times standard normal noise. The class target cuts
    ``y`` at its quantiles into ``n_classes`` classes of about equal size.

    Parameters
    ----------
    n_rows : int, default=100_000
        Events: rows of the fact table, and of the joined matrix.
    n_ids : sequence of int, default=(10_000, 1_000)
        Ids of each entity table (its rows, and the width of its one-hot id); two or three
        entities make the usual stars.
    n_categories : sequence of int, or sequence of sequences of int, default=(20,)
        Cardinalities of the categorical attributes besides the id: one sequence for every
        entity, or one sequence per entity. ``()`` gives ids only.
    zipf_exponent : float, default=1.0
        Exponent ``a`` of the Zipf law of the foreign keys: the ``r``-th most popular id
        is referenced with probability proportional to ``r ** -a``. 0 is uniform.
    n_numeric : int, default=0
        Numeric columns of the fact table and of each entity table.
    offset : float, default=1e7
        The offset of every numeric column.
    spread : float, default=1.0
        The standard deviation of every numeric column around its offset.
    n_classes : int, default=2
        Classes of the class target.
    noise : float, default=0.1
        Standard deviation of the noise added to the regression target.
    return_X_y : bool, default=False
        Return ``(X, y, y_class)``, the tables joined by :func:`~sklearn_ilargi.from_tables`,
        instead of the tables.
    random_state : int, RandomState instance or None, default=None
        Seeds every key, attribute and value; an int gives the same tables every call.

    Returns
    -------
    scenario : Scenario
        The tables, their inner joins (``many_to_one``) and ``target="y"``; its ``y_class``
        holds the class target, one per event. Every key matches, so the joined rows are
        the events in order: ``y`` and ``y_class`` are aligned with them.
    (X, y, y_class) : tuple of NormalizedMatrix, ndarray and ndarray
        With ``return_X_y=True``: the joined matrix, the regression target (float64) and the
        class target (int64, in ``[0, n_classes)``).

    See Also
    --------
    make_star : A star of dense dimensions with chosen redundancy.
    sklearn_ilargi.from_tables : Build the NormalizedMatrix from the tables.
    join_with_pandas : The same data joined by ``pandas.merge`` and ``pandas.get_dummies``.

    Examples
    --------
    Events on 300 users and 50 items, users in 4 countries and items in 6 genres and 3
    brands, each event with a date:

    >>> from sklearn_ilargi import from_tables
    >>> from sklearn_ilargi.datasets import make_onehot_star
    >>> s = make_onehot_star(1000, (300, 50), n_categories=[(4,), (6, 3)], n_numeric=1,
    ...                      random_state=0)
    >>> sorted(s.tables), s.tables["dim1"].columns.tolist()
    (['dim0', 'dim1', 'fact'], ['k_dim1', 'dim1_id', 'dim1_cat0', 'dim1_cat1', 'dim1_x0'])
    >>> X, y = from_tables(s.base, s.joins, target=s.target)
    >>> X.shape  # 1 + (300 + 4 + 1) + (50 + 6 + 3 + 1) columns
    (1000, 366)
    >>> X, y, y_class = make_onehot_star(1000, (300, 50), n_categories=[(4,), (6, 3)],
    ...                                  n_numeric=1, return_X_y=True, random_state=0)
    >>> X.shape, sorted(set(y_class.tolist()))
    ((1000, 366), [0, 1])
    """
    rng = check_random_state(random_state)
    n_ids = _check_ids(n_ids)
    cardinalities = _check_categories(n_categories, len(n_ids))
    for name, value, lowest in (("n_rows", n_rows, 1), ("n_numeric", n_numeric, 0),
                                ("n_classes", n_classes, 1)):
        if not isinstance(value, numbers.Integral) or value < lowest:
            raise ValueError(f"{name} must be an integer of at least {lowest}, got {value!r}.")
    for name, value in (("zipf_exponent", zipf_exponent), ("spread", spread),
                        ("noise", noise)):
        if not (isinstance(value, numbers.Real) and 0 <= value < np.inf):
            raise ValueError(f"{name} must be a finite number of at least 0, got {value!r}.")
    if not (isinstance(offset, numbers.Real) and np.isfinite(offset)):
        raise ValueError(f"offset must be a finite number, got {offset!r}.")

    fact, y = _numeric_columns(rng, "f", n_rows, n_numeric, offset, spread)
    tables, joins = {}, []
    for d, (n, cards) in enumerate(zip(n_ids, cardinalities)):
        name, key = f"dim{d}", f"k_dim{d}"
        keys = rng.permutation(n)  # the table's rows in no particular key order
        fact[key] = _zipf_keys(rng, n_rows, n, zipf_exponent)
        table = {key: keys, f"{name}_id": pd.Categorical(keys, categories=np.arange(n))}
        effects = rng.standard_normal(n)  # of each entity, by key
        for j, c in enumerate(cards):
            codes = _every_code_used(rng, n, c)
            table[f"{name}_cat{j}"] = pd.Categorical.from_codes(codes, [f"c{v}" for v in range(c)])
            effects[keys] += rng.standard_normal(c)[codes]
        numeric, numeric_effect = _numeric_columns(rng, f"{name}_x", n, n_numeric, offset,
                                                   spread)
        table.update(numeric)
        effects[keys] += numeric_effect
        y += effects[fact[key]]
        tables[name] = pd.DataFrame(table)
        joins.append(Join(tables[name], on=key, name=name, validate="many_to_one"))
    y += noise * rng.standard_normal(n_rows)
    fact["y"] = y
    y_class = _quantile_classes(y, n_classes)
    params = dict(n_rows=n_rows, n_ids=n_ids, n_categories=cardinalities,
                  zipf_exponent=zipf_exponent, n_numeric=n_numeric, offset=offset,
                  spread=spread, n_classes=n_classes, noise=noise)
    scenario = Scenario({"fact": pd.DataFrame(fact), **tables}, joins, "y", params, y_class)
    if not return_X_y:
        return scenario
    X, y = from_tables(scenario.base, scenario.joins, target=scenario.target)
    return X, y, y_class


def _check_ids(n_ids):
    n_ids = [n_ids] if isinstance(n_ids, numbers.Integral) else list(n_ids)
    if not n_ids or not all(isinstance(n, numbers.Integral) and n >= 1 for n in n_ids):
        raise ValueError(f"n_ids must be positive integers, one per entity table, got {n_ids!r}.")
    return tuple(int(n) for n in n_ids)


def _check_categories(n_categories, n_entities):
    """One tuple of cardinalities per entity."""
    n_categories = list(n_categories)
    if all(isinstance(c, numbers.Integral) for c in n_categories):
        per_entity = [tuple(n_categories)] * n_entities
    elif len(n_categories) == n_entities and all(np.iterable(c) for c in n_categories):
        per_entity = [tuple(c) for c in n_categories]
    else:
        raise ValueError(
            f"n_categories must be a sequence of cardinalities for every entity, or one such "
            f"sequence per entity ({n_entities}), got {n_categories!r}."
        )
    for cards in per_entity:
        if not all(isinstance(c, numbers.Integral) and c >= 1 for c in cards):
            raise ValueError(f"n_categories must hold positive integers, got {cards!r}.")
    return tuple(tuple(int(c) for c in cards) for cards in per_entity)


def _zipf_keys(rng, n_rows, n_ids, exponent):
    """Keys in ``[0, n_ids)`` whose ``r``-th most popular has probability ``~ r ** -exponent``;
    the ids are ranked at random, and each is drawn at least once where ``n_rows`` allows."""
    weights = np.arange(1, n_ids + 1, dtype=np.float64) ** -exponent
    ranks = rng.choice(n_ids, size=n_rows, p=weights / weights.sum())
    keys = rng.permutation(n_ids)[ranks]
    if n_rows >= n_ids:
        keys[rng.permutation(n_rows)[:n_ids]] = np.arange(n_ids)
    return keys


def _every_code_used(rng, n, n_codes):
    """``n`` codes in ``[0, n_codes)``, uniform, each used once at least where ``n`` allows."""
    codes = rng.randint(n_codes, size=n)
    if n >= n_codes:
        codes[rng.permutation(n)[:n_codes]] = np.arange(n_codes)
    return codes


def _numeric_columns(rng, prefix, n, n_numeric, offset, spread):
    """``n_numeric`` columns ``offset + spread * N(0, 1)`` by name, and their effect on the
    target: a standard normal weight per standardized column."""
    columns, effect = {}, np.zeros(n)
    for j in range(n_numeric):
        standard = rng.standard_normal(n)
        columns[f"{prefix}{j}"] = offset + spread * standard
        effect += rng.standard_normal() * standard
    return columns, effect


def _quantile_classes(y, n_classes):
    """``y`` cut at its quantiles into ``n_classes`` classes of about equal size."""
    cuts = np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1])
    return np.searchsorted(cuts, y, side="right").astype(np.int64)
