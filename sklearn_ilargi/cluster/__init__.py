"""Clustering over a NormalizedMatrix."""

from ._kmeans import FactorizedKMeans

__all__ = ["FactorizedKMeans"]
