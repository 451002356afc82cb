"""sklearn-ilargi: factorized learning over several tables, on CPU and GPU."""

from ._config import config_context, get_config, set_config
from .exceptions import MaterializationWarning, NotFactorizableError
from .normalized import NormalizedMatrix

__version__ = "0.1.0"

__all__ = [
    "MaterializationWarning",
    "NormalizedMatrix",
    "NotFactorizableError",
    "config_context",
    "get_config",
    "set_config",
]
