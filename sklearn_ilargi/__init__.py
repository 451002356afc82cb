"""sklearn-ilargi: factorized learning over several tables, on CPU and GPU."""

from ._config import config_context, get_config, set_config
from .cluster import FactorizedKMeans
from .decomposition import FactorizedNMF, FactorizedPCA
from .exceptions import InsufficientMemoryError, MaterializationWarning, NotFactorizableError
from .linear_model import (
    FactorizedLinearRegression,
    FactorizedLogisticRegression,
    FactorizedLogisticRegressionCV,
    FactorizedRidge,
    FactorizedRidgeCV,
)
from .normalized import NormalizedMatrix, PartitionedMatrix
from .preprocessing import FactorizedStandardScaler
from .tables import Join, Union, from_tables
from .utils._cache import cache_info, clear_cache

__version__ = "0.1.0"

__all__ = [
    "FactorizedKMeans",
    "FactorizedLinearRegression",
    "FactorizedLogisticRegression",
    "FactorizedLogisticRegressionCV",
    "FactorizedNMF",
    "FactorizedPCA",
    "FactorizedRidge",
    "FactorizedRidgeCV",
    "FactorizedStandardScaler",
    "InsufficientMemoryError",
    "Join",
    "MaterializationWarning",
    "NormalizedMatrix",
    "NotFactorizableError",
    "PartitionedMatrix",
    "Union",
    "cache_info",
    "clear_cache",
    "config_context",
    "from_tables",
    "get_config",
    "set_config",
]
