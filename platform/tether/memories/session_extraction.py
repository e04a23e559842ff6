"""From an ended session to memories: rule extraction (plus the optional LLM step),
forget requests, consolidation against the active memories, a session summary, and a
log entry for every decision. Runs in a worker, one transaction per session."""

from __future__ import annotations

import logging
import re
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
from tether.core.ids import TenantId, new_id
from tether.core.instruments import CONSOLIDATIONS
from tether.core.settings import Settings
from tether.memories.consolidation import ExistingMemory, consolidate, matches_forget
from tether.memories.enums import MemoryLayer, MemoryType, Outcome, Polarity, Provenance
from tether.memories.extraction import Candidate, TurnText, extract, summarize_session
from tether.memories.extraction.llm_step import refine
from tether.memories.extraction.normalize import object_key
from tether.memories.llm_budget import LlmGate
from tether.memories.repositories import ConsolidationLogRepository, MemoryRepository
from tether.memories.writer import Invalidate, MemoryWriter, NewMemory, layer_for
from tether.providers.base import ChatProvider, EmbeddingProvider
from tether.recall.models import Memory
from tether.turns.flags import FlagRepository, decide
from tether.turns.repositories import ChatSessionRepository, TurnRepository

log = logging.getLogger(__name__)

ACTOR = "system:extraction"


@dataclass(slots=True)
class ExtractionReport:
    status: str  # "extracted" | "skipped" | "not_ready" | "raw_only" | "memory_off"
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
        provenance=Provenance(memory.provenance),
    )


# The extraction preview compares candidates with the same view of stored memories.
existing_memory = _existing


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
        "provenance": candidate.provenance.value,
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
        llm_gate: LlmGate | None = None,
    ) -> None:
        self._chat = chat
        self._llm_gate = llm_gate
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
        if not decide(
            await FlagRepository(self._session, self._scope).layers(session_id)
        ).memory_enabled:
            await sessions.mark_extracted(session_id, now)
            return ExtractionReport("memory_off")  # decision 0051
        rows = await TurnRepository(self._session, self._scope).of_session(session_id)
        # Turns captured with memory off are the user's to say, not ours to remember.
        turns = [
            TurnText(t.id, t.role, t.text, t.at) for t in rows if t.memory_enabled is not False
        ]
        self._turn_at = {t.id: t.at for t in turns}
        extraction = extract(turns)
        if self._chat is not None and turns and await self._llm_allowed():
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
                        provenance=Provenance.RULE_INFERRED.value,
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

    async def _llm_allowed(self) -> bool:
        """The tenant's extraction settings: the step on, and within its daily budget."""
        if self._llm_gate is None:
            return True
        return await self._llm_gate.allow(TenantId(self._scope.tenant_id))

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
            result_id = await self._merge(target, candidate, session_id, decision.reason)
        elif decision.outcome == Outcome.CONFLICT and target is not None:
            result_id = await self._hold(target, candidate, session_id, decision.reason)
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
                await self._dismiss_held(target.id, new.id)
                await self._retract_from_summary(target, new.id)
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

    async def _merge(
        self, target: Memory, candidate: Candidate, session_id: str, reason: str
    ) -> uuid.UUID:
        """A confirmation: more sources and confidence; stronger evidence is kept, but a
        manual memory stays manual."""
        confirmations = target.confirmations + 1
        memory_settings = self._settings.memory
        provenance = Provenance(target.provenance)
        if not provenance.manual and candidate.provenance.evidence > provenance.evidence:
            provenance = candidate.provenance
        merged = await self._writer.change(
            target,
            "merged",
            f"confirmed again in session {session_id}: {reason}",
            source_turn_ids=list(
                dict.fromkeys([*target.source_turn_ids, *candidate.source_turn_ids])
            ),
            confidence=min(1.0, max(target.confidence, candidate.confidence) + 0.1),
            importance=max(target.importance, candidate.importance),
            confirmations=confirmations,
            provenance=provenance.value,
            layer=layer_for(
                confirmations,
                memory_settings.promote_episodic_at,
                memory_settings.promote_semantic_at,
            ).value,
        )
        return merged.id

    async def _hold(
        self, target: Memory, candidate: Candidate, session_id: str, reason: str
    ) -> uuid.UUID:
        """Keep the weaker newer claim inactive, as an open conflict with ``target``; the
        same claim held again is merged into the one already held."""
        for held in await self._memories.held_against(target.id):
            if (held.polarity, object_key(held.object)) == (
                candidate.polarity.value,
                object_key(candidate.object),
            ) and held.predicate == candidate.predicate:
                return await self._merge(held, candidate, session_id, reason)
        new = self._new(candidate, session_id)
        new.is_active, new.conflicts_with = False, target.id
        await self._writer.create(
            [new], reason=f"held from session {session_id}: conflicts with {target.id}: {reason}"
        )
        return new.id

    async def _dismiss_held(self, superseded: uuid.UUID, by: uuid.UUID) -> None:
        """Open conflicts with a memory that a newer one replaced are moot."""
        for held in await self._memories.held_against(superseded):
            await self._writer.change(
                held,
                "dismissed",
                f"the memory it conflicted with was superseded by {by}",
                superseded_by=by,
            )

    async def _retract_from_summary(self, superseded: Memory, by: uuid.UUID) -> None:
        """A summary written before summaries were topics (decision 0055) may state the
        superseded memory word for word: that statement leaves it."""
        if not superseded.source_session_id:
            return
        summaries = await self._memories.page(
            None,
            5,
            Memory.memory_type == MemoryType.SUMMARY.value,
            Memory.source_session_id == superseded.source_session_id,
            Memory.is_active.is_(True),
        )
        for summary in summaries:
            parts = re.split(r"；|; ", summary.content)
            kept = [part for part in parts if part != superseded.content]
            if len(kept) == len(parts):
                continue
            separator = "；" if "；" in summary.content else "; "
            why = f"'{superseded.content}' was superseded by {by}"
            if kept:
                await self._writer.change(summary, "edited", why, content=separator.join(kept))
            else:
                await self._writer.change(summary, "deactivated", why, is_active=False)

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
            provenance=candidate.provenance.value,
        )
