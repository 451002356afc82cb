"""The multi-source input: NormalizedMatrix, held as its sources, row maps and blocks."""

from ._matrix import NormalizedMatrix

__all__ = ["NormalizedMatrix"]
