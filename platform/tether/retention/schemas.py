"""API shapes of the retention sweep's progress."""

from __future__ import annotations

from datetime import datetime

import msgspec


class RetentionRunRead(msgspec.Struct):
    kind: str
    cutoff: datetime
    removed: int
    batches: int
    started_at: datetime
    updated_at: datetime
    finished_at: datetime | None


class RetentionRunList(msgspec.Struct):
    items: list[RetentionRunRead]
