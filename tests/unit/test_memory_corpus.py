"""The corpus quality gate: extract + consolidate session by session against an
in-memory store, then compare the active memories with what a careful human would keep
(tests/fixtures/memory_corpus/README.md describes the format and the scoring)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tether.memories.consolidation import ExistingMemory, consolidate, matches_forget
from tether.memories.enums import MemoryType, Outcome, Polarity
from tether.memories.extraction import Candidate, TurnText, extract

CORPUS = Path(__file__).parents[1] / "fixtures" / "memory_corpus"
MIN_PRECISION, MIN_RECALL = 0.85, 0.75


@dataclass
class Row:
    memory: ExistingMemory
    expires_at: datetime | None
    active: bool = True


def load() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(CORPUS.glob("*.json")):
        for conversation in json.loads(path.read_text(encoding="utf-8")):
            yield path.stem, conversation


def session_turns(conversation_id: str, index: int, session: dict[str, Any]) -> list[TurnText]:
    start = datetime.fromisoformat(session["at"].replace("Z", "+00:00"))
    return [
        TurnText(
            id=uuid.uuid5(uuid.NAMESPACE_URL, f"{conversation_id}/{index}/{position}"),
            role=role,
            text=text,
            at=start + timedelta(minutes=position),
        )
        for position, (role, text) in enumerate(session["turns"])
    ]


def stored(candidate: Candidate, at: datetime) -> Row:
    memory = ExistingMemory(
        id=uuid.uuid4(),
        memory_type=candidate.memory_type,
        subject=candidate.subject,
        predicate=candidate.predicate,
        object=candidate.object,
        polarity=candidate.polarity,
        content=candidate.content,
        confidence=candidate.confidence,
        exclusive=candidate.exclusive,
        valid_from=candidate.valid_from,
        created_at=at,
        source_turn_ids=candidate.source_turn_ids,
    )
    return Row(memory, candidate.expires_at)


def apply_session(rows: list[Row], turns: list[TurnText]) -> None:
    """What the write path does: forget first, then consolidate each candidate."""
    extraction = extract(turns)
    for request in extraction.forget:
        for row in rows:
            if row.active and matches_forget(request, row.memory):
                row.active = False
    for candidate in extraction.candidates:
        active = [row.memory for row in rows if row.active]
        decision = consolidate(candidate, active)
        if decision.outcome in {Outcome.UPDATE, Outcome.CONTRADICTION, Outcome.DUPLICATE}:
            target = next(row for row in rows if row.memory.id == decision.target_id)
            if decision.outcome is Outcome.DUPLICATE:
                continue
            target.active = False
        rows.append(stored(candidate, turns[-1].at))


def run_conversation(conversation: dict[str, Any]) -> tuple[list[Row], datetime]:
    rows: list[Row] = []
    turns: list[TurnText] = []
    for index, session in enumerate(conversation["sessions"]):
        turns = session_turns(conversation["id"], index, session)
        apply_session(rows, turns)
    now = turns[-1].at
    alive = [r for r in rows if r.active and (r.expires_at is None or r.expires_at > now)]
    return alive, now


def satisfies(expected: dict[str, Any], row: Row) -> bool:
    memory = row.memory
    predicates = expected["predicate"]
    predicates = [predicates] if isinstance(predicates, str) else predicates
    text = f"{memory.object} {memory.content}".lower()
    checks = [
        memory.memory_type.value == expected["type"],
        memory.subject == expected.get("subject", "user"),
        "*" in predicates or memory.predicate in predicates,
        memory.polarity.value == expected.get("polarity", "affirmed"),
        any(word.lower() in text for word in expected["any"]),
    ]
    if "expires" in expected:
        checks.append(
            row.expires_at is not None and row.expires_at.date().isoformat() == expected["expires"]
        )
    return all(checks)


def best_matching(expected: list[dict[str, Any]], rows: list[Row]) -> dict[int, int]:
    """Maximum one-to-one matching, expected index → row index (augmenting paths)."""
    owner: dict[int, int] = {}

    def assign(e: int, seen: set[int]) -> bool:
        for r, row in enumerate(rows):
            if r in seen or not satisfies(expected[e], row):
                continue
            seen.add(r)
            if r not in owner or assign(owner[r], seen):
                owner[r] = e
                return True
        return False

    for e in range(len(expected)):
        assign(e, set())
    return {e: r for r, e in owner.items()}


@dataclass
class Score:
    kept: int = 0  # active memories at the end
    expected: int = 0
    matched: int = 0

    def add(self, other: Score) -> Score:
        return Score(
            self.kept + other.kept, self.expected + other.expected, self.matched + other.matched
        )

    @property
    def precision(self) -> float:
        return self.matched / self.kept if self.kept else 1.0

    @property
    def recall(self) -> float:
        return self.matched / self.expected if self.expected else 1.0


def score_corpus() -> tuple[dict[str, Score], list[str]]:
    scores: dict[str, Score] = {}
    misses: list[str] = []
    for language, conversation in load():
        rows, _ = run_conversation(conversation)
        expected = conversation["expected"]
        matching = best_matching(expected, rows)
        score = Score(len(rows), len(expected), len(matching))
        for group in {language, language.split("_")[0]}:  # "zh_holdout" also counts as "zh"
            scores[group] = scores.get(group, Score()).add(score)
        hit_rows = set(matching.values())
        misses += [
            f"  missed {conversation['id']}: {expected[e]}"
            for e in range(len(expected))
            if e not in matching
        ]
        misses += [
            f"  extra  {conversation['id']}: {r.memory.memory_type.value} {r.memory.subject} "
            f"{r.memory.predicate} {r.memory.polarity.value} '{r.memory.object}' "
            f"| {r.memory.content}"
            for i, r in enumerate(rows)
            if i not in hit_rows
        ]
    return scores, misses


def test_corpus_has_enough_conversations_in_both_languages() -> None:
    counts: dict[str, int] = {}
    for language, conversation in load():
        counts[language.split("_")[0]] = counts.get(language.split("_")[0], 0) + 1
        assert 2 <= len(conversation["sessions"]) <= 4, conversation["id"]
    assert counts.get("zh", 0) >= 20
    assert counts.get("en", 0) >= 20


def test_corpus_precision_and_recall(capsys: pytest.CaptureFixture[str]) -> None:
    scores, misses = score_corpus()
    total = Score()
    for name, score in scores.items():
        total = total.add(score) if "_" not in name else total
    lines = [
        f"{name:>7}: precision {s.precision:.3f} ({s.matched}/{s.kept})  recall {s.recall:.3f} "
        f"({s.matched}/{s.expected})"
        for name, s in [*sorted(scores.items()), ("overall", total)]
    ]
    with capsys.disabled():
        print("\nmemory corpus\n" + "\n".join(lines + misses))  # noqa: T201 - this report is the output
    assert total.precision >= MIN_PRECISION
    assert total.recall >= MIN_RECALL


def test_matching_is_one_to_one() -> None:
    coffee = Candidate(
        memory_type=MemoryType.PREFERENCE,
        subject="user",
        predicate="likes",
        object="coffee",
        polarity=Polarity.AFFIRMED,
        content="The user loves coffee",
        importance=0.5,
        confidence=0.8,
        exclusive=False,
        valid_from=None,
        expires_at=None,
        source_turn_ids=(),
    )
    row = stored(coffee, datetime(2024, 1, 1, tzinfo=UTC))
    wanted = {"type": "preference", "predicate": "likes", "any": ["coffee"]}
    assert best_matching([wanted, dict(wanted)], [row]) == {0: 0}
