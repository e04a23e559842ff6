"""API shapes of session flags, tenant session defaults and forgetting a session."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec

Source = Literal["request", "session", "persona", "tenant"]


class SessionFlagsUpdate(msgspec.Struct, forbid_unknown_fields=True):
    # null (or omitted): inherit the persona's, then the tenant's.
    memory_enabled: bool | None = None
    knowledge_enabled: bool | None = None


class SessionFlagsRead(msgspec.Struct):
    session_id: str
    # What applies now, and which level decided it.
    memory_enabled: bool
    knowledge_enabled: bool
    memory_source: Source
    knowledge_source: Source
    # What the session itself says (null: it inherits).
    session_memory_enabled: bool | None
    session_knowledge_enabled: bool | None


class SessionSummary(msgspec.Struct):
    """One session of a relationship and the flags in force for it."""

    session_id: str
    opened_at: datetime
    last_turn_at: datetime
    turn_count: int
    ended_at: datetime | None
    flags: SessionFlagsRead


class SessionSummaryPage(msgspec.Struct):
    items: list[SessionSummary]
    next_cursor: str | None


class SessionForgotten(msgspec.Struct):
    session_id: str
    turns: int
    memories: int  # memories derived only from this session's turns


class SessionDefaults(msgspec.Struct, forbid_unknown_fields=True):
    memory_enabled: bool = True
    knowledge_enabled: bool = False
    # false: turns captured with memory off are not stored at all.
    keep_turns_without_memory: bool = True
