"""sklearn-ilargi: factorized learning over several tables, on CPU and GPU."""

from ._config import config_context, get_config, set_config
from .cluster import FactorizedKMeans
from .decomposition import FactorizedNMF, FactorizedPCA
from .exceptions import MaterializationWarning, NotFactorizableError
from .linear_model import (
    FactorizedLinearRegression,
    FactorizedLogisticRegression,
    FactorizedRidge,
)
from .normalized import NormalizedMatrix
from .preprocessing import FactorizedStandardScaler
from .tables import Join, Union, from_tables

__version__ = "0.1.0"

__all__ = [
    "FactorizedKMeans",
    "FactorizedLinearRegression",
    "FactorizedLogisticRegression",
    "FactorizedNMF",
    "FactorizedPCA",
    "FactorizedRidge",
    "FactorizedStandardScaler",
    "Join",
    "MaterializationWarning",
    "NormalizedMatrix",
    "NotFactorizableError",
    "Union",
    "config_context",
    "from_tables",
    "get_config",
    "set_config",
]
