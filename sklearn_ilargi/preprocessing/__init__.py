"""Scaling that keeps a NormalizedMatrix factorized."""

from ._data import FactorizedStandardScaler

__all__ = ["FactorizedStandardScaler"]
