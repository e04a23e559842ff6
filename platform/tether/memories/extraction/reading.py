"""One clause read by the rules: its subject, time reference and hits."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from tether.memories.enums import MemoryType
from tether.memories.extraction import rules_en, rules_zh
from tether.memories.extraction.rules import Hit, match_rules
from tether.memories.extraction.subjects import Subject, parse_en, parse_zh
from tether.memories.extraction.timewords import FORMER, HABITUAL, TimeRef, find_time

_ONE_OFF = frozenset({MemoryType.EVENT, MemoryType.COMMITMENT})


@dataclass(frozen=True, slots=True)
class Reading:
    subject: Subject | None
    time: TimeRef | None
    hits: list[Hit] = field(default_factory=list)
    object_first: bool = False  # "科幻片是我的最爱": the content keeps the clause's order


@dataclass(frozen=True, slots=True)
class Context:
    """What earlier clauses of the session tell about this one."""

    zh: bool
    at: datetime
    topic: Subject | None = None  # the previous clause's subject (Chinese topic chains)
    last_relation: Subject | None = None  # who 他/她/he/she refer to
    greeting: bool = False  # the turn opened with "hi": "I'm Dan" is a name
    answering: bool = False  # the turn replies to a question of the assistant


def read_request(text: str, ctx: Context) -> Reading | None:
    """A polite request ("能不能…吗", "could you…?") read by the instruction rules only."""
    time, body = find_time(text, ctx.at, ctx.zh)
    hits = match_rules((rules_zh if ctx.zh else rules_en).INSTRUCTIONS, body, True, time)
    return Reading(Subject("user", body, explicit=True), time, hits) if hits else None


def read_clause(clause: str, ctx: Context) -> Reading | None:
    """``None`` when the clause is about the past ("used to", 以前) or someone else."""
    time, body = find_time(clause, ctx.at, ctx.zh)
    if time is not None and time.tense == FORMER:
        return None
    table = rules_zh if ctx.zh else rules_en
    user = Subject("user", body, explicit=True)
    if hits := match_rules(table.INSTRUCTIONS, body, True, time):
        return Reading(user, time, hits)
    if hits := match_rules(table.OBJECT_FIRST, body, True, time):
        return Reading(user, time, hits, object_first=True)
    if ctx.zh:
        subject = parse_zh(body, ctx.topic, ctx.last_relation)
    else:
        subject = parse_en(body, ctx.last_relation)
    if subject is None:
        return None
    hits = match_rules(table.RULES, subject.rest, subject.explicit, time, ctx.answering)
    if not hits and ctx.greeting and not ctx.zh and subject.label == "user":
        hits = match_rules([rules_en.GREETING_NAME], subject.rest, True, time)
    if time is not None and time.tense == HABITUAL:
        hits = [hit for hit in hits if hit.memory_type not in _ONE_OFF]  # a routine, not a date
    return Reading(subject, time, hits)
