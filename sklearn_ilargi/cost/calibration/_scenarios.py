"""Synthetic integration scenarios for calibrating and evaluating the cost model.

Each scenario is a fact table plus dimension tables, built straight into a NormalizedMatrix
with :meth:`NormalizedMatrix.from_matrices`, or, for the one-hot family, as tables joined by
:func:`~sklearn_ilargi.from_tables`. Scenarios come in *families* (the unit the evaluation
leaves out): a single PK-FK join, a star of several dimensions, left joins with unmatched
keys, sparse sources, snowflake chains, overlapping dimensions (source redundancy), and stars
of events over entities whose ids and categories one-hot encode to 10^3 to 10^5 columns each
(``"onehot"``, from :func:`~sklearn_ilargi.datasets.make_onehot_star`). Within a family the
sizes, tuple ratio and feature ratio are drawn at random.
"""

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ...datasets import make_onehot_star
from ...normalized import NormalizedMatrix

FAMILIES = ("pkfk", "star", "left", "sparse", "snowflake", "overlap", "onehot")
#: Bound on the materialized matrix's cells, so that a calibration stays in minutes.
MAX_CELLS = 1_500_000
#: The same bound for the one-hot family, on the stored values of its CSR join: its dense
#: cells (rows times 10^3 to 10^5 columns) are no measure of its work.
MAX_ONEHOT_NNZ = 600_000
#: One-hot columns of an entity's id: 10^3 to 10^5, as the ids of real entity tables.
ONEHOT_IDS = (1_000, 100_000)
#: Least one-hot columns of a scenario: past the default ``closed_form_max_columns``
#: (4096). Narrower, the fits solve over a dense gram whose ``c^3`` solve takes the same
#: time on either path: minutes of calibration that tell the two paths apart no better.
MIN_ONEHOT_COLUMNS = 5_000


@dataclass
class Scenario:
    """One generated scenario.

    Attributes
    ----------
    id : str
    family : str
    X : NormalizedMatrix
    y_regression : ndarray
    y_classes : ndarray
    params : dict
        What was drawn: rows, tuple ratio, feature ratio, dimensions, sparsity, join type.
    """

    id: str
    family: str
    X: NormalizedMatrix
    y_regression: np.ndarray
    y_classes: np.ndarray
    params: dict = field(default_factory=dict)


def _log_uniform(rng, low, high):
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def _values(rng, n_rows, n_columns, density):
    if density >= 1.0:
        return rng.random((n_rows, n_columns))
    matrix = sp.random(n_rows, n_columns, density=density, format="csr", random_state=rng)
    matrix.data[:] = rng.random(matrix.nnz) + 0.01
    return matrix


def _keys(rng, n_child, n_parent, unmatched):
    keys = rng.integers(0, n_parent, n_child)
    keys[: min(n_parent, n_child)] = rng.permutation(n_parent)[: min(n_parent, n_child)]
    if unmatched:
        keys[rng.random(n_child) < unmatched] = -1
    return keys


def _draw(rng, family, size_scale):
    n_dims = {"pkfk": 1, "overlap": 2}.get(family, int(rng.integers(2, 5)))
    if family in ("left", "sparse", "snowflake"):
        n_dims = int(rng.integers(1, 4))
    params = {
        "n_rows": int(_log_uniform(rng, 1_000, 100_000) * size_scale),
        "fact_columns": int(rng.integers(1, 21)),
        "n_dimensions": n_dims,
        "tuple_ratio": _log_uniform(rng, 1.0, 200.0),
        "feature_ratio": _log_uniform(rng, 0.1, 10.0),
        "density": _log_uniform(rng, 0.005, 0.3) if family == "sparse" else 1.0,
        "unmatched": float(rng.uniform(0.1, 0.6)) if family == "left" else 0.0,
        "join": "left" if family == "left" else "inner",
        "depth": 2 if family == "snowflake" else 1,
        "overlap_columns": int(rng.integers(1, 6)) if family == "overlap" else 0,
    }
    dim_columns = max(1, int(round(params["feature_ratio"] * params["fact_columns"] / n_dims)))
    params["dim_columns"] = dim_columns
    width = params["fact_columns"] + n_dims * params["depth"] * dim_columns
    params["n_rows"] = max(500, min(params["n_rows"], MAX_CELLS // width))
    return params


def _draw_onehot(rng, size_scale):
    """Parameters of :func:`~sklearn_ilargi.datasets.make_onehot_star`.

    The ids of each entity follow from its own tuple ratio (events per id, 1 to 500), so
    that the family spans joins whose CSR is about as small as the sources (few events per
    id, ids only: materializing pays) and joins that repeat wide entity rows many times
    (many events per id, several categories and numeric columns: factorizing pays).
    """
    n_entities = int(rng.integers(2, 4))
    n_rows = _log_uniform(rng, 10_000, 300_000) * size_scale
    n_ids = [int(np.clip(n_rows / _log_uniform(rng, 1.0, 500.0), *ONEHOT_IDS))
             for _ in range(n_entities)]
    n_ids[0] = max(n_ids[0], MIN_ONEHOT_COLUMNS - sum(n_ids[1:]))
    n_ids = tuple(n_ids)
    n_categories = tuple(tuple(int(_log_uniform(rng, 3, 300))
                               for _ in range(int(rng.integers(0, 5))))
                         for _ in range(n_entities))
    n_numeric = int(rng.integers(0, 4))
    # Stored values of one joined row: the fact's numeric columns, and per entity its id,
    # its categories and its numeric columns.
    per_row = n_numeric + sum(1 + len(cards) + n_numeric for cards in n_categories)
    params = {
        "n_rows": max(500, min(int(n_rows), MAX_ONEHOT_NNZ // per_row)),
        "n_ids": n_ids,
        "n_categories": n_categories,
        "n_numeric": n_numeric,
        # Dates, prices, years: positive (NMF takes no negative values), 10 to 10^7.
        "offset": float(10 ** rng.uniform(1, 7)),
        "zipf_exponent": float(rng.uniform(0.0, 1.3)),
    }
    params.update(n_dimensions=n_entities, join="inner",
                  tuple_ratio=params["n_rows"] / sum(n_ids))
    return params


def _onehot_scenario(rng, seed, size_scale):
    p = _draw_onehot(rng, size_scale)
    X, y, y_classes = make_onehot_star(
        p["n_rows"], p["n_ids"], n_categories=p["n_categories"], n_numeric=p["n_numeric"],
        offset=p["offset"], zipf_exponent=p["zipf_exponent"], return_X_y=True,
        random_state=int(rng.integers(2**31)))
    return Scenario(f"onehot-{seed}", "onehot", X, y, y_classes, p)


def make_calibration_scenario(family, seed, size_scale=1.0):
    """One random scenario of ``family``, reproducible from ``seed``.

    Parameters
    ----------
    family : str
        One of ``FAMILIES``.
    seed : int
    size_scale : float
        Multiplies the drawn number of target rows (smaller for a quick calibration).

    Returns
    -------
    Scenario
    """
    if family not in FAMILIES:
        raise ValueError(f"Unknown scenario family {family!r}; expected one of {FAMILIES}.")
    rng = np.random.default_rng(seed)
    if family == "onehot":
        return _onehot_scenario(rng, seed, size_scale)
    p = _draw(rng, family, size_scale)
    n_rows, density = p["n_rows"], p["density"]
    sources = [_values(rng, n_rows, p["fact_columns"], density)]
    row_maps = [np.arange(n_rows)]
    column_maps = [np.arange(p["fact_columns"])]
    next_column = p["fact_columns"]
    for d in range(p["n_dimensions"]):
        n_child, child_map = n_rows, None
        for _ in range(p["depth"]):
            n_dim = max(1, int(round(n_child / p["tuple_ratio"])))
            keys = _keys(rng, n_child, n_dim, p["unmatched"])
            # A snowflake level composes with the level above it (-1 stays -1).
            row_map = keys if child_map is None else np.where(
                child_map >= 0, keys[np.maximum(child_map, 0)], -1)
            columns = np.arange(next_column, next_column + p["dim_columns"])
            next_column += p["dim_columns"]
            if d == 1 and p["overlap_columns"]:
                # The second dimension also fills the first one's leading columns.
                shared = column_maps[1][: p["overlap_columns"]]
                columns = np.concatenate([shared, columns])
            sources.append(_values(rng, n_dim, len(columns), density))
            row_maps.append(row_map)
            column_maps.append(columns)
            n_child, child_map = n_dim, row_map
    X = NormalizedMatrix.from_matrices(sources, row_maps, column_maps, n_columns=next_column)
    signal = X @ rng.standard_normal(X.shape[1])
    y_regression = signal + 0.1 * rng.standard_normal(n_rows)
    y_classes = (signal > np.median(signal)).astype(int)
    if y_classes.min() == y_classes.max():  # a constant signal (all-zero sparse rows)
        y_classes = np.arange(n_rows) % 2
    return Scenario(f"{family}-{seed}", family, X, y_regression, y_classes, p)
