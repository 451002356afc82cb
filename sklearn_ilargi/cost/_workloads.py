"""What the calibration times: each estimator's fit, under a forced strategy and backend.

A workload is an estimator class with fixed parameters. Where the class is not importable
(yet), a *proxy* runs the operation profile that the estimator declares (the same products, in
the same number and width, through the same dispatcher), so the cost model still learns that
profile's costs; the measurement file says which rows came from proxies.
"""

import importlib
import inspect
from dataclasses import dataclass

import numpy as np

from .._config import config_context
from ._dispatch import OperationProfile, decide, prepare


@dataclass(frozen=True)
class Workload:
    """One estimator to time.

    Attributes
    ----------
    name : str
        The estimator class name, also the unit that leave-one-estimator-out holds out.
    module : str
        Where the class lives.
    params : dict
        Constructor parameters (those the class does not take are dropped).
    target : {"regression", "classes", None}
        Which target ``fit`` gets.
    profile : OperationProfile
        What the proxy runs when the class is missing.
    """

    name: str
    module: str
    params: dict
    target: object
    profile: OperationProfile

    def estimator_class(self):
        """The class, or None when it cannot be imported."""
        try:
            return getattr(importlib.import_module(self.module), self.name)
        except (ImportError, AttributeError):
            return None

    @property
    def kind(self):
        return "estimator" if self.estimator_class() is not None else "proxy"


WORKLOADS = (
    Workload("FactorizedLinearRegression", "sklearn_ilargi.linear_model", {}, "regression",
             OperationProfile(gram=1, rmatmul=1, name="FactorizedLinearRegression")),
    Workload("FactorizedRidge", "sklearn_ilargi.linear_model", {"alpha": 1.0}, "regression",
             OperationProfile(gram=1, rmatmul=1, name="FactorizedRidge")),
    Workload("FactorizedLogisticRegression", "sklearn_ilargi.linear_model", {"max_iter": 30},
             "classes", OperationProfile(matmul=30, rmatmul=30, iterations=30, classes=2,
                                         name="FactorizedLogisticRegression")),
    Workload("FactorizedKMeans", "sklearn_ilargi.cluster",
             {"n_clusters": 8, "max_iter": 20, "n_init": 1, "tol": 0.0, "random_state": 0},
             None, OperationProfile(matmul=20, rmatmul=20, width=8, iterations=20,
                                    name="FactorizedKMeans")),
    Workload("FactorizedNMF", "sklearn_ilargi.decomposition",
             {"n_components": 5, "max_iter": 30, "tol": 0.0, "random_state": 0}, None,
             OperationProfile(matmul=30, rmatmul=30, width=5, iterations=30,
                              name="FactorizedNMF")),
    Workload("FactorizedPCA", "sklearn_ilargi.decomposition",
             {"n_components": 5, "random_state": 0}, None,
             OperationProfile(gram=1, matmul=1, width=5, name="FactorizedPCA")),
)


def workload_names():
    return [w.name for w in WORKLOADS]


def _accepted(cls, params):
    names = inspect.signature(cls.__init__).parameters
    return {k: v for k, v in params.items() if k in names}


def _run_proxy(workload, X, strategy, backend):
    """The profile's products on the prepared input, as the estimator would run them."""
    profile = workload.profile
    decision = decide(X, profile, strategy=strategy, backend=backend)
    prepared = prepare(X, decision)
    rng = np.random.default_rng(0)
    n_rows, n_columns = X.shape
    w = rng.random((n_columns, profile.width))
    r = rng.random((n_rows, profile.width))
    for _ in range(profile.matmul):
        prepared @ w
    for _ in range(profile.rmatmul):
        prepared.T @ r
    for _ in range(profile.gram):
        prepared.gram() if hasattr(prepared, "gram") else prepared.T @ prepared
    return decision


def run_workload(workload, scenario, strategy, backend="cpu"):
    """Fit ``workload`` on ``scenario`` once under a forced strategy and backend.

    Returns
    -------
    Decision
        What the dispatcher recorded (its ``features`` describe the fit).
    """
    cls = workload.estimator_class()
    with config_context(cost_model="heuristic"):
        if cls is None:
            return _run_proxy(workload, scenario.X, strategy, backend)
        params = _accepted(cls, {**workload.params, "strategy": strategy, "backend": backend})
        # A small scenario can have fewer columns than components (and ARPACK wants fewer).
        if "n_clusters" in params:
            params["n_clusters"] = max(1, min(params["n_clusters"], scenario.X.shape[0]))
        if "n_components" in params:
            params["n_components"] = max(1, min(params["n_components"],
                                                min(scenario.X.shape) - 1))
        y = {"regression": scenario.y_regression, "classes": scenario.y_classes}.get(
            workload.target)
        estimator = cls(**params)
        estimator.fit(scenario.X, y) if y is not None else estimator.fit(scenario.X)
        return estimator.decision_
