"""Consolidation, one table per outcome in Chinese and English, plus forget matching."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from tether.memories.consolidation import Decision, ExistingMemory, consolidate, matches_forget
from tether.memories.enums import MemoryType, Outcome, Polarity, Provenance
from tether.memories.extraction import Candidate, ForgetRequest

A, N = Polarity.AFFIRMED, Polarity.NEGATED
T = MemoryType
EXCLUSIVE = {"name", "age", "lives_in", "works_at", "occupation", "call_me"}
NOW = datetime(2024, 6, 1, tzinfo=UTC)


def candidate(
    predicate: str,
    obj: str,
    polarity: Polarity = A,
    kind: MemoryType = T.PREFERENCE,
    subject: str = "user",
) -> Candidate:
    return Candidate(
        memory_type=kind,
        subject=subject,
        predicate=predicate,
        object=obj,
        polarity=polarity,
        content=f"{subject} {predicate} {obj}",
        importance=0.5,
        confidence=0.85,
        exclusive=predicate in EXCLUSIVE,
        valid_from=NOW,
        expires_at=None,
        source_turn_ids=(uuid.uuid4(),),
    )


def memory(
    predicate: str,
    obj: str,
    polarity: Polarity = A,
    kind: MemoryType = T.PREFERENCE,
    subject: str = "user",
    age_days: int = 7,
    content: str | None = None,
) -> ExistingMemory:
    return ExistingMemory(
        id=uuid.uuid4(),
        memory_type=kind,
        subject=subject,
        predicate=predicate,
        object=obj,
        polarity=polarity,
        content=content or f"{subject} {predicate} {obj}",
        confidence=0.85,
        exclusive=predicate in EXCLUSIVE,
        valid_from=NOW - timedelta(days=age_days),
        created_at=NOW - timedelta(days=age_days),
        source_turn_ids=(uuid.uuid4(),),
    )


def decide(new: Candidate, *old: ExistingMemory) -> Decision:
    return consolidate(new, list(old))


DUPLICATES = [
    (candidate("likes", "辣的"), memory("likes", "吃辣")),
    (candidate("likes", "辣"), memory("likes", "辣的东西")),
    (candidate("likes", "spicy"), memory("likes", "spicy food")),
    (candidate("likes", "coffee"), memory("likes", "coffee")),
    (candidate("likes", "辣", N), memory("likes", "吃辣", N)),
    (
        candidate("lives_in", "北京", kind=T.PROFILE),
        memory("lives_in", "北京朝阳区", kind=T.PROFILE),
    ),
]


@pytest.mark.parametrize(("new", "old"), DUPLICATES)
def test_duplicate_merges_into_the_existing_memory(new, old):
    decision = decide(new, old)
    assert decision.outcome is Outcome.DUPLICATE
    assert decision.target_id == old.id
    assert decision.reason


UPDATES = [
    (candidate("likes", "冰美式咖啡"), memory("likes", "咖啡"), "more specific"),
    (candidate("likes", "绿茶"), memory("likes", "茶"), "more specific"),
    (candidate("likes", "iced coffee"), memory("likes", "coffee"), "more specific"),
    (
        candidate("lives_in", "北京朝阳区", kind=T.PROFILE),
        memory("lives_in", "北京", kind=T.PROFILE),
        "more specific",
    ),
    (
        candidate("feels", "开心", kind=T.EMOTION),
        memory("feels", "焦虑", kind=T.EMOTION),
        "newer state",
    ),
    (
        candidate("feels", "happy", kind=T.EMOTION),
        memory("feels", "stressed", kind=T.EMOTION),
        "newer state",
    ),
    (
        candidate("promise", "send you the photos from japan", kind=T.COMMITMENT),
        memory("promise", "send you the trip photos", kind=T.COMMITMENT),
        "restated",
    ),
    (
        candidate("did", "雅思", kind=T.EVENT),
        memory("plans", "考雅思", kind=T.COMMITMENT),
        "fulfilled",
    ),
    (
        candidate("did", "finished the ielts", kind=T.EVENT),
        memory("plans", "taking the ielts", kind=T.COMMITMENT),
        "fulfilled",
    ),
]


@pytest.mark.parametrize(("new", "old", "why"), UPDATES)
def test_update_supersedes_with_a_refined_or_newer_value(new, old, why):
    decision = decide(new, old)
    assert decision.outcome is Outcome.UPDATE
    assert decision.target_id == old.id
    assert why in decision.reason


CONTRADICTIONS = [
    (candidate("likes", "辣", N), memory("likes", "辣", A), "now negated"),
    (candidate("likes", "spicy food", N), memory("likes", "spicy", A), "now negated"),
    (candidate("likes", "王者", N), memory("likes", "王者荣耀", A), "opposite polarity"),
    (candidate("likes", "coffee", A), memory("likes", "coffee", N), "now affirmed"),
    (
        candidate("lives_in", "珠海", kind=T.PROFILE),
        memory("lives_in", "深圳", kind=T.PROFILE),
        "single-valued",
    ),
    (
        candidate("lives_in", "austin", kind=T.PROFILE),
        memory("lives_in", "denver", kind=T.PROFILE),
        "single-valued",
    ),
    (
        candidate("call_me", "珍珍", kind=T.INSTRUCTION),
        memory("call_me", "阿珍", kind=T.INSTRUCTION),
        "single-valued",
    ),
    (candidate("age", "42", kind=T.PROFILE), memory("age", "41", kind=T.PROFILE), "single-valued"),
]


@pytest.mark.parametrize(("new", "old", "why"), CONTRADICTIONS)
def test_contradiction_supersedes_the_older_statement(new, old, why):
    decision = decide(new, old)
    assert decision.outcome is Outcome.CONTRADICTION
    assert decision.target_id == old.id
    assert why in decision.reason


COMPATIBLES = [
    (candidate("likes", "咖啡"), memory("likes", "茶")),
    (candidate("likes", "coffee"), memory("likes", "tea")),
    (candidate("likes", "冰美式"), memory("likes", "咖啡")),
    (candidate("likes", "coffee", N), memory("likes", "tea", A)),
    (candidate("name", "林晓雨", kind=T.PROFILE), memory("age", "26", kind=T.PROFILE)),
    (
        candidate("promise", "bring you a coffee", kind=T.COMMITMENT),
        memory("promise", "send you the photos from the trip", kind=T.COMMITMENT),
    ),
]


@pytest.mark.parametrize(("new", "old"), COMPATIBLES)
def test_compatible_memories_coexist(new, old):
    decision = decide(new, old)
    assert decision.outcome is Outcome.COMPATIBLE
    assert decision.target_id is None
    assert decision.reason


UNRELATED = [
    (candidate("likes", "猫"), memory("likes", "猫", subject="user.mother", kind=T.FACT)),
    (candidate("likes", "cats"), memory("lives_in", "boston", kind=T.PROFILE)),
    (candidate("feels", "sad", kind=T.EMOTION), memory("name", "alice", kind=T.PROFILE)),
]


@pytest.mark.parametrize(("new", "old"), UNRELATED)
def test_unrelated_memories_are_added(new, old):
    decision = decide(new, old)
    assert decision.outcome is Outcome.UNRELATED
    assert decision.target_id is None


def test_nothing_active_is_unrelated():
    assert decide(candidate("likes", "辣")).outcome is Outcome.UNRELATED


def test_summary_is_never_merged():
    summary = candidate("summary", "session", kind=T.SUMMARY)
    assert (
        decide(summary, memory("summary", "session", kind=T.SUMMARY)).outcome is Outcome.UNRELATED
    )


def test_the_closest_memory_is_chosen_among_many():
    tea, spicy = memory("likes", "tea"), memory("likes", "spicy food")
    decision = decide(candidate("likes", "spicy", N), tea, spicy)
    assert (decision.outcome, decision.target_id) == (Outcome.CONTRADICTION, spicy.id)


def test_on_a_tie_the_newest_memory_is_the_target():
    older, newer = (
        memory("lives_in", "深圳", kind=T.PROFILE, age_days=30),
        memory("lives_in", "广州", kind=T.PROFILE, age_days=3),
    )
    decision = decide(candidate("lives_in", "珠海", kind=T.PROFILE), older, newer)
    assert decision.target_id == newer.id


def test_forget_matches_by_the_turn_it_refers_to():
    old = memory("likes", "奶茶")
    request = ForgetRequest(terms=(), source_turn_id=uuid.uuid4(), refers_to=old.source_turn_ids)
    assert matches_forget(request, old)


@pytest.mark.parametrize(
    ("terms", "old", "expected"),
    [
        (("hiking",), memory("likes", "hiking"), True),
        (("hikes",), memory("likes", "hiking"), False),
        (("ex",), memory("name", "jordan", kind=T.FACT, subject="user.ex"), True),
        (("ex",), memory("plans", "next trip", kind=T.COMMITMENT), False),
        (
            ("前女友",),
            memory("name", "小美", kind=T.FACT, subject="user.ex", content="用户的前女友叫小美"),
            True,
        ),
        (("奶茶",), memory("likes", "奶茶"), True),
        (("奶茶",), memory("likes", "咖啡"), False),
        ((), memory("likes", "咖啡"), False),
    ],
)
def test_forget_matches_by_terms(terms, old, expected):
    request = ForgetRequest(terms=terms, source_turn_id=uuid.uuid4())
    assert matches_forget(request, old) is expected


# --- admission: evidence strength (decision 0053) -------------------------------------------

P = Provenance


@pytest.mark.parametrize(
    ("newer", "older", "outcome"),
    [
        (P.USER_STATED, P.USER_STATED, Outcome.CONTRADICTION),
        (P.USER_STATED, P.RULE_INFERRED, Outcome.CONTRADICTION),
        (P.LLM_INFERRED, P.RULE_INFERRED, Outcome.CONTRADICTION),
        (P.RULE_INFERRED, P.USER_STATED, Outcome.CONFLICT),
        (P.LLM_INFERRED, P.USER_STATED, Outcome.CONFLICT),
        (P.USER_STATED, P.STAFF_ENTERED, Outcome.CONFLICT),
        (P.USER_STATED, P.USER_ENTERED, Outcome.CONFLICT),
    ],
)
def test_a_newer_memory_replaces_an_older_one_only_on_evidence_as_strong(
    newer: Provenance, older: Provenance, outcome: Outcome
) -> None:
    old = replace(memory("likes", "辣"), provenance=older)
    decision = consolidate(replace(candidate("likes", "辣", N), provenance=newer), [old])
    assert decision.outcome is outcome
    assert decision.target_id == old.id
    if outcome is Outcome.CONFLICT:
        assert f"{newer.value} does not replace {older.value}" in decision.reason


def test_an_inference_still_confirms_or_adds_to_what_was_stated() -> None:
    stated = memory("likes", "spicy food")
    inferred = replace(candidate("likes", "spicy food"), provenance=P.RULE_INFERRED)
    assert consolidate(inferred, [stated]).outcome is Outcome.DUPLICATE
    other = replace(candidate("likes", "tea"), provenance=P.LLM_INFERRED)
    assert consolidate(other, [stated]).outcome is Outcome.COMPATIBLE
