"""Checks of a turn batch that msgspec's types cannot express. A batch is all or
nothing: every problem is collected and the whole batch is refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tether.core.settings import IngestSettings
from tether.turns.errors import InvalidTurns
from tether.turns.schemas import TurnBatch


def _text_problem(text: str, max_chars: int) -> str | None:
    if not text.strip():
        return "must not be empty"
    if len(text) > max_chars:
        return f"must be at most {max_chars} characters (got {len(text)})"
    if "\x00" in text:
        return "must not contain NUL characters"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (lone surrogates are not)"
    return None


def _at_problem(at: datetime, now: datetime, max_skew: timedelta) -> str | None:
    if at.tzinfo is None:
        return "must carry a timezone offset (e.g. 2026-01-31T09:00:00Z)"
    if at > now + max_skew:
        return f"is in the future (more than {int(max_skew.total_seconds())} s ahead)"
    return None


def validate_batch(batch: TurnBatch, limits: IngestSettings, now: datetime | None = None) -> None:
    """Raise InvalidTurns naming every offending field (``turns[3].text``)."""
    now = now or datetime.now(UTC)
    errors: list[dict[str, str]] = []
    count = len(batch.turns)
    if not 1 <= count <= limits.max_batch:
        errors.append(
            {"field": "turns", "message": f"must hold 1..{limits.max_batch} turns (got {count})"}
        )
    skew = timedelta(seconds=limits.max_clock_skew_seconds)
    for index, turn in enumerate(batch.turns):
        problem = _text_problem(turn.text, limits.max_text_chars)
        if problem:
            errors.append({"field": f"turns[{index}].text", "message": problem})
        if turn.at is not None and (problem := _at_problem(turn.at, now, skew)):
            errors.append({"field": f"turns[{index}].at", "message": problem})
    if errors:
        raise InvalidTurns(f"{len(errors)} problem(s); first: {errors[0]['field']}", errors=errors)
