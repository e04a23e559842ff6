"""The extraction preview: what the pipeline would extract from some turns and what
consolidation would decide against a relationship's active memories. It runs the same
rule extraction, forget matching and consolidation as the worker, on masked text, and
writes nothing: no turn, memory, version, log entry or counter."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.relationships.directory import RelationshipDirectory
from tether.core.settings import Settings
from tether.memories import preview_schemas as p
from tether.memories.consolidation import ExistingMemory, consolidate, matches_forget
from tether.memories.enums import Outcome
from tether.memories.errors import InvalidMemories
from tether.memories.extraction import Candidate, TurnText, extract, summarize_session
from tether.memories.repositories import MemoryRepository
from tether.memories.session_extraction import existing_memory
from tether.privacy.filter import mask_texts
from tether.privacy.tenant_filters import TenantFilters

_ACTIONS: dict[Outcome, p.PreviewAction] = {
    Outcome.DUPLICATE: "duplicate",
    Outcome.UPDATE: "update",
    Outcome.CONTRADICTION: "supersede",
    Outcome.COMPATIBLE: "insert",
    Outcome.UNRELATED: "insert",
    Outcome.CONFLICT: "hold",
}


def _check(request: p.ExtractPreviewRequest, now: datetime, skew: timedelta) -> None:
    errors: list[dict[str, str]] = []
    if not request.dry_run:
        errors.append({"field": "dry_run", "message": "only dry runs exist: send true or omit"})
    total = sum(len(t.text) for t in request.turns)
    if total > p.MAX_PREVIEW_TOTAL_CHARS:
        errors.append(
            {
                "field": "turns",
                "message": f"at most {p.MAX_PREVIEW_TOTAL_CHARS} characters in all (got {total})",
            }
        )
    for i, turn in enumerate(request.turns):
        if not turn.text.strip():
            errors.append({"field": f"turns[{i}].text", "message": "must not be empty"})
        if turn.at is not None and turn.at.tzinfo is None:
            errors.append({"field": f"turns[{i}].at", "message": "must carry a timezone offset"})
        elif turn.at is not None and turn.at > now + skew:
            errors.append({"field": f"turns[{i}].at", "message": "is in the future"})
    if errors:
        raise InvalidMemories(
            f"{len(errors)} problem(s); first: {errors[0]['field']}", errors=errors
        )


def _candidate(index: int, c: Candidate, turn_index: dict[uuid.UUID, int]) -> p.PreviewCandidate:
    return p.PreviewCandidate(
        index=index,
        memory_type=c.memory_type.value,
        subject=c.subject,
        predicate=c.predicate,
        object=c.object,
        polarity=c.polarity.value,
        content=c.content,
        importance=c.importance,
        confidence=c.confidence,
        expires_at=c.expires_at,
        source_turns=[turn_index[t] for t in c.source_turn_ids if t in turn_index],
    )


def _as_existing(c: Candidate, at: datetime) -> ExistingMemory:
    return ExistingMemory(
        id=uuid.uuid4(),
        memory_type=c.memory_type,
        subject=c.subject,
        predicate=c.predicate,
        object=c.object,
        polarity=c.polarity,
        content=c.content,
        confidence=c.confidence,
        exclusive=c.exclusive,
        valid_from=c.valid_from,
        created_at=at,
        source_turn_ids=c.source_turn_ids,
    )


class ExtractionPreview:
    def __init__(
        self,
        session: AsyncSession,
        directory: RelationshipDirectory,
        settings: Settings,
        privacy: TenantFilters,
    ) -> None:
        self._session = session
        self._directory = directory
        self._settings = settings
        self._privacy = privacy

    async def preview(self, request: p.ExtractPreviewRequest) -> p.ExtractPreview:
        """Extract and consolidate in memory, in the order the worker would."""
        now = datetime.now(UTC)
        _check(request, now, timedelta(seconds=self._settings.ingest.max_clock_skew_seconds))
        card = await self._directory.open(request.relationship_id)
        privacy = await self._privacy.for_tenant(self._session, card.tenant_id)
        masks = await mask_texts(privacy, [t.text for t in request.turns])
        turns = [
            TurnText(uuid.uuid4(), t.role, m.text, (t.at or now).astimezone(UTC))
            for t, m in zip(request.turns, masks, strict=True)
        ]
        turn_index = {t.id: i for i, t in enumerate(turns)}
        extraction = extract(turns)
        stored = await MemoryRepository(self._session, card.scope).active(now)
        active = {m.id: existing_memory(m) for m in stored}
        forget = []
        for request_ in extraction.forget:
            hit = [m.id for m in active.values() if matches_forget(request_, m)]
            for memory_id in hit:
                del active[memory_id]
            forget.append(
                p.PreviewForget(list(request_.terms), turn_index[request_.source_turn_id], hit)
            )
        candidates, decisions = self._consolidate(extraction.candidates, active, turns, turn_index)
        summary = summarize_session(turns, self._settings.memory.summary_max_chars)
        masked = sorted({kind for m in masks for kind in m.found})
        return p.ExtractPreview(
            card.id, True, candidates, decisions, forget, summary, masked, ["rules"]
        )

    def _consolidate(
        self,
        found: list[Candidate],
        active: dict[uuid.UUID, ExistingMemory],
        turns: list[TurnText],
        turn_index: dict[uuid.UUID, int],
    ) -> tuple[list[p.PreviewCandidate], list[p.PreviewDecision]]:
        at = {t.id: t.at for t in turns}
        from_candidate: dict[uuid.UUID, int] = {}  # simulated memories of earlier candidates
        candidates, decisions = [], []
        for index, candidate in enumerate(found):
            candidates.append(_candidate(index, candidate, turn_index))
            decision = consolidate(candidate, list(active.values()))
            target = decision.target_id
            if decision.outcome is Outcome.CONFLICT:
                pass  # held inactive beside the stronger memory: later candidates never see it
            elif decision.outcome is not Outcome.DUPLICATE or target is None:
                when = max((at[t] for t in candidate.source_turn_ids if t in at), default=None)
                new = _as_existing(candidate, when or datetime.now(UTC))
                if target is not None and decision.outcome in (
                    Outcome.UPDATE,
                    Outcome.CONTRADICTION,
                ):
                    active.pop(target, None)
                active[new.id] = new
                from_candidate[new.id] = index
            elif target in from_candidate:
                merged = active[target]
                active[target] = replace(
                    merged, source_turn_ids=(*merged.source_turn_ids, *candidate.source_turn_ids)
                )
            decisions.append(
                p.PreviewDecision(
                    candidate=index,
                    outcome=decision.outcome.value,
                    action=_ACTIONS[decision.outcome],
                    target_memory_id=None if target in from_candidate else target,
                    target_candidate=from_candidate.get(target) if target else None,
                    reason=decision.reason,
                )
            )
        return candidates, decisions
