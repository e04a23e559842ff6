"""The time-word tables, Chinese and English. Longer phrases come first so that
上周末 is not read as 上周, nor "next weekend" as "next week"."""

from __future__ import annotations

import re
from dataclasses import dataclass

_EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_ZH_NUMBERS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "几": 3}


@dataclass(frozen=True, slots=True)
class Spec:
    tense: str  # "" for a weekday: the tense follows from the date
    unit: str | None = None  # day | week | weekend | month | year | weekday:<0-6>
    offset: int = 0
    offset_group: str | None = None  # "N days ago": the offset is read from the text

    def offset_of(self, match: re.Match[str]) -> int:
        raw = match.group(self.offset_group or "n").lower()
        number = int(raw) if raw.isdigit() else _EN_NUMBERS.get(raw, _ZH_NUMBERS.get(raw, 1))
        return -number


def _zh(pairs: list[tuple[str, Spec]]) -> list[tuple[re.Pattern[str], Spec]]:
    return [(re.compile(pattern), spec) for pattern, spec in pairs]


def _en(pairs: list[tuple[str, Spec]]) -> list[tuple[re.Pattern[str], Spec]]:
    return [(re.compile(rf"\b(?:{p})\b", re.IGNORECASE), spec) for p, spec in pairs]


_ZH_WEEKDAYS = "一二三四五六日天"
_EN_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def _zh_weekdays() -> list[tuple[str, Spec]]:
    rows: list[tuple[str, Spec]] = []
    for index, char in enumerate(_ZH_WEEKDAYS):
        day = f"weekday:{min(index, 6)}"
        rows += [
            (f"上(?:个)?(?:周|星期|礼拜){char}", Spec("past", day, -1)),
            (f"下(?:个)?(?:周|星期|礼拜){char}", Spec("future", day, 1)),
            (f"(?:这|本)?(?:周|星期|礼拜){char}", Spec("", day, 0)),
        ]
    return rows


def _en_weekdays() -> list[tuple[str, Spec]]:
    rows: list[tuple[str, Spec]] = []
    for index, name in enumerate(_EN_WEEKDAYS):
        day = f"weekday:{index}"
        rows += [
            (f"last {name}", Spec("past", day, -1)),
            (f"next {name}", Spec("future", day, 1)),
            (f"(?:this|on|this coming) {name}", Spec("", day, 0)),
        ]
    return rows


ZH_TABLE = _zh(
    [
        (r"(?:以前|之前|过去|小时候|曾经|原来|以往|上学的时候)", Spec("former")),
        (
            r"(?:每天晚上|每天|天天|每周末|每周|每晚|每次|平时|一般|经常|总是|通常)",
            Spec("habitual"),
        ),
        (r"(?P<n>\d+|[一两二三四五六几])天前", Spec("past", "day", offset_group="n")),
        (r"前天", Spec("past", "day", -2)),
        (r"(?:昨天晚上|昨天|昨晚|昨儿)", Spec("past", "day", -1)),
        (r"(?:今天早上|今天晚上|今天|今晚|今早|今儿)", Spec("present", "day", 0)),
        (r"(?:明天晚上|明天|明晚|明早|明儿)", Spec("future", "day", 1)),
        (r"后天", Spec("future", "day", 2)),
        (r"上(?:个)?周末", Spec("past", "weekend", -1)),
        (r"下(?:个)?周末", Spec("future", "weekend", 1)),
        (r"(?:这个|这|本)?周末", Spec("future", "weekend", 0)),
        *_zh_weekdays(),
        (r"上(?:个)?(?:周|星期|礼拜)", Spec("past", "week", -1)),
        (r"下(?:个)?(?:周|星期|礼拜)", Spec("future", "week", 1)),
        (r"(?:这个|这|本)(?:周|星期|礼拜)", Spec("present", "week", 0)),
        (r"上(?:个)?月", Spec("past", "month", -1)),
        (r"下(?:个)?月", Spec("future", "month", 1)),
        (r"(?:这个|本)月", Spec("present", "month", 0)),
        (r"去年", Spec("past", "year", -1)),
        (r"明年", Spec("future", "year", 1)),
        (r"今年", Spec("present", "year", 0)),
        (r"(?:前几天|前段时间|前阵子)", Spec("past")),
        (r"(?:最近|近来|这几天|这阵子|这段时间|现在|目前)", Spec("present")),
        (r"(?:下次|下回|改天|回头|以后|今后|将来|到时候)", Spec("future")),
    ]
)

EN_TABLE = _en(
    [
        (r"used to", Spec("former")),
        (
            r"every (?:single )?(?:day|night|morning|evening|week|weekend|month)|usually|always"
            r"|often|on weekends|most days|every other day",
            Spec("habitual"),
        ),
        (
            r"(?P<n>\d+|a|an|one|two|three|four|five|six) days? ago",
            Spec("past", "day", offset_group="n"),
        ),
        (
            r"(?P<n>\d+|a|an|one|two|three|four|five|six) weeks? ago",
            Spec("past", "week", offset_group="n"),
        ),
        (r"the day before yesterday", Spec("past", "day", -2)),
        (r"yesterday(?: morning| afternoon| evening)?|last night", Spec("past", "day", -1)),
        (r"the day after tomorrow", Spec("future", "day", 2)),
        (r"tomorrow(?: morning| afternoon| evening| night)?", Spec("future", "day", 1)),
        (r"today|tonight|this (?:morning|afternoon|evening)", Spec("present", "day", 0)),
        (r"last weekend|over the weekend", Spec("past", "weekend", -1)),
        (r"next weekend", Spec("future", "weekend", 1)),
        (r"this (?:coming )?weekend|on the weekend", Spec("future", "weekend", 0)),
        *_en_weekdays(),
        (r"last week", Spec("past", "week", -1)),
        (r"next week", Spec("future", "week", 1)),
        (r"this week", Spec("present", "week", 0)),
        (r"last month", Spec("past", "month", -1)),
        (r"next month", Spec("future", "month", 1)),
        (r"this month", Spec("present", "month", 0)),
        (r"last year", Spec("past", "year", -1)),
        (r"next year", Spec("future", "year", 1)),
        (r"recently|lately|these days|right now|currently|nowadays|now", Spec("present")),
        (r"next time|sometime|some time|someday|one day|later|soon|from now on", Spec("future")),
    ]
)
