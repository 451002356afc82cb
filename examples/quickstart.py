"""
=======================================
Quickstart: train over a star schema
=======================================

A star schema is a fact table whose rows reference the rows of dimension tables. This example
generates one (a fact table and three dimensions, one column of categories each), builds the
training matrix from the tables by matching keys only, checks that its operations give the
numbers of the pandas join, and fits a ridge regression whose path (factorized or
materialized) the cost model chooses.

Run it with ``python examples/quickstart.py``.
"""

import numpy as np
from sklearn.linear_model import Ridge

from sklearn_ilargi import FactorizedRidge, from_tables
from sklearn_ilargi.datasets import join_with_pandas, make_star

# %%
# The tables
# ----------
# 100,000 fact rows; each dimension has 50 times fewer rows than the fact table (the tuple
# ratio) and several times its columns (the feature ratio), among them a column of 12
# categories, which becomes 12 one-hot columns.
star = make_star(100_000, n_dimensions=3, tuple_ratio=50, feature_ratio=5, n_categories=12,
                 random_state=0)
for name, table in star.tables.items():
    print(f"{name}: {table.shape[0]} rows x {table.shape[1]} columns")

# %%
# The training matrix, without the join
# -------------------------------------
# :func:`~sklearn_ilargi.from_tables` matches the keys and keeps every table as a source
# with a row map. :func:`~sklearn_ilargi.datasets.join_with_pandas` builds the same matrix
# the usual way, with ``pandas.merge`` and ``pandas.get_dummies``, for comparison.
X, y = from_tables(star.base, star.joins, target=star.target)
joined, y_pandas = join_with_pandas(star.base, star.joins, target=star.target)
T = joined.to_numpy(dtype=np.float64)
print(X)
print(f"sources and row maps: {X.nbytes / 2**20:.1f} MiB; joined matrix: "
      f"{T.nbytes / 2**20:.1f} MiB")

# %%
# The same numbers as the join
# ----------------------------
# Products and the gram run over the sources and give the joined matrix's results.
w = np.random.default_rng(0).standard_normal(X.shape[1])
for name, factorized, materialized in [
    ("X @ w", X @ w, T @ w),
    ("X.T @ y", X.T @ y, T.T @ y),
    ("X.T @ X", X.T @ X, T.T @ T),
]:
    same = np.allclose(factorized, materialized, rtol=1e-9, atol=1e-9)
    print(f"{name:<8} equal to the join's: {same}")

# %%
# A model
# -------
# The estimator asks the cost model whether to work on the sources or to join first;
# ``decision_.explain()`` says what it chose and why.
model = FactorizedRidge(alpha=1.0).fit(X, y)
print(f"ran {model.strategy_} on the {model.backend_}")
print(model.decision_.explain())

reference = Ridge(alpha=1.0).fit(T, y_pandas)
print("same coefficients as scikit-learn's Ridge on the pandas join:",
      np.allclose(model.coef_, reference.coef_, rtol=1e-6, atol=1e-8))
print(f"R^2 on the training rows: {model.score(X, y):.4f}")
