"""What the calibration times: each estimator's fit, under a forced strategy and backend.

A workload is an estimator class with fixed parameters. Its fit declares its own operation
profile to the dispatcher, which records the fit's features in its decision.
"""

import importlib
import inspect
from dataclasses import dataclass

from ..._config import config_context


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
    """

    name: str
    module: str
    params: dict
    target: object

    def estimator_class(self):
        return getattr(importlib.import_module(self.module), self.name)

    #: Written to the measurement file's ``workload_kind`` column.
    kind = "estimator"


WORKLOADS = (
    Workload("FactorizedLinearRegression", "sklearn_ilargi.linear_model", {}, "regression"),
    Workload("FactorizedRidge", "sklearn_ilargi.linear_model", {"alpha": 1.0}, "regression"),
    Workload("FactorizedLogisticRegression", "sklearn_ilargi.linear_model", {"max_iter": 30},
             "classes"),
    Workload("FactorizedKMeans", "sklearn_ilargi.cluster",
             {"n_clusters": 8, "max_iter": 20, "n_init": 1, "tol": 0.0, "random_state": 0},
             None),
    Workload("FactorizedNMF", "sklearn_ilargi.decomposition",
             {"n_components": 5, "max_iter": 30, "tol": 0.0, "random_state": 0}, None),
    Workload("FactorizedPCA", "sklearn_ilargi.decomposition",
             {"n_components": 5, "random_state": 0}, None),
)


def _accepted(cls, params):
    names = inspect.signature(cls.__init__).parameters
    return {k: v for k, v in params.items() if k in names}


def run_workload(workload, scenario, strategy, backend="cpu"):
    """Fit ``workload`` on ``scenario`` once under a forced strategy and backend.

    Returns
    -------
    Decision
        What the dispatcher recorded (its ``features`` describe the fit).
    """
    cls = workload.estimator_class()
    with config_context(cost_model="heuristic"):
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
