"""The controlled vocabularies of a memory record. Its kind and layer are recall's (the
store filters and encodes them); polarity and outcomes belong to consolidation."""

from __future__ import annotations

from enum import StrEnum

from tether.recall.enums import MemoryLayer, MemoryType

__all__ = ["MemoryLayer", "MemoryType", "Outcome", "Polarity"]


class Polarity(StrEnum):
    AFFIRMED = "affirmed"
    NEGATED = "negated"


class Outcome(StrEnum):
    """What consolidation decided for one extracted candidate."""

    DUPLICATE = "duplicate"
    COMPATIBLE = "compatible"
    UPDATE = "update"
    CONTRADICTION = "contradiction"
    UNRELATED = "unrelated"
