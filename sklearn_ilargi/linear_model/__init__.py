"""Linear models trained on the sources of a NormalizedMatrix."""

from ._linear import FactorizedLinearRegression
from ._logistic import FactorizedLogisticRegression
from ._ridge import FactorizedRidge

__all__ = ["FactorizedLinearRegression", "FactorizedLogisticRegression", "FactorizedRidge"]
