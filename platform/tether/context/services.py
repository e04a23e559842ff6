"""POST /v1/context: resolve → persona profile + recalled memories + recent turns
(+ knowledge) → one budgeted, data-quoted context for one system message."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable

from redis.exceptions import RedisError

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.principal import Principal
from tenancy.ids import RelationshipScope
from tenancy.relationships.directory import RelationshipCard, RelationshipDirectory
from tenancy.resolve.schemas import PersonaRef, ResolveRequest, UserRef
from tenancy.resolve.services import ResolveService
from tether.context import template
from tether.context.budget import Piece, fit
from tether.context.errors import ContextTargetInvalid
from tether.context.schemas import (
    ChatMessage,
    ContextItem,
    ContextRequest,
    ContextResponse,
    SectionBudget,
)
from tether.context.tokens import truncate_to_tokens
from tether.core.errors import Forbidden
from tether.core.settings import Settings
from tether.core.telemetry import traced
from tether.knowledge.engine import KnowledgeResult
from tether.personas.schemas import PersonaProfileRead
from tether.personas.services import PersonaProfileReader
from tether.profiles.models import GlobalProfileField
from tether.profiles.services import ConsentedProfile
from tether.recall.services import Recall, Recalled, may_see_private
from tether.turns.claims import WorkingMemoryEntry
from tether.turns.working_memory import WorkingMemory

log = logging.getLogger(__name__)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


def _profile_pieces(profile: PersonaProfileRead, cap: int) -> list[Piece]:
    fields = [
        ("tone", "Tone", profile.tone),
        ("taboos", "Never", "; ".join(profile.taboos)),
        ("background", "Background", profile.background),
        ("scripts", "Phrases you use", "; ".join(profile.scripts)),
        ("notes", "Notes", profile.notes),
    ]
    pieces = []
    for kind, label, value in fields:
        if value.strip():
            text = truncate_to_tokens(value.strip(), max(cap - 20, 0))
            line = f"- {label}: {text}"
            pieces.append(Piece("profile", kind, line, text, None, "persona profile"))
    return pieces


def _shared_pieces(fields: list[GlobalProfileField]) -> list[Piece]:
    pieces = []
    for f in fields:
        text = f"{f.field}: {f.value}"
        line = f"- About the user (shared with their consent): {template.quoted(text)}"
        reason = f"global profile, consent scope {f.scope}"
        pieces.append(Piece("profile", "user_profile", line, text, None, reason))
    return pieces


KnowledgeLookup = Callable[[RelationshipCard, ContextRequest], Awaitable[KnowledgeResult]]


def _knowledge_pieces(found: KnowledgeResult) -> list[Piece]:
    return [
        Piece(
            "knowledge",
            "chunk",
            template.knowledge_line(f"KB-{n}", hit.source, hit.text),
            hit.text,
            hit.score,
            f"knowledge base passage ({hit.source})",
            hit.id,
        )
        for n, hit in enumerate(found.hits, start=1)
    ]


def _memory_pieces(recalled: Recalled) -> list[Piece]:
    pieces = []
    seen: set[uuid.UUID] = set()
    for record, explanation in recalled.hits:
        seen.add(record.id)
        line = template.memory_line(
            record.occurred_at.date().isoformat(), record.memory_type, record.content
        )
        pieces.append(
            Piece(
                "memory",
                record.memory_type,
                line,
                record.content,
                explanation.final_score,
                "recalled for the query",
                record.id,
            )
        )
    summary = recalled.latest_summary
    if summary is not None and summary.id not in seen:
        line = template.memory_line(
            summary.occurred_at.date().isoformat(), "summary", summary.content
        )
        pieces.append(
            Piece(
                "memory",
                "summary",
                line,
                summary.content,
                None,
                "latest session summary",
                summary.id,
            )
        )
    return pieces


def _recent_pieces(entries: list[WorkingMemoryEntry]) -> list[Piece]:
    # Newest first so the budget keeps the latest turns.
    return [
        Piece(
            "recent",
            e.role,
            template.turn_line(e.role, e.at[:16].replace("T", " "), e.text),
            e.text,
            None,
            "recent turn of an open session",
            e.id,
        )
        for e in reversed(entries)
    ]


def with_context(messages: list[ChatMessage] | None, context: str, query: str) -> list[ChatMessage]:
    """The caller's messages with the context as one system message right after the
    first system message (never inside a user message)."""
    note = ChatMessage("system", context)
    if not messages:
        return [note, ChatMessage("user", query)]
    first_system = next((i for i, m in enumerate(messages) if m.role == "system"), None)
    at = 0 if first_system is None else first_system + 1
    return [*messages[:at], note, *messages[at:]]


class ContextService:
    def __init__(
        self,
        directory: RelationshipDirectory,
        resolver: ResolveService,
        profiles: PersonaProfileReader,
        recall: Recall,
        working_memory: WorkingMemory,
        principal: Principal,
        enforcer: PolicyEnforcer,
        settings: Settings,
        global_profile: ConsentedProfile,
        knowledge: KnowledgeLookup,
    ) -> None:
        self._knowledge = knowledge
        self._global_profile = global_profile
        self._directory = directory
        self._resolver = resolver
        self._profiles = profiles
        self._recall = recall
        self._working_memory = working_memory
        self._principal = principal
        self._enforcer = enforcer
        self._settings = settings

    async def _relationship(self, request: ContextRequest) -> RelationshipCard:
        if request.relationship_id is not None:
            if request.user is not None or request.persona is not None:
                raise ContextTargetInvalid("send relationship_id or user + persona, not both")
            return await self._directory.open(request.relationship_id)
        if request.user is None or request.persona is None:
            raise ContextTargetInvalid(
                "send relationship_id, or user and persona as for /v1/resolve"
            )
        if not self._enforcer.decide(self._principal.role.value, "identity", "write").allowed:
            # Resolving may create the relationship: only identity writers may do that.
            raise Forbidden("this key may not resolve relationships; send relationship_id")
        ids, _ = await self._resolver.resolve(
            ResolveRequest(
                UserRef(request.user.external_id),
                PersonaRef(request.persona.external_id, request.persona.creator_external_id),
                request.facet,
            )
        )
        return await self._directory.open(ids.relationship_id)

    async def _recent(
        self, scope: RelationshipScope, count: int, degraded: list[str]
    ) -> list[WorkingMemoryEntry]:
        try:
            return await self._working_memory.recent(scope, count)
        except RedisError as exc:
            log.warning("working memory unavailable: %s", exc)
            if "redis" not in degraded:
                degraded.append("redis")
            return []

    @traced("context.build")
    async def build(self, request: ContextRequest) -> ContextResponse:
        started = time.perf_counter()
        timings: dict[str, float] = {}
        card = await self._relationship(request)
        timings["resolve"] = _ms(started)
        degraded: list[str] = ["redis"] if self._directory.redis_degraded else []
        budgets = self._settings.context
        profile = await self._profiles.current(card.creator_persona_id)
        shared = await self._global_profile.for_context(card.global_user_id, card.id)
        if self._global_profile.redis_degraded and "redis" not in degraded:
            degraded.append("redis")
        timings["profile"] = _ms(started)
        recall_task = None
        if request.memory_enabled:
            recall_task = self._recall.recall(
                card.scope,
                request.query,
                budgets.memory_candidates,
                include_private=may_see_private(self._enforcer, self._principal),
            )
        recent_task = self._recent(card.scope, request.recent_turns, degraded)
        if recall_task is not None:
            recalled, recent = await asyncio.gather(recall_task, recent_task)
            for item in recalled.degraded:
                if item not in degraded:
                    degraded.append(item)
            timings.update({f"recall_{k}": v for k, v in recalled.timings_ms.items()})
        else:
            recalled, recent = Recalled([]), await recent_task
        timings["gather"] = _ms(started)
        knowledge: list[Piece] = []
        if request.knowledge_enabled:
            found = await self._knowledge(card, request)
            knowledge = _knowledge_pieces(found)
            degraded.extend(d for d in found.degraded if d not in degraded)
            timings["knowledge"] = _ms(started)
        pieces = {
            "rules": [
                Piece("rules", "rules", template.RULES, template.RULES, None, "always included")
            ],
            "profile": _profile_pieces(profile, budgets.profile_tokens) + _shared_pieces(shared),
            "memory": _memory_pieces(recalled),
            "recent": _recent_pieces(recent),
            "knowledge": knowledge,
        }
        caps = {
            "rules": budgets.rules_tokens,
            "profile": budgets.profile_tokens,
            "memory": budgets.memory_tokens,
            "knowledge": budgets.knowledge_tokens,
            "recent": budgets.recent_turns_tokens,
        }
        fitted = fit(pieces, caps, request.max_tokens or budgets.default_max_tokens)
        chosen = dict(fitted.chosen)
        chosen["recent"] = sorted(chosen["recent"], key=lambda p: p.id or uuid.UUID(int=0))
        context = template.render({name: [p.line for p in items] for name, items in chosen.items()})
        items = [
            ContextItem(p.section, p.kind, p.id, p.text, fitted.costs[id(p)], p.score, p.reason)
            for name in ("rules", "profile", "memory", "recent", "knowledge")
            for p in chosen[name]
        ]
        budget = {
            name: SectionBudget(fitted.limits[name], fitted.used[name], fitted.dropped[name])
            for name in fitted.limits
        }
        timings["total"] = _ms(started)
        return ContextResponse(
            relationship_id=card.id,
            context=context,
            messages=with_context(request.messages, context, request.query),
            items=items,
            # The sections' own estimates (headings included): no third pass over the text.
            token_estimate=sum(fitted.used.values()),
            budget=budget,
            degraded=degraded,
            timings_ms=timings,
        )
