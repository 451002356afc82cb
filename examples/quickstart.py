"""Quickstart: train over a star schema without joining it.

Generates a small star schema (a fact table and three dimension tables, one with a category
column), builds the training matrix from the tables by matching keys only, checks that the
factorized operations equal those on the pandas join, times both, and fits a ridge regression
whose path (factorized or materialized) the dispatcher chooses.

    python examples/quickstart.py
"""

import time

import numpy as np
from sklearn.linear_model import Ridge

from sklearn_ilargi import FactorizedRidge, from_tables
from sklearn_ilargi.datasets import join_with_pandas, make_star


def seconds(func, repeats=5):
    """Median wall time of ``func``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main():
    star = make_star(300_000, n_dimensions=3, tuple_ratio=100, feature_ratio=5,
                     n_categories=12, random_state=0)
    print("tables:", {name: table.shape for name, table in star.tables.items()})

    t_ours = seconds(lambda: from_tables(star.base, star.joins, target=star.target), 3)
    t_pandas = seconds(lambda: join_with_pandas(star.base, star.joins, target=star.target), 3)
    X, y = from_tables(star.base, star.joins, target=star.target)
    joined, y_pandas = join_with_pandas(star.base, star.joins, target=star.target)
    T = joined.to_numpy(dtype=np.float64)
    print(f"\nX: {X}")
    print(f"building X from the tables: {t_ours * 1e3:.0f} ms; pandas.merge + get_dummies: "
          f"{t_pandas * 1e3:.0f} ms ({t_pandas / t_ours:.1f}x)")
    print(f"sources and row maps: {X.nbytes / 2**20:.1f} MiB; joined matrix: "
          f"{T.nbytes / 2**20:.1f} MiB")

    w = np.random.default_rng(0).standard_normal(X.shape[1])
    print("\noperation   factorized  materialized  speed-up  same numbers")
    for name, factorized, materialized in [
        ("X @ w", lambda: X @ w, lambda: T @ w),
        ("X.T @ y", lambda: X.T @ y, lambda: T.T @ y),
        ("X.T @ X", lambda: X.T @ X, lambda: T.T @ T),
    ]:
        t_f, t_m = seconds(factorized), seconds(materialized)
        same = np.allclose(factorized(), materialized(), rtol=1e-9, atol=1e-9)
        print(f"{name:<10} {t_f * 1e3:9.1f} ms {t_m * 1e3:10.1f} ms {t_m / t_f:8.1f}x  {same}")

    start = time.perf_counter()
    model = FactorizedRidge(alpha=1.0).fit(X, y)
    t_fit = time.perf_counter() - start
    reference = Ridge(alpha=1.0).fit(T, y_pandas)
    print(f"\nFactorizedRidge fit in {t_fit * 1e3:.0f} ms, ran {model.backend_}/{model.strategy_}")
    print(model.decision_.explain())
    print("same coefficients as scikit-learn's Ridge on the pandas join:",
          np.allclose(model.coef_, reference.coef_, rtol=1e-6, atol=1e-8))
    print(f"R^2 on the training rows: {model.score(X, y):.4f}")


if __name__ == "__main__":
    main()
