"""Time words resolved against the turn's timestamp (UTC calendar days, ISO weeks).

A resolved period is half-open: ``end`` is 00:00 of the first day after it, which is
what a plan's ``expires_at`` becomes ("this weekend" on a Wednesday ends on Monday).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from tether.memories.extraction.timetables import EN_TABLE, ZH_TABLE, Spec

PAST, PRESENT, FUTURE = "past", "present", "future"
HABITUAL, FORMER = "habitual", "former"  # "every night" / "used to": no current fact


@dataclass(frozen=True, slots=True)
class TimeRef:
    tense: str
    start: datetime | None = None
    end: datetime | None = None
    unit: str | None = None  # day | week | weekend | month | year, for the content sentence


_Period = Callable[[datetime, int], tuple[datetime, datetime]]


def _day(at: datetime, n: int) -> tuple[datetime, datetime]:
    start = at.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=n)
    return start, start + timedelta(days=1)


def _week(at: datetime, n: int) -> tuple[datetime, datetime]:
    monday = _day(at, -at.weekday())[0] + timedelta(weeks=n)
    return monday, monday + timedelta(weeks=1)


def _weekend(at: datetime, n: int) -> tuple[datetime, datetime]:
    monday, next_monday = _week(at, n)
    return monday + timedelta(days=5), next_monday


def _month(at: datetime, n: int) -> tuple[datetime, datetime]:
    index = at.year * 12 + at.month - 1 + n
    start = at.replace(year=index // 12, month=index % 12 + 1, day=1)
    start = start.replace(hour=0, minute=0, second=0, microsecond=0)
    after = index + 1
    return start, start.replace(year=after // 12, month=after % 12 + 1)


def _year(at: datetime, n: int) -> tuple[datetime, datetime]:
    start = _day(at, 0)[0].replace(year=at.year + n, month=1, day=1)
    return start, start.replace(year=start.year + 1)


_PERIODS: dict[str, _Period] = {
    "day": _day,
    "week": _week,
    "weekend": _weekend,
    "month": _month,
    "year": _year,
}


def _resolve(spec: Spec, match: re.Match[str], at: datetime) -> TimeRef:
    if spec.unit is None:
        return TimeRef(spec.tense)
    offset = spec.offset if spec.offset_group is None else spec.offset_of(match)
    if spec.unit.startswith("weekday:"):
        target = int(spec.unit.split(":")[1])
        start, end = _day(_week(at, offset)[0], target)
        tense = PAST if end <= _day(at, 0)[0] else FUTURE if start > at else PRESENT
        return TimeRef(spec.tense or tense, start, end, "day")
    start, end = _PERIODS[spec.unit](at, offset)
    return TimeRef(spec.tense, start, end, spec.unit)


def find_time(text: str, at: datetime, zh: bool) -> tuple[TimeRef | None, str]:
    """The clause's time reference and the clause with every time word removed.

    Habitual and "used to" markers win over dated words: "以前每周末" is not a date.
    """
    found: list[TimeRef] = []
    rest = text
    for pattern, spec in ZH_TABLE if zh else EN_TABLE:
        match = pattern.search(rest)
        if match is None:
            continue
        found.append(_resolve(spec, match, at))
        rest = pattern.sub(" ", rest, count=1)
    rest = re.sub(r"\s+", " ", rest).strip()
    rest = re.sub(r"\s+([,.!?;:])", r"\1", rest) if not zh else rest.replace(" ", "")
    for marker in (FORMER, HABITUAL):
        if any(ref.tense == marker for ref in found):
            return TimeRef(marker), rest
    dated = [ref for ref in found if ref.start is not None]
    return (dated[0] if dated else found[0] if found else None), rest
