"""Choosing per fit between the factorized and the materialized path, and the device."""

from ._dispatch import (
    Decision,
    OperationProfile,
    decide,
    prepare,
    record_decisions,
)
from ._model import CostModelWarning, load_cost_model

__all__ = [
    "CostModelWarning",
    "Decision",
    "OperationProfile",
    "decide",
    "load_cost_model",
    "prepare",
    "record_decisions",
]
