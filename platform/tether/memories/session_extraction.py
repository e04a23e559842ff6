"""From an ended session to memories: rule extraction (plus the optional LLM step),
forget requests, consolidation against the active memories, a session summary, and a
log entry for every decision. Runs in a worker, one transaction per session."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.enums import PrivacyMode
from tenancy.graph.tombstones import is_erased
from tenancy.ids import RelationshipScope
from tenancy.models import Relationship
from tether.core.ids import new_id
from tether.core.instruments import CONSOLIDATIONS
from tether.core.settings import Settings
from tether.memories.consolidation import ExistingMemory, consolidate, matches_forget
from tether.memories.enums import MemoryLayer, MemoryType, Outcome, Polarity
from tether.memories.extraction import Candidate, TurnText, extract, summarize_session
from tether.memories.extraction.llm_step import refine
from tether.memories.repositories import ConsolidationLogRepository, MemoryRepository
from tether.memories.writer import Invalidate, MemoryWriter, NewMemory, layer_for
from tether.providers.base import ChatProvider, EmbeddingProvider
from tether.recall.models import Memory
from tether.turns.repositories import ChatSessionRepository, TurnRepository

log = logging.getLogger(__name__)

ACTOR = "system:extraction"


@dataclass(slots=True)
class ExtractionReport:
    status: str  # "extracted" | "skipped" | "not_ready" | "raw_only"
    outcomes: dict[str, int] = field(default_factory=dict)
    forgotten: int = 0
    summary: bool = False


def _existing(memory: Memory) -> ExistingMemory:
    return ExistingMemory(
        id=memory.id,
        memory_type=MemoryType(memory.memory_type),
        subject=memory.subject,
        predicate=memory.predicate,
        object=memory.object,
        polarity=Polarity(memory.polarity),
        content=memory.content,
        confidence=memory.confidence,
        exclusive=memory.exclusive,
        valid_from=memory.valid_from,
        created_at=memory.created_at,
        source_turn_ids=tuple(memory.source_turn_ids),
    )


def _candidate_json(candidate: Candidate) -> dict[str, Any]:
    return {
        "memory_type": candidate.memory_type.value,
        "subject": candidate.subject,
        "predicate": candidate.predicate,
        "object": candidate.object,
        "polarity": candidate.polarity.value,
        "content": candidate.content,
        "importance": candidate.importance,
        "confidence": candidate.confidence,
        "expires_at": candidate.expires_at.isoformat() if candidate.expires_at else None,
        "source_turn_ids": [str(t) for t in candidate.source_turn_ids],
    }


class SessionExtraction:
    def __init__(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        embedder: EmbeddingProvider,
        invalidate: Invalidate,
        settings: Settings,
        chat: ChatProvider | None = None,
    ) -> None:
        self._chat = chat
        self._session = session
        self._scope = scope
        self._settings = settings
        self._writer = MemoryWriter(session, scope, embedder, invalidate, ACTOR)
        self._memories = MemoryRepository(session, scope)
        self._log = ConsolidationLogRepository(session, scope)
        self._turn_at: dict[uuid.UUID, datetime] = {}

    async def run(self, session_id: str) -> ExtractionReport:
        sessions = ChatSessionRepository(self._session, self._scope)
        if await is_erased(self._session, self._scope):
            return ExtractionReport("skipped")  # its user was erased: write nothing
        if await sessions.claim_for_extraction(session_id) is None:
            return ExtractionReport("skipped")  # not ended, already done, or being done
        now = datetime.now(UTC)
        if await self._privacy_mode() != PrivacyMode.NORMAL:
            await sessions.mark_extracted(session_id, now)
            return ExtractionReport("raw_only")
        rows = await TurnRepository(self._session, self._scope).of_session(session_id)
        turns = [TurnText(t.id, t.role, t.text, t.at) for t in rows]
        self._turn_at = {t.id: t.at for t in turns}
        extraction = extract(turns)
        if self._chat is not None and turns:
            # One call per session; any failure leaves the rules' extraction as it is.
            extraction = await refine(self._chat, turns, extraction)
        report = ExtractionReport("extracted")
        active = {m.id: m for m in await self._memories.active(now)}
        for request in extraction.forget:
            for memory in [m for m in active.values() if matches_forget(request, _existing(m))]:
                await self._writer.change(
                    memory,
                    "deactivated",
                    f"the user asked to forget it (turn {request.source_turn_id})",
                    is_active=False,
                )
                del active[memory.id]
                report.forgotten += 1
        for candidate in extraction.candidates:
            outcome = await self._consolidate(candidate, active, session_id)
            report.outcomes[outcome.value] = report.outcomes.get(outcome.value, 0) + 1
            CONSOLIDATIONS.add(1, {"outcome": outcome.value})
        summary = summarize_session(turns, self._settings.memory.summary_max_chars)
        if summary:
            at = max(t.at for t in turns)
            await self._writer.create(
                [
                    NewMemory(
                        memory_type=MemoryType.SUMMARY.value,
                        layer=MemoryLayer.EPISODIC.value,
                        content=summary,
                        importance=0.3,
                        confidence=0.8,
                        occurred_at=at,
                        origin="extracted",
                        subject="session",
                        predicate="summary",
                        source_turn_ids=[t.id for t in turns if t.role == "user"],
                        source_session_id=session_id,
                    )
                ],
                reason=f"summary of session {session_id}",
            )
            report.summary = True
        await sessions.mark_extracted(session_id, now)
        return report

    async def _privacy_mode(self) -> PrivacyMode:
        statement = select(Relationship.privacy_mode).where(
            Relationship.tenant_id == self._scope.tenant_id,
            Relationship.id == self._scope.relationship_id,
        )
        return PrivacyMode((await self._session.execute(statement)).scalar_one())

    async def _consolidate(
        self, candidate: Candidate, active: dict[uuid.UUID, Memory], session_id: str
    ) -> Outcome:
        decision = consolidate(candidate, [_existing(m) for m in active.values()])
        target = active.get(decision.target_id) if decision.target_id else None
        result_id: uuid.UUID | None = None
        if decision.outcome == Outcome.DUPLICATE and target is not None:
            confirmations = target.confirmations + 1
            memory_settings = self._settings.memory
            merged = await self._writer.change(
                target,
                "merged",
                f"confirmed again in session {session_id}: {decision.reason}",
                source_turn_ids=list(
                    dict.fromkeys([*target.source_turn_ids, *candidate.source_turn_ids])
                ),
                confidence=min(1.0, max(target.confidence, candidate.confidence) + 0.1),
                importance=max(target.importance, candidate.importance),
                confirmations=confirmations,
                layer=layer_for(
                    confirmations,
                    memory_settings.promote_episodic_at,
                    memory_settings.promote_semantic_at,
                ).value,
            )
            result_id = merged.id
        else:
            new = self._new(candidate, session_id)
            await self._writer.create([new], reason=f"extracted from session {session_id}")
            result_id = new.id
            if target is not None and decision.outcome in (Outcome.UPDATE, Outcome.CONTRADICTION):
                await self._writer.change(
                    target,
                    "superseded",
                    f"{decision.outcome.value}: {decision.reason}",
                    is_active=False,
                    superseded_by=new.id,
                )
                del active[target.id]
            created = await self._memories.get(new.id)
            if created is not None:
                active[created.id] = created
        await self._log.add(
            id=new_id(),
            session_id=session_id,
            outcome=decision.outcome.value,
            candidate=_candidate_json(candidate),
            target_memory_id=decision.target_id,
            result_memory_id=result_id,
            reason=decision.reason,
        )
        log.info("consolidation %s: %s", decision.outcome.value, decision.reason)
        return decision.outcome

    def _new(self, candidate: Candidate, session_id: str) -> NewMemory:
        return NewMemory(
            memory_type=candidate.memory_type.value,
            layer=MemoryLayer.WORKING.value,
            content=candidate.content,
            importance=candidate.importance,
            confidence=candidate.confidence,
            occurred_at=max(
                (self._turn_at[t] for t in candidate.source_turn_ids if t in self._turn_at),
                default=datetime.now(UTC),
            ),
            origin="extracted",
            subject=candidate.subject,
            predicate=candidate.predicate,
            object=candidate.object,
            polarity=candidate.polarity.value,
            exclusive=candidate.exclusive,
            valid_from=candidate.valid_from,
            expires_at=candidate.expires_at,
            source_turn_ids=candidate.source_turn_ids,
            source_session_id=session_id,
        )
