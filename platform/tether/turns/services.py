"""Accepting turns: validate, authorise from the cached card, mask, claim in Redis,
queue for durability. Postgres is touched only when Redis or the broker is away."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.enums import PrivacyMode
from tenancy.graph.tombstones import is_erased
from tenancy.ids import RelationshipScope
from tenancy.limits.quotas import Quotas
from tenancy.limits.values import LimitName
from tenancy.relationships.directory import RelationshipCard, RelationshipDirectory
from tether.core.database_errors import DATABASE_ERRORS
from tether.core.ids import TenantId, new_id
from tether.core.instruments import count_ingest
from tether.core.pagination import decode_cursor, next_cursor
from tether.core.settings import Settings
from tether.core.tasks import QueueUnavailable, TaskQueue
from tether.core.telemetry import traced
from tether.privacy.filter import PrivacyFilter, mask_texts
from tether.privacy.tenant_filters import TenantFilters
from tether.turns.claims import TurnClaims
from tether.turns.errors import IngestUnavailable
from tether.turns.flags import FlagRepository, decide
from tether.turns.pending import PendingTurn
from tether.turns.repositories import ChatSessionRepository, TurnRepository, activity_of
from tether.turns.schemas import (
    StoredTurn,
    StoredTurnPage,
    TurnBatch,
    TurnBatchResult,
    TurnResult,
)
from tether.turns.validation import validate_batch

log = logging.getLogger(__name__)

PERSIST_TASK = "turns.persist"
TURNS_PER_DAY = LimitName.TURNS_PER_DAY


def persist_args(scope: RelationshipScope, turns: Sequence[PendingTurn]) -> list[object]:
    return [str(scope.tenant_id), str(scope.relationship_id), [t.to_wire() for t in turns]]


async def store_turns(
    session: AsyncSession, scope: RelationshipScope, turns: Sequence[PendingTurn]
) -> list[PendingTurn]:
    """Make turns durable (the worker's job, and the API's when the queue is away):
    insert what is new, count it into its sessions. Returns the turns inserted: none
    for a relationship whose user was erased (a message that arrived after the erasure
    writes nothing).

    Each turn is stored with its memory flag decided (its capture's, else its
    session's, persona's or tenant's); where the tenant keeps no turns captured with
    memory off, those are not stored at all."""
    if await is_erased(session, scope):
        log.info("turns for erased relationship %s dropped", scope.relationship_id)
        return []
    turns = await _with_memory_flags(session, scope, turns)
    inserted = await TurnRepository(session, scope).insert(turns)
    await ChatSessionRepository(session, scope).record(activity_of(inserted))
    return inserted


async def _with_memory_flags(
    session: AsyncSession, scope: RelationshipScope, turns: Sequence[PendingTurn]
) -> list[PendingTurn]:
    flags = FlagRepository(session, scope)
    decided = {
        sid: decide(await flags.layers(sid)) for sid in sorted({t.session_id for t in turns})
    }
    kept = []
    for turn in turns:
        session_flags = decided[turn.session_id]
        memory = (
            session_flags.memory_enabled if turn.memory_enabled is None else turn.memory_enabled
        )
        if memory or session_flags.keep_turns_without_memory:
            kept.append(replace(turn, memory_enabled=memory))
    return kept


class IngestService:
    def __init__(
        self,
        session: AsyncSession,
        directory: RelationshipDirectory,
        claims: TurnClaims,
        tasks: TaskQueue,
        filters: TenantFilters,
        settings: Settings,
        quotas: Quotas,
    ) -> None:
        self._session = session
        self._directory = directory
        self._claims = claims
        self._tasks = tasks
        self._filters = filters
        self._settings = settings
        self._quotas = quotas

    @traced("ingest")
    async def ingest(self, relationship_id: uuid.UUID, batch: TurnBatch) -> TurnBatchResult:
        now = datetime.now(UTC)
        validate_batch(batch, self._settings.ingest, now)
        card = await self._directory.open(relationship_id)
        degraded = ["redis"] if self._directory.redis_degraded else []
        if card.privacy_mode == PrivacyMode.OFF:
            dropped = [TurnResult(i, "dropped", None, []) for i in range(len(batch.turns))]
            count_ingest((r.status for r in dropped), degraded)
            return TurnBatchResult(dropped, stored=False, degraded=degraded)
        # Duplicates and a failed request give their share of the day's quota back.
        tenant = TenantId(card.tenant_id)
        async with self._quotas.hold(tenant, TURNS_PER_DAY, len(batch.turns)) as held:
            privacy = await self._filters.for_tenant(self._session, card.tenant_id)
            pending = await self._prepare(batch, privacy, now)
            originals = await self._claim(card, pending, degraded)
            accepted = [
                t for t, original in zip(pending, originals, strict=True) if original is None
            ]
            held.settle(len(accepted))
            if accepted:
                await self._make_durable(card, accepted, originals, pending, degraded)
        results = [
            TurnResult(
                i,
                "accepted" if original is None else "duplicate",
                turn.id if original is None else original,
                list(turn.masked) if original is None else [],
            )
            for i, (turn, original) in enumerate(zip(pending, originals, strict=True))
        ]
        count_ingest((r.status for r in results), degraded)
        return TurnBatchResult(results, stored=True, degraded=degraded)

    async def _prepare(
        self, batch: TurnBatch, privacy: PrivacyFilter, now: datetime
    ) -> list[PendingTurn]:
        pending = []
        masks = await mask_texts(privacy, [turn.text for turn in batch.turns])
        for turn, masked in zip(batch.turns, masks, strict=True):
            pending.append(
                PendingTurn(
                    id=new_id(),
                    session_id=turn.session_id,
                    role=turn.role,
                    text=masked.text,
                    at=(turn.at or now).astimezone(UTC),
                    masked=masked.found,
                    idempotency_key=turn.idempotency_key,
                    memory_enabled=turn.memory_enabled,
                )
            )
        return pending

    @traced("ingest.claim")
    async def _claim(
        self, card: RelationshipCard, pending: list[PendingTurn], degraded: list[str]
    ) -> list[uuid.UUID | None]:
        if "redis" not in degraded:
            try:
                return await self._claims.claim(card.scope, pending)
            except RedisError as exc:
                log.warning("dedup unavailable, turns go straight to Postgres: %s", exc)
                degraded.append("redis")
        return [None] * len(pending)  # no dedup window without Redis; idempotency keys hold

    @traced("ingest.queue")
    async def _make_durable(
        self,
        card: RelationshipCard,
        accepted: list[PendingTurn],
        originals: list[uuid.UUID | None],
        pending: list[PendingTurn],
        degraded: list[str],
    ) -> None:
        if "redis" not in degraded:
            try:
                await self._tasks.send(PERSIST_TASK, persist_args(card.scope, accepted))
                return
            except QueueUnavailable as exc:
                log.warning("queue unavailable, storing turns synchronously: %s", exc)
                degraded.append("queue")
        try:
            inserted = {t.id for t in await store_turns(self._session, card.scope, accepted)}
        except DATABASE_ERRORS as exc:
            await self._release(card, accepted, degraded)
            raise IngestUnavailable("retry the same batch; it was not stored") from exc
        await self._resolve_idempotent(card, inserted, originals, pending)

    async def _resolve_idempotent(
        self,
        card: RelationshipCard,
        inserted: set[uuid.UUID],
        originals: list[uuid.UUID | None],
        pending: list[PendingTurn],
    ) -> None:
        """Turns the synchronous insert skipped repeat an idempotency key already stored:
        answer them as duplicates of the stored turn."""
        skipped = {
            t.idempotency_key: i
            for i, t in enumerate(pending)
            if originals[i] is None and t.id not in inserted and t.idempotency_key
        }
        stored = await TurnRepository(self._session, card.scope).ids_for_idempotency_keys(
            list(skipped)
        )
        for key, index in skipped.items():
            originals[index] = stored.get(key, pending[index].id)

    async def _release(
        self, card: RelationshipCard, accepted: list[PendingTurn], degraded: list[str]
    ) -> None:
        if "redis" in degraded:
            return
        try:
            await self._claims.release(card.scope, accepted)
        except RedisError as exc:  # a retry within the dedup window may now be refused
            log.error("could not release dedup claims of an unstored batch: %s", exc)

    async def page(
        self, relationship_id: uuid.UUID, session_id: str | None, cursor: str | None, limit: int
    ) -> StoredTurnPage:
        card = await self._directory.open(relationship_id)
        rows = await TurnRepository(self._session, card.scope).page(
            session_id, decode_cursor(cursor), limit
        )
        items = [StoredTurn(r.id, r.session_id, r.role, r.text, r.at, list(r.masked)) for r in rows]
        return StoredTurnPage(items, next_cursor(rows, limit))
