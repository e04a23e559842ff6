"""From a rule hit to a ``Candidate``: object checks, normalization, content,
importance, confidence and validity dates."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime

from tether.memories.enums import MemoryType, Polarity, Provenance
from tether.memories.extraction.normalize import (
    clean_object,
    is_place,
    normalize_object,
    parse_number,
)
from tether.memories.extraction.reading import Reading
from tether.memories.extraction.render import render, subject_words, swap_pronouns
from tether.memories.extraction.rules import Hit
from tether.memories.extraction.timewords import FUTURE, TimeRef
from tether.memories.extraction.types import Candidate

EXCLUSIVE = frozenset(
    {
        "name",
        "age",
        "birthday",
        "lives_in",
        "from",
        "works_at",
        "studies_at",
        "occupation",
        "call_me",
    }
)
_IMPORTANCE = {
    MemoryType.PROFILE: 0.7,
    MemoryType.PREFERENCE: 0.5,
    MemoryType.FACT: 0.6,
    MemoryType.EVENT: 0.4,
    MemoryType.COMMITMENT: 0.6,
    MemoryType.EMOTION: 0.4,
    MemoryType.INSTRUCTION: 0.8,
    MemoryType.SUMMARY: 0.3,
}
_KEY_PREDICATES = {"name": 0.85, "allergic_to": 0.9, "call_me": 0.85, "avoid_topic": 0.85}
_ZH_REJECT = re.compile(
    r"^(?:这|那|它|他|她)|什么|啥|哪|谁|根本|因为|所以|但是|可是|如果|觉得|知道|怎么"
)
_EN_REJECT = re.compile(
    r"^(?:it|that|this|these|those|them|him|her|everything|anything|something|so|too|one)\b"
    r"|\b(?:what|which|who|whatever)\b",
    re.IGNORECASE,
)
_ZH_PERSONA = re.compile(r"你")
_EN_PERSONA = re.compile(r"\byou(?:r|rs|rself)?\b", re.IGNORECASE)
_ZH_EMOTIONS = {"高兴": "开心", "伤心": "难过", "不高兴": "不开心"}
_EN_EMOTIONS = {
    "stressed out": "stressed",
    "burnt out": "burned out",
    "blue": "down",
    "low": "down",
}


@dataclass(frozen=True, slots=True)
class Source:
    """Where a reading came from and how much to trust it."""

    turn_ids: tuple[uuid.UUID, ...]
    at: datetime
    zh: bool
    remember: bool = False  # "记住…" / "remember that…"
    confirmed: bool = False  # the user said yes to the assistant's question


def _acceptable(raw: str, cleaned: str, hit: Hit, zh: bool) -> bool:
    if not cleaned or (zh and len(cleaned) > 14) or (not zh and len(cleaned.split()) > 7):
        return False
    if _ZH_REJECT.search(raw) if zh else _EN_REJECT.search(raw.strip()):
        return False
    persona = _ZH_PERSONA if zh else _EN_PERSONA
    return hit.persona_ok or not persona.search(cleaned)


def _object(hit: Hit, zh: bool) -> str | None:
    cleaned = clean_object(hit.object, zh)
    if not _acceptable(hit.object, cleaned, hit, zh):
        return None
    if hit.predicate == "age":
        number = parse_number(cleaned)
        return None if number is None or not 0 < number < 130 else str(number)
    if zh and hit.predicate == "from" and not is_place(cleaned):
        return None  # 我是好人 / 我是急性子的人: "是…人" names a place only for a place
    normalized = normalize_object(cleaned, zh)
    if hit.predicate == "feels":
        if zh and normalized.startswith("压力"):
            return "压力大"
        return (_ZH_EMOTIONS if zh else _EN_EMOTIONS).get(normalized, normalized)
    return normalized


def _dates(
    kind: MemoryType, time: TimeRef | None, at: datetime
) -> tuple[datetime, datetime | None]:
    if time is None or time.start is None:
        return at, None
    expires = time.end if kind is MemoryType.COMMITMENT and time.tense == FUTURE else None
    return time.start, expires


def _content(hit: Hit, reading: Reading, obj: str, source: Source) -> str:
    subject = reading.subject
    label, relation = (subject.label, subject.relation_text) if subject else ("user", "")
    time = reading.time
    if hit.memory_type is MemoryType.EMOTION and (time is None or time.start is None):
        time = TimeRef("present", source.at, None, "day")  # a feeling is dated by the turn
    if reading.object_first:
        phrase = subject.rest if subject else ""
        text = (
            phrase.replace("我", "用户")
            if source.zh
            else swap_pronouns(phrase).replace("their", "the user's")
        )
        return text[:1].upper() + text[1:]
    shown = clean_object(hit.object, source.zh) if hit.predicate in _TEMPLATED else obj
    phrase = subject.rest if subject else ""
    words = subject_words(label, relation, source.zh)
    return render(words, hit.predicate, shown, phrase, time, source.zh, source.at)


_TEMPLATED = EXCLUSIVE | {"allergic_to", "avoid_topic", "reply_style", "note"}


def build(hit: Hit, reading: Reading, source: Source) -> Candidate | None:
    """The candidate for one hit, or ``None`` when its object is no real object."""
    obj = _object(hit, source.zh)
    if obj is None or reading.subject is None:
        return None
    subject = reading.subject.label
    kind = hit.memory_type
    if subject != "user" and kind is not MemoryType.INSTRUCTION:
        kind = MemoryType.FACT  # what we know about the user's mother is a fact, not her profile
    importance = _KEY_PREDICATES.get(hit.predicate, _IMPORTANCE[kind]) + hit.intensity
    confidence = 0.65 if source.confirmed else 0.85 if reading.subject.explicit else 0.7
    if source.remember:
        importance, confidence = max(importance + 0.1, 0.9), 0.95
    valid_from, expires_at = _dates(kind, reading.time, source.at)
    return Candidate(
        memory_type=kind,
        subject=subject,
        predicate=hit.predicate,
        object=obj,
        polarity=hit.polarity,
        content=_content(hit, reading, obj, source),
        importance=round(min(importance, 1.0), 2),
        confidence=confidence,
        exclusive=hit.predicate in EXCLUSIVE,
        valid_from=valid_from,
        expires_at=expires_at,
        source_turn_ids=source.turn_ids,
        # A "yes" to the assistant's question: the words are the assistant's.
        provenance=Provenance.RULE_INFERRED if source.confirmed else Provenance.USER_STATED,
    )


def note(text: str, source: Source) -> Candidate | None:
    """A remember request no rule understood is kept as a plain note."""
    cleaned = clean_object(text, source.zh)
    if len(cleaned) < 2:
        return None
    words = "用户让记住：" if source.zh else "The user asked to remember: "
    return Candidate(
        memory_type=MemoryType.FACT,
        subject="user",
        predicate="note",
        object=normalize_object(cleaned, source.zh),
        polarity=Polarity.AFFIRMED,
        content=words + cleaned,
        importance=0.9,
        confidence=0.9,
        exclusive=False,
        valid_from=source.at,
        expires_at=None,
        source_turn_ids=source.turn_ids,
    )
