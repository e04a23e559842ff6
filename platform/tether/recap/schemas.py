"""API shapes of GET /v1/relationships/{id}/recap."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Literal

import msgspec

PlanStatus = Literal["due", "overdue", "upcoming", "undated"]


class RecapSession(msgspec.Struct):
    session_id: str
    opened_at: datetime
    last_turn_at: datetime
    ended: bool
    turn_count: int
    summary: str | None
    summary_source: Literal["memory", "rules", "llm"] | None
    memory_ids: list[uuid.UUID]
    turn_ids: list[uuid.UUID]


class RecapPlan(msgspec.Struct):
    content: str
    status: PlanStatus
    # First and last day (UTC) of the resolved date; None when it stays text.
    due_from: date | None
    due_until: date | None
    said_at: datetime
    unresolved: str | None  # "vague" | "far_future" | "none" when no date was resolved
    memory_ids: list[uuid.UUID]
    turn_ids: list[uuid.UUID]


class RecapFeeling(msgspec.Struct):
    at: datetime
    feeling: str
    content: str
    current: bool  # still the latest state (not superseded)
    memory_ids: list[uuid.UUID]


class RecapTopic(msgspec.Struct):
    text: str
    reason: Literal["deferred", "unanswered_question"]
    at: datetime
    turn_ids: list[uuid.UUID]
    memory_ids: list[uuid.UUID]


class Recap(msgspec.Struct):
    relationship_id: uuid.UUID
    as_of: datetime
    last_contact_at: datetime | None
    seconds_since_last_contact: int | None
    last_session: RecapSession | None
    plans: list[RecapPlan]
    feelings: list[RecapFeeling]
    trajectory: Literal["improving", "worsening", "steady", "mixed"] | None
    unresolved_topics: list[RecapTopic]
    empty: bool
