"""Consolidation: what one extracted candidate means for the memories already active.

duplicate      same subject, predicate, object (after normalization) and polarity
update         same subject, predicate and polarity; a refined object (咖啡 → 冰美式咖啡),
               a renewed promise, or a changed state (feels anxious → feels happy)
contradiction  same subject and predicate with the opposite polarity on the same thing, or
               a different value of a single-valued predicate (lives_in 深圳 → 珠海)
compatible     same subject and predicate or memory type, and both can hold (likes tea,
               likes coffee)
unrelated      anything else

The candidate is the newer statement, so it wins where the two clash, but only when its
evidence is at least as strong (``admits``: stated beats inferred, and the pipeline never
replaces a manual memory); otherwise the outcome is ``conflict`` and the older memory
stays (decision 0053).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from tether.memories.enums import MemoryType, Outcome, Polarity, Provenance, admits
from tether.memories.extraction.normalize import is_zh, object_key, term_matches, zh_core
from tether.memories.extraction.types import Candidate, ForgetRequest

# A later value of these replaces the earlier one even though both could be listed.
_STATE_PREDICATES = frozenset({"feels"})
# Promises and plans on overlapping things are one commitment restated.
_RESTATABLE = frozenset({"promise", "plans"})
_RANK = {
    Outcome.DUPLICATE: 0,
    Outcome.CONTRADICTION: 1,
    Outcome.UPDATE: 2,
    Outcome.COMPATIBLE: 3,
    Outcome.UNRELATED: 4,
}


@dataclass(frozen=True, slots=True)
class ExistingMemory:
    id: uuid.UUID
    memory_type: MemoryType
    subject: str
    predicate: str
    object: str
    polarity: Polarity
    content: str
    confidence: float
    exclusive: bool
    valid_from: datetime | None
    created_at: datetime
    source_turn_ids: tuple[uuid.UUID, ...] = ()
    provenance: Provenance = Provenance.USER_STATED


@dataclass(frozen=True, slots=True)
class Decision:
    outcome: Outcome
    candidate: Candidate
    target_id: uuid.UUID | None  # merged into or superseded; None for compatible/unrelated
    reason: str


def _relation(new_object: str, old_object: str) -> str:
    """same | refines | broader | overlaps | different.

    English compares sets of content words; Chinese compares core strings, so that 绿茶
    refines 茶 and 北京朝阳区 refines 北京, while 阿珍 and 珍珍 only overlap.
    """
    if is_zh(new_object) and is_zh(old_object):
        new_core, old_core = zh_core(new_object), zh_core(old_object)
        new, old = frozenset(new_core), frozenset(old_core)
        if new_core == old_core:
            return "same"
        if old_core and old_core in new_core:
            return "refines"
        if new_core and new_core in old_core:
            return "broader"
    else:
        new, old = object_key(new_object), object_key(old_object)
        if new == old:
            return "same"
        if old and old < new:
            return "refines"
        if new and new < old:
            return "broader"
    # Sharing one word of five is chance ("tell you about X" / "tell you Y"), not the thing.
    return (
        "overlaps" if new & old and len(new & old) * 2 >= min(len(new), len(old)) else "different"
    )


def _fulfils(candidate: Candidate, memory: ExistingMemory) -> bool:
    """A past event on the thing an active plan or promise was about ("考完雅思了" after
    "下个月要考雅思") is that plan carried out: the event replaces it."""
    return (
        candidate.memory_type is MemoryType.EVENT
        and memory.memory_type is MemoryType.COMMITMENT
        and candidate.polarity is memory.polarity
        and _relation(candidate.object, memory.object) != "different"
    )


def _judge(candidate: Candidate, memory: ExistingMemory) -> tuple[Outcome, str]:
    if candidate.subject != memory.subject:
        return Outcome.UNRELATED, "different subject"
    if _fulfils(candidate, memory):
        return Outcome.UPDATE, f"'{candidate.object}' done: the plan '{memory.object}' is fulfilled"
    if candidate.predicate != memory.predicate:
        if candidate.memory_type is memory.memory_type:
            return (
                Outcome.COMPATIBLE,
                f"both {candidate.memory_type.value} about {candidate.subject}",
            )
        return Outcome.UNRELATED, "different predicate and type"
    shown = f"{candidate.predicate} '{candidate.object}' vs '{memory.object}'"
    relation = _relation(candidate.object, memory.object)
    same_polarity = candidate.polarity is memory.polarity
    if relation == "same":
        if same_polarity:
            return Outcome.DUPLICATE, f"same {candidate.predicate} '{memory.object}' already known"
        return (
            Outcome.CONTRADICTION,
            f"{shown}: now {candidate.polarity.value}, was {memory.polarity.value}",
        )
    if not same_polarity:
        if relation in {"refines", "broader", "overlaps"}:
            return Outcome.CONTRADICTION, f"{shown}: opposite polarity on the same thing"
        return Outcome.COMPATIBLE, f"{shown}: opposite polarity on different things"
    if relation == "refines":
        return Outcome.UPDATE, f"{shown}: more specific than before"
    if relation == "broader":
        return Outcome.DUPLICATE, f"{shown}: already known more specifically"
    if candidate.exclusive or memory.exclusive:
        return Outcome.CONTRADICTION, f"{shown}: single-valued, the newer value wins"
    if candidate.predicate in _STATE_PREDICATES:
        return Outcome.UPDATE, f"{shown}: the newer state replaces the older"
    if candidate.predicate in _RESTATABLE and relation == "overlaps":
        return Outcome.UPDATE, f"{shown}: the same commitment restated"
    return Outcome.COMPATIBLE, f"{shown}: both can hold"


def consolidate(candidate: Candidate, active: Sequence[ExistingMemory]) -> Decision:
    """Decide against the most closely related active memory (the newest on ties)."""
    if candidate.memory_type is MemoryType.SUMMARY or not active:
        return Decision(Outcome.UNRELATED, candidate, None, "no related active memory")
    judged = [(_judge(candidate, memory), memory) for memory in active]
    (outcome, reason), memory = min(
        judged, key=lambda item: (_RANK[item[0][0]], -item[1].created_at.timestamp())
    )
    if outcome in {Outcome.COMPATIBLE, Outcome.UNRELATED}:
        return Decision(outcome, candidate, None, reason)
    if outcome in {Outcome.UPDATE, Outcome.CONTRADICTION} and not admits(
        candidate.provenance, memory.provenance
    ):
        weaker = f"{candidate.provenance.value} does not replace {memory.provenance.value}"
        return Decision(Outcome.CONFLICT, candidate, memory.id, f"{reason}; held: {weaker}")
    return Decision(outcome, candidate, memory.id, reason)


def matches_forget(request: ForgetRequest, memory: ExistingMemory) -> bool:
    """Does the forget request cover this memory? By the turn it came from, when the
    request names the previous statement, or by any of its terms."""
    if request.refers_to and set(request.refers_to) & set(memory.source_turn_ids):
        return True
    return any(
        term_matches(term, memory.subject, memory.object, memory.content) for term in request.terms
    )
