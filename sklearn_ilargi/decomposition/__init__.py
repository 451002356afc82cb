"""Matrix decompositions over a NormalizedMatrix: PCA and NMF."""

from ._nmf import FactorizedNMF
from ._pca import FactorizedPCA

__all__ = ["FactorizedNMF", "FactorizedPCA"]
