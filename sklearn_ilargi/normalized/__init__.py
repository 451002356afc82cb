"""The multi-source input: NormalizedMatrix, its row maps and its blocks."""

from ._blocks import Block
from ._matrix import NormalizedMatrix, TransposedNormalizedMatrix
from ._row_map import RowMap
from ._tables import Join, Union, from_tables

__all__ = [
    "Block",
    "Join",
    "NormalizedMatrix",
    "RowMap",
    "TransposedNormalizedMatrix",
    "Union",
    "from_tables",
]
