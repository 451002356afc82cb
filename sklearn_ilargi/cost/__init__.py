"""Choosing per fit between the factorized and the materialized path, and the device."""

from ._dispatch import Decision, OperationProfile, decide, prepare

__all__ = ["Decision", "OperationProfile", "decide", "prepare"]
