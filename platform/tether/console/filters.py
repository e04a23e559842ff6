"""Jinja filters for console pages (formatting only; escaping stays on)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any


def when(value: datetime | float | None) -> str:
    """A UTC time to the second ("2026-01-31 14:05:09 UTC")."""
    if value is None:
        return "—"
    if isinstance(value, int | float):
        value = datetime.fromtimestamp(value, UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def short(value: uuid.UUID | str | None) -> str:
    """The last 8 characters of an id (the full id is in the title attribute): ids are
    UUIDv7, whose first characters are their creation time, alike for a whole day."""
    return "—" if value is None else "…" + str(value)[-8:]


def pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def number(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


FILTERS: dict[str, Callable[..., Any]] = {
    "when": when,
    "short": short,
    "pretty": pretty,
    "number": number,
}
