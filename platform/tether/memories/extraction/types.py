"""The values extraction hands to consolidation and the write path."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from tether.memories.enums import MemoryType, Polarity, Provenance


@dataclass(frozen=True, slots=True)
class TurnText:
    """One stored, privacy-masked turn of a session."""

    id: uuid.UUID
    role: str  # "user" | "assistant"
    text: str
    at: datetime  # tz-aware UTC


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory the rules propose; consolidation decides what becomes of it."""

    memory_type: MemoryType
    subject: str  # "user" or "user.<relation>" for the user's close people and pets
    predicate: str
    object: str
    polarity: Polarity
    content: str  # a sentence in the turn's language, readable without the chat
    importance: float
    confidence: float
    exclusive: bool  # single-valued predicate: a different object contradicts
    valid_from: datetime | None
    expires_at: datetime | None
    source_turn_ids: tuple[uuid.UUID, ...]
    provenance: Provenance = Provenance.USER_STATED  # how strong its evidence is


@dataclass(frozen=True, slots=True)
class ForgetRequest:
    """The user asked to forget something.

    ``terms`` are normalized words to match stored memories by; empty means "the
    previous statement", which ``refers_to`` names by turn id when that statement was
    made in the same session (an earlier session's statement is left to the caller).
    """

    terms: tuple[str, ...]
    source_turn_id: uuid.UUID
    refers_to: tuple[uuid.UUID, ...] = ()


@dataclass(frozen=True, slots=True)
class Extraction:
    """Everything one session yielded.

    Forget requests concern memories stored before this session: candidates of the same
    session that a request covers are already left out, so apply the requests first.
    """

    candidates: list[Candidate] = field(default_factory=list)
    forget: list[ForgetRequest] = field(default_factory=list)
