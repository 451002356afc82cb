"""Choosing per fit between the factorized and the materialized path, and the device."""

from ._dispatch import (
    Decision,
    OperationProfile,
    decide,
    expected_iterations,
    prepare,
    record_decisions,
)
from ._model import CostModelWarning, load_cost_model

__all__ = [
    "CostModelWarning",
    "Decision",
    "OperationProfile",
    "decide",
    "expected_iterations",
    "load_cost_model",
    "prepare",
    "record_decisions",
]
