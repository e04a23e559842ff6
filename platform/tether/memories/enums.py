"""The controlled vocabularies of a memory record."""

from __future__ import annotations

from enum import StrEnum


class MemoryType(StrEnum):
    PROFILE = "profile"
    PREFERENCE = "preference"
    FACT = "fact"
    EVENT = "event"
    COMMITMENT = "commitment"
    EMOTION = "emotion"
    INSTRUCTION = "instruction"
    SUMMARY = "summary"


class MemoryLayer(StrEnum):
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


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
