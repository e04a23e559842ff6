"""API shapes of forgetting and erasure."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import msgspec

from tenancy.audit.schemas import AccessReportEntry
from tether.core.text import items, printable, text
from tether.memories.enums import MemoryType


class ForgetRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Which memories to forget: any of the ways below (they narrow each other)."""

    query: Annotated[str, text(500, min_length=1)] | None = None
    memory_ids: Annotated[list[uuid.UUID], items(500)] | None = None
    types: Annotated[list[MemoryType], items(16)] | None = None
    # Purge the content (text, tokens, vectors, version snapshots), keeping only that
    # something was forgotten; otherwise a soft delete that stays in the history.
    hard: bool = False


class ForgetCandidate(msgspec.Struct):
    id: uuid.UUID
    memory_type: str
    content: str
    occurred_at: datetime


class ForgetPreview(msgspec.Struct):
    token: str
    expires_at: datetime
    hard: bool
    memories: list[ForgetCandidate]


class ForgetConfirm(msgspec.Struct, forbid_unknown_fields=True):
    token: Annotated[str, printable(128, min_length=16)]


class ForgetResult(msgspec.Struct):
    forgotten: int
    hard: bool


class AccessReport(msgspec.Struct):
    global_user_id: uuid.UUID
    items: list[AccessReportEntry]
