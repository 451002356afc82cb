"""The multi-source input: NormalizedMatrix, held as its sources, row maps and blocks."""

from ._matrix import NormalizedMatrix
from ._partitioned import PartitionedMatrix

__all__ = ["NormalizedMatrix", "PartitionedMatrix"]
