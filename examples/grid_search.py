"""
======================================================
A pipeline and a grid search, never joining the tables
======================================================

A fact table of orders references a customer table and a product table.
:func:`~sklearn_ilargi.from_tables` keeps the three apart; scaling, cross-validation folds and
every fit then run on the sources: the scaler's centering is a rank-one shift of the matrix,
each fold is a row selection of the row maps, and the ridge and logistic models read the data
only through factorized products.

Run it with ``python examples/grid_search.py``.
"""

import numpy as np
import pandas as pd
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline

from sklearn_ilargi import FactorizedLogisticRegression, FactorizedRidge, Join, from_tables
from sklearn_ilargi.preprocessing import FactorizedStandardScaler

# %%
# The tables
# ----------
rng = np.random.default_rng(0)
n_orders, n_customers, n_products = 20_000, 1_000, 200
customers = pd.DataFrame({
    "customer_id": np.arange(n_customers),
    "age": rng.integers(18, 90, n_customers),
    "balance": rng.gamma(2.0, 500.0, n_customers),
    "segment": rng.choice(["retail", "business", "public"], n_customers),
})
products = pd.DataFrame({
    "product_id": np.arange(n_products),
    "price": rng.gamma(3.0, 20.0, n_products),
    "weight": rng.gamma(2.0, 2.0, n_products),
})
orders = pd.DataFrame({
    "customer_id": rng.integers(0, n_customers, n_orders),
    "product_id": rng.integers(0, n_products, n_orders),
    "quantity": rng.integers(1, 10, n_orders),
})
orders["amount"] = (
    orders["quantity"] * products["price"].to_numpy()[orders["product_id"]]
    + 0.01 * customers["balance"].to_numpy()[orders["customer_id"]]
    + rng.normal(0, 5, n_orders)
)

# %%
# The training matrix
# -------------------
# The category column ``segment`` is one-hot encoded within the customer table.
X, y = from_tables(
    orders,
    [Join(customers, on="customer_id", name="customers"),
     Join(products, on="product_id", name="products")],
    target="amount",
)
print(X)  # the sources, kept apart
print(list(X.feature_names))

# %%
# Regression: scale, then ridge
# -----------------------------
# ``train_test_split`` and the search's folds select rows of the row maps; the search fits
# 3 folds x 4 values of ``alpha``, on two worker processes, all on the sources.
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
pipeline = make_pipeline(FactorizedStandardScaler(), FactorizedRidge(strategy="factorized"))
search = GridSearchCV(pipeline, {"factorizedridge__alpha": [0.01, 1.0, 100.0, 1e4]}, cv=3,
                      n_jobs=2)
search.fit(X_train, y_train)
ridge = search.best_estimator_[-1]
print(f"best alpha {search.best_params_['factorizedridge__alpha']}, "
      f"test R^2 {search.score(X_test, y_test):.4f}, ran {ridge.strategy_} on {ridge.backend_}")
print({name: round(float(c), 3) for name, c in zip(X.feature_names, ridge.coef_)})

# %%
# Classification: is the order above the median amount?
# ------------------------------------------------------
labels_train = (y_train > np.median(y)).astype(int)
labels_test = (y_test > np.median(y)).astype(int)
classifier = make_pipeline(FactorizedStandardScaler(),
                           FactorizedLogisticRegression(strategy="factorized", max_iter=500))
search = GridSearchCV(classifier, {"factorizedlogisticregression__C": [0.01, 1.0]}, cv=3)
search.fit(X_train, labels_train)
print(f"best C {search.best_params_['factorizedlogisticregression__C']}, "
      f"test accuracy {search.score(X_test, labels_test):.4f}")
