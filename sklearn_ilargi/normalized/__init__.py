"""The multi-source input: NormalizedMatrix, its row maps and its blocks."""

from ._blocks import Block
from ._matrix import NormalizedMatrix, TransposedNormalizedMatrix
from ._row_map import RowMap

__all__ = ["Block", "NormalizedMatrix", "RowMap", "TransposedNormalizedMatrix"]
