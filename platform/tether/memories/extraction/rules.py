"""The rule engine: an ordered table of regular expressions, first match wins.

A rule reads the clause after its subject and time words are taken out, so one
pattern covers "我上周去了厦门", "上周我去了厦门" and "去了厦门".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tether.memories.enums import MemoryType, Polarity
from tether.memories.extraction.timewords import FUTURE, PAST, PRESENT, TimeRef

ANY, EXPLICIT, FUTURE_ONLY, NOT_FUTURE, DATED_PAST, STATED = (
    "any",
    "explicit",
    "future",
    "not_future",
    "dated_past",
    "stated",  # an explicit subject, a date, or not an answer: "挺开心的" to "玩得开心吗？" is not
)


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: re.Pattern[str]
    memory_type: MemoryType
    predicate: str
    negated: bool = False  # the verb itself says "not": 讨厌, hate
    when: str = ANY
    extra: tuple[tuple[str, str], ...] = ()  # (group, predicate): more hits from one match
    persona_ok: bool = False  # promises may mention "you"; preferences about "you" are talk


@dataclass(frozen=True, slots=True)
class Hit:
    memory_type: MemoryType
    predicate: str
    object: str
    polarity: Polarity
    intensity: float
    persona_ok: bool = False


def rule(
    pattern: str,
    memory_type: MemoryType,
    predicate: str,
    *,
    negated: bool = False,
    when: str = ANY,
    extra: tuple[tuple[str, str], ...] = (),
    persona_ok: bool = False,
    flags: int = 0,
) -> Rule:
    return Rule(
        re.compile(pattern, flags), memory_type, predicate, negated, when, extra, persona_ok
    )


def _applies(when: str, explicit: bool, time: TimeRef | None, answering: bool) -> bool:
    tense = time.tense if time else None
    checks = {
        ANY: True,
        EXPLICIT: explicit,
        FUTURE_ONLY: tense == FUTURE,
        NOT_FUTURE: tense != FUTURE,
        DATED_PAST: time is not None and time.start is not None and tense in {PAST, PRESENT},
        STATED: explicit or not answering or (time is not None and time.start is not None),
    }
    return checks[when]


def match_rules(
    rules: Sequence[Rule],
    text: str,
    explicit: bool,
    time: TimeRef | None,
    answering: bool = False,
) -> list[Hit]:
    """The hits of the first rule that matches ``text`` and applies in this context.

    ``answering``: the turn replies to the assistant's question.
    """
    for candidate in rules:
        if not _applies(candidate.when, explicit, time, answering):
            continue
        match = candidate.pattern.search(text)
        if match is None:
            continue
        groups = match.groupdict()
        negated = candidate.negated != bool(groups.get("neg"))
        polarity = Polarity.NEGATED if negated else Polarity.AFFIRMED
        intensity = 0.1 if groups.get("int") else 0.0
        hits = [
            Hit(
                candidate.memory_type,
                predicate,
                groups[group] or "",
                polarity,
                intensity,
                candidate.persona_ok,
            )
            for group, predicate in (("obj", candidate.predicate), *candidate.extra)
            if groups.get(group)
        ]
        if hits:
            return hits
    return []
