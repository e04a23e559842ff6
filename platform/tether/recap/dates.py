"""When a plan is due: its date expression resolved against the moment it was said.

The extraction's time words (下周五, 明天, 后天, 下个月, "next Friday", "tomorrow") come
first; this module adds spans ("in two weeks", 两周后, 三天以后) and calendar dates
(3月15日, "March 15", 2027-03-15). Anything vague (以后, "someday", 几天后) or further than
a year ahead is kept as text: a recap never guesses a date.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from tether.memories.extraction.normalize import is_zh
from tether.memories.extraction.timewords import find_time

FAR_FUTURE = timedelta(days=366)
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "一": 1, "两": 2, "二": 2, "三": 3,
    "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
}  # fmt: skip
_UNITS = {
    "day": 1, "days": 1, "天": 1, "week": 7, "weeks": 7, "周": 7, "星期": 7, "礼拜": 7,
}  # fmt: skip
_MONTH_UNITS = {"month": 1, "months": 1, "个月": 1, "月": 1, "year": 12, "years": 12, "年": 12}
_EN_MONTHS = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
]  # fmt: skip
_N = (
    r"(?P<n>\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|[一两二三四五六七八九十])"
)
_SPANS = [
    re.compile(rf"\bin\s+{_N}\s+(?P<u>days?|weeks?|months?|years?)\b(?!\s+ago)", re.IGNORECASE),
    re.compile(rf"\b{_N}\s+(?P<u>days?|weeks?|months?|years?)\s+from\s+now\b", re.IGNORECASE),
    re.compile(rf"{_N}(?:个)?(?P<u>天|周|星期|礼拜|个月|月|年)(?:以后|之后|后)"),
]
_ISO = re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b")
_ZH_DATE = re.compile(r"(?:(?P<y>\d{4})年)?(?P<m>\d{1,2})月(?P<d>\d{1,2})[日号]")
_EN_DATE = re.compile(
    r"\b(?:on\s+)?(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+"
    r"(?P<d>\d{1,2})(?:st|nd|rd|th)?\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"\b(?:in|by)\s+(?P<y>(?:19|20)\d{2})\b|(?P<zy>(?:19|20)\d{2})年(?!\d{1,2}月)")
_NEXT_NEXT_WEEK = re.compile(r"下下(?:个)?(?:周|星期|礼拜)(?P<w>[一二三四五六日天])?")
_ZH_WEEKDAY = "一二三四五六日天"
# Spans without a number: a date would be a guess.
_VAGUE = re.compile(
    r"几(?:个)?(?:天|周|星期|礼拜|个月|月|年)(?:以后|之后|后)|过(?:一)?阵子|过段时间"
    r"|\bin (?:a few|several|a couple of|some) (?:days|weeks|months|years)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class PlanDate:
    """``start``..``end`` (half-open, UTC days) when resolved; else ``None`` and why."""

    start: datetime | None
    end: datetime | None
    unresolved: str | None = None  # "vague" | "far_future" | "none"


def _midnight(at: datetime) -> datetime:
    return at.replace(hour=0, minute=0, second=0, microsecond=0)


def _add_months(at: datetime, months: int) -> datetime:
    index = at.year * 12 + at.month - 1 + months
    year, month = divmod(index, 12)
    day = min(at.day, 28)  # a resolved "in a month" is a day of that month, not a guess
    return at.replace(year=year, month=month + 1, day=day)


def _span(text: str, said: datetime) -> datetime | None:
    for pattern in _SPANS:
        match = pattern.search(text)
        if match is None:
            continue
        raw, unit = match.group("n").lower(), match.group("u").lower()
        n = int(raw) if raw.isdigit() else _NUMBERS[raw]
        if unit in _UNITS:
            return _midnight(said) + timedelta(days=n * _UNITS[unit])
        return _midnight(_add_months(said, n * _MONTH_UNITS[unit]))
    return None


def _calendar(text: str, said: datetime) -> datetime | None:
    match = _ISO.search(text) or _ZH_DATE.search(text)
    if match is not None:
        month, day = int(match.group("m")), int(match.group("d"))
        year = int(match.group("y")) if match.group("y") else None
    elif (en := _EN_DATE.search(text)) is not None:
        month, day, year = (
            _EN_MONTHS.index(en.group("mon").lower()[:3]) + 1,
            int(en.group("d")),
            None,
        )
    else:
        return None
    try:
        found = _midnight(said).replace(year=year or said.year, month=month, day=day)
        if year is None and found < _midnight(said):
            found = found.replace(year=said.year + 1)  # "March 3" said in December
    except ValueError:
        return None  # 2月30日: not a day
    return found


def _next_next_week(text: str, said: datetime) -> datetime | None:
    match = _NEXT_NEXT_WEEK.search(text)
    if match is None:
        return None
    monday = _midnight(said) - timedelta(days=said.weekday()) + timedelta(weeks=2)
    weekday = match.group("w")
    return monday + timedelta(days=min(_ZH_WEEKDAY.index(weekday), 6)) if weekday else monday


def _year(text: str, said: datetime) -> tuple[datetime, datetime] | None:
    match = _YEAR.search(text)
    if match is None:
        return None
    year = int(match.group("y") or match.group("zy"))
    start = _midnight(said).replace(year=year, month=1, day=1)
    return start, start.replace(year=year + 1)


def plan_date(text: str, said: datetime) -> PlanDate:
    """The date of the plan ``text`` states, resolved against ``said`` (tz-aware)."""
    if _VAGUE.search(text):
        return PlanDate(None, None, "vague")
    day = _span(text, said) or _calendar(text, said) or _next_next_week(text, said)
    year = None if day is not None else _year(text, said)
    if day is not None:
        start, end = day, day + timedelta(days=1)
    elif year is not None:
        start, end = year
    else:
        ref, _ = find_time(text, said, is_zh(text))
        if ref is None:
            return PlanDate(None, None, "none")
        if ref.start is None or ref.end is None:
            return PlanDate(None, None, "vague")
        start, end = ref.start, ref.end
    if start - said > FAR_FUTURE:
        return PlanDate(None, None, "far_future")
    return PlanDate(start, end)
