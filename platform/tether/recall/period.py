"""The period a query names ("in May 2023", "last summer", 2023年5月, 上个月), if any.

A question that names when something happened is about the memories of that time: the
ranker lifts the relevant memories that occurred within the period (decision 0091). Only
a period that can be pinned to the calendar counts; vague words ("recently", 最近) name
none. Relative words resolve against ``now``, the moment of the query. Periods are UTC
days, half-open ``[start, end)``; seasons are the northern hemisphere's (summer = June to
August).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

# What happened in a period is often told a few days after it ("last week we went
# camping"), and such a memory is dated when it was told: the period reaches this far on.
TOLD_WITHIN = timedelta(days=7)

_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_SEASONS = {
    "spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12,
    "春天": 3, "春季": 3, "夏天": 6, "夏季": 6, "秋天": 9, "秋季": 9, "冬天": 12, "冬季": 12,
}  # fmt: skip
_ZH_NUMBERS = {
    "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
    "十": 10, "十一": 11, "十二": 12,
}  # fmt: skip
_MONTH = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<y>(?:19|20)\d{2})"
_ZH_MONTH = r"(?P<zm>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])月"
_SEASON_EN = r"(?P<season>spring|summer|autumn|fall|winter)"
_SEASON_ZH = r"(?P<season>[春夏秋冬][天季])"

# Most specific first: a day before a month before a season before a year.
_ABSOLUTE = [
    ("day", re.compile(rf"\b{_MONTH}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+{_YEAR}\b", re.I)),
    ("day", re.compile(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH},?\s+{_YEAR}\b", re.I)),
    ("day", re.compile(r"\b(?P<y>(?:19|20)\d{2})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b")),
    ("day", re.compile(rf"{_YEAR}年{_ZH_MONTH}(?P<d>\d{{1,2}})[日号]")),
    ("month", re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    ("month", re.compile(rf"{_YEAR}年{_ZH_MONTH}")),
    ("season", re.compile(rf"\b{_SEASON_EN},?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    ("season", re.compile(rf"{_YEAR}年(?:的)?{_SEASON_ZH}")),
    ("year", re.compile(rf"\b(?:in|during|of|since|throughout)\s+{_YEAR}\b", re.I)),
    ("year", re.compile(rf"{_YEAR}年")),
]
# Relative to the query's moment.
_RELATIVE = [
    ("yesterday", re.compile(r"\byesterday\b|昨天|昨日", re.I)),
    ("last_week", re.compile(r"\blast\s+week\b|上(?:个)?(?:周|星期|礼拜)", re.I)),
    ("this_week", re.compile(r"\bthis\s+week\b|(?:这|本)(?:个)?(?:周|星期|礼拜)", re.I)),
    ("last_month", re.compile(r"\blast\s+month\b|上(?:个)?月", re.I)),
    ("this_month", re.compile(r"\bthis\s+month\b|(?:这|本)(?:个)?月", re.I)),
    ("last_season", re.compile(rf"\blast\s+{_SEASON_EN}\b", re.I)),
    ("last_years_season", re.compile(rf"去年(?:的)?{_SEASON_ZH}")),
    ("this_season", re.compile(rf"\bthis\s+{_SEASON_EN}\b", re.I)),
    ("this_season", re.compile(rf"今年(?:的)?{_SEASON_ZH}")),
    ("last_year", re.compile(r"\blast\s+year\b|去年", re.I)),
    ("this_year", re.compile(r"\bthis\s+year\b|今年", re.I)),
]

# Most queries name no period: one search for anything that could start one (a year's
# digits or a relative word) spares them the patterns (≈ 10 µs instead of ≈ 100).
_HINT = re.compile(
    r"(?:19|20)\d{2}|yesterday|\b(?:last|this)\s+(?:week|month|year|spring|summer|autumn|fall"
    r"|winter)\b|昨|[上这本](?:个)?(?:周|星期|礼拜|月)|[去今]年",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Period:
    """``[start, end)`` in UTC."""

    start: datetime
    end: datetime

    def holds(self, occurred_micros: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Which of the times (POSIX microseconds) fall within the period or are told
        within ``TOLD_WITHIN`` after it."""
        start = int(self.start.timestamp() * 1_000_000)
        end = int((self.end + TOLD_WITHIN).timestamp() * 1_000_000)
        inside: npt.NDArray[np.bool_] = (occurred_micros >= start) & (occurred_micros < end)
        return inside


def named_period(text: str, now: datetime) -> Period | None:
    """The period ``text`` names, the first found most specific first; None if none."""
    if _HINT.search(text) is None:
        return None
    for kind, pattern in _ABSOLUTE:
        match = pattern.search(text)
        if match is not None:
            found = _absolute(kind, match)
            if found is not None:
                return found
    for kind, pattern in _RELATIVE:
        match = pattern.search(text)
        if match is not None:
            return _relative(kind, match, now.astimezone(UTC))
    return None


def _month_of(match: re.Match[str]) -> int:
    groups = match.groupdict()
    if groups.get("mon"):
        return _MONTHS[groups["mon"].lower()]
    if groups.get("zm"):
        raw = groups["zm"]
        return int(raw) if raw.isdigit() else _ZH_NUMBERS[raw]
    return int(groups["m"])


def _absolute(kind: str, match: re.Match[str]) -> Period | None:
    year = int(match.group("y"))
    try:
        if kind == "day":
            day = datetime(year, _month_of(match), int(match.group("d")), tzinfo=UTC)
            return Period(day, day + timedelta(days=1))
        if kind == "month":
            return _months(year, _month_of(match), 1)
        if kind == "season":
            return _months(year, _SEASONS[match.group("season").lower()], 3)
    except ValueError:  # 31 February, month 13: not a date, so no period
        return None
    return _months(year, 1, 12)


def _relative(kind: str, match: re.Match[str], now: datetime) -> Period:
    today = datetime(now.year, now.month, now.day, tzinfo=UTC)
    if kind == "yesterday":
        return Period(today - timedelta(days=1), today)
    monday = today - timedelta(days=today.weekday())
    if kind == "last_week":
        return Period(monday - timedelta(days=7), monday)
    if kind == "this_week":
        return Period(monday, monday + timedelta(days=7))
    if kind == "last_month":
        return _months(now.year - (now.month == 1), (now.month - 2) % 12 + 1, 1)
    if kind == "this_month":
        return _months(now.year, now.month, 1)
    if kind.endswith("season"):
        first = _SEASONS[match.group("season").lower()]
        year = now.year if kind == "this_season" else now.year - 1
        if kind == "last_season" and first != 12 and now.month >= first + 3:
            year = now.year  # "last summer" said in November: this year's (去年夏天 is not)
        return _months(year, first, 3)
    if kind == "last_year":
        return _months(now.year - 1, 1, 12)
    return _months(now.year, 1, 12)


def _months(year: int, month: int, count: int) -> Period:
    """``count`` calendar months from the first of ``month`` of ``year``."""
    start = datetime(year, month, 1, tzinfo=UTC)
    index = year * 12 + month - 1 + count
    return Period(start, datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC))
