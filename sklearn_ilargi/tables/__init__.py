"""From tables to a NormalizedMatrix: join descriptions, reading and encoding, key matching."""

from ._from_tables import from_tables
from ._spec import Join, Union

__all__ = ["Join", "Union", "from_tables"]
