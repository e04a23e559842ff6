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
from tenancy.audit.access import AccessLog
from tenancy.ids import RelationshipScope
from tenancy.relationships.directory import RelationshipCard, RelationshipDirectory
from tenancy.resolve.schemas import PersonaRef, ResolveRequest, UserRef
from tenancy.resolve.services import ResolveService
from tenancy.settings.schemas import ContextTenantSettings, TenantSettingsDocument
from tether.context import pieces, template
from tether.context.budget import Piece, fit
from tether.context.errors import ContextTargetInvalid
from tether.context.explain import Assembled
from tether.context.schemas import (
    ChatMessage,
    ContextItem,
    ContextRequest,
    ContextResponse,
    SectionBudget,
)
from tether.core.errors import Forbidden
from tether.core.settings import ContextSettings, Settings
from tether.core.telemetry import traced
from tether.knowledge.engine import KnowledgeResult
from tether.personas.services import PersonaProfileReader
from tether.profiles.services import ConsentedProfile
from tether.recall.services import Recall, Recalled, may_see_private
from tether.recap.schemas import Recap
from tether.turns.claims import WorkingMemoryEntry
from tether.turns.flags import Flags, Layers, decide
from tether.turns.working_memory import WorkingMemory

log = logging.getLogger(__name__)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


# The card, the request and the knowledge query's deadline in milliseconds.
KnowledgeLookup = Callable[[RelationshipCard, ContextRequest, int], Awaitable[KnowledgeResult]]
TenantSettingsLookup = Callable[[], Awaitable[TenantSettingsDocument]]
RecapLookup = Callable[[RelationshipScope, str | None], Awaitable[Recap]]
FlagLookup = Callable[[RelationshipScope, str | None], Awaitable[Layers]]


def section_caps(budgets: ContextSettings, tenant: ContextTenantSettings) -> dict[str, int]:
    """Each section's token cap: the tenant's where it set one, else the deployment's."""
    own = tenant.section_tokens

    def pick(mine: int | None, default: int) -> int:
        return default if mine is None else mine

    return {
        "last_time": pick(own.last_time, budgets.last_time_tokens),
        "rules": pick(own.rules, budgets.rules_tokens),
        "profile": pick(own.profile, budgets.profile_tokens),
        "memory": pick(own.memory, budgets.memory_tokens),
        "knowledge": pick(own.knowledge, budgets.knowledge_tokens),
        "recent": pick(own.recent, budgets.recent_turns_tokens),
    }


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
        recap: RecapLookup | None = None,
        flags: FlagLookup | None = None,
        access: AccessLog | None = None,
        tenant_settings: TenantSettingsLookup | None = None,
    ) -> None:
        self._tenant_settings = tenant_settings
        self._flags = flags
        self._recap = recap
        self._access = access
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

    async def _decide_flags(self, card: RelationshipCard, request: ContextRequest) -> Flags:
        """The request's flags; only what it leaves out is looked up (one statement)."""
        memory, knowledge = request.memory_enabled, request.knowledge_enabled
        if (memory is None or knowledge is None) and self._flags is not None:
            return decide(await self._flags(card.scope, request.session_id), memory, knowledge)
        layers = Layers(None, None, None, None, True, False, True)
        return decide(layers, memory, knowledge)

    async def build(self, request: ContextRequest) -> ContextResponse:
        return (await self.assemble(request)).response

    @traced("context.build")
    async def assemble(self, request: ContextRequest, *, dry_run: bool = False) -> Assembled:
        """The context, with what went into it (the console's playground explains it).
        A dry run builds the same context without reinforcing the memories it recalls."""
        started = time.perf_counter()
        timings: dict[str, float] = {}
        card = await self._relationship(request)
        timings["resolve"] = _ms(started)
        degraded: list[str] = ["redis"] if self._directory.redis_degraded else []
        budgets = self._settings.context
        # The tenant's own settings: from the per-process cache (no query per request).
        tenant = (
            TenantSettingsDocument()
            if self._tenant_settings is None
            else await self._tenant_settings()
        )
        caps = section_caps(budgets, tenant.context)
        flags = await self._decide_flags(card, request)
        profile = await self._profiles.current(card.creator_persona_id)
        shared = await self._global_profile.for_context(card.global_user_id, card.id)
        if self._global_profile.redis_degraded and "redis" not in degraded:
            degraded.append("redis")
        timings["profile"] = _ms(started)
        recall_task = None
        if flags.memory_enabled:
            recall_task = self._recall.recall(
                card.scope,
                request.query,
                budgets.memory_candidates,
                layers=await self._directory.inherited_layers(card),
                include_private=may_see_private(self._enforcer, self._principal),
                reinforce=not dry_run,
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
        if flags.knowledge_enabled:
            deadline = tenant.knowledge.query_timeout_ms
            found = await self._knowledge(
                card,
                request,
                self._settings.knowledge.query_timeout_ms if deadline is None else deadline,
            )
            knowledge = pieces.knowledge_pieces(found)
            degraded.extend(d for d in found.degraded if d not in degraded)
            timings["knowledge"] = _ms(started)
        candidates: dict[str, list[Piece]] = {
            "rules": [
                Piece("rules", "rules", template.RULES, template.RULES, None, "always included")
            ],
            "profile": pieces.profile_pieces(profile, caps["profile"])
            + pieces.shared_pieces(shared),
            "memory": pieces.memory_pieces(recalled),
            "recent": pieces.recent_pieces(recent),
            "knowledge": knowledge,
        }
        if request.last_time and flags.memory_enabled and self._recap is not None:
            recap = await self._recap(card.scope, request.session_id)
            candidates["last_time"] = pieces.last_time_pieces(recap)
            timings["last_time"] = _ms(started)
        max_tokens = (
            request.max_tokens or tenant.context.default_max_tokens or budgets.default_max_tokens
        )
        fitted = fit(candidates, caps, max_tokens)
        chosen = dict(fitted.chosen)
        chosen["recent"] = sorted(chosen["recent"], key=lambda p: p.id or uuid.UUID(int=0))
        context = template.render({name: [p.line for p in items] for name, items in chosen.items()})
        items = [
            ContextItem(p.section, p.kind, p.id, p.text, fitted.costs[id(p)], p.score, p.reason)
            for name in ("rules", "profile", "last_time", "memory", "recent", "knowledge")
            for p in chosen.get(name, [])
        ]
        budget = {
            name: SectionBudget(fitted.limits[name], fitted.used[name], fitted.dropped[name])
            for name in fitted.limits
        }
        if self._access is not None:  # what went into the prompt (decision 0042)
            self._access.note(
                self._principal,
                "playground" if dry_run else "context",
                card.id,
                card.global_user_id,
                [p.id for p in chosen["memory"] if p.id is not None],
            )
        timings["total"] = _ms(started)
        response = ContextResponse(
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
        return Assembled(response, recalled, candidates, caps, fitted)
