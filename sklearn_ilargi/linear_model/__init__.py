"""Linear models trained on the sources of a NormalizedMatrix."""

from ._linear import FactorizedLinearRegression
from ._logistic import FactorizedLogisticRegression
from ._logistic_cv import FactorizedLogisticRegressionCV
from ._ridge import FactorizedRidge
from ._ridge_cv import FactorizedRidgeCV

__all__ = ["FactorizedLinearRegression", "FactorizedLogisticRegression",
           "FactorizedLogisticRegressionCV", "FactorizedRidge", "FactorizedRidgeCV"]
