"""A tenant's re-embed run (decision 0079): every memory and knowledge chunk of the tenant
whose vector another model made gets one of the tenant's current model, in committed
batches, with the run's progress recorded after each. Resumable by construction: what a
batch committed carries the new model, so a run started again skips it.

Other processes apply the change within the settings cache's TTL, and until then may
still write vectors of the previous model; so a run ends with a last pass once the TTL
has passed since the change (those vectors are never compared meanwhile: recall reads
only the current model's). A batch writes only while its run still runs, holding it so
(a newer choice waits): a superseded run never writes behind its successor's scan."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.settings.cache import TenantSettingsCache
from tenancy.settings.models import ReembedRun
from tenancy.settings.reembed_runs import ReembedRunRepository
from tether.core.ids import TenantId
from tether.core.tenant_sessions import tenant_ids, tenant_transaction
from tether.knowledge.reembed import count_stale_chunks, reembed_chunks
from tether.memories.reindex import Progress, count_tenant, reindex_tenant
from tether.memories.writer import Invalidate
from tether.providers.base import EmbeddingProvider, ProviderError
from tether.recall.tenant_embedders import TenantEmbedders

log = logging.getLogger(__name__)
# A running run whose worker has not reported for this long is claimed again.
STALE_AFTER = timedelta(minutes=10)
# A run still pending this long after the change had no message: the beat starts it.
PENDING_AFTER = timedelta(minutes=1)


@dataclass(slots=True)
class _Counts:
    memories: Progress
    chunks_done: int
    chunks_total: int


class Superseded(Exception):
    """A newer choice replaced the run's: its worker stops."""


@dataclass(frozen=True, slots=True)
class ReembedJob:
    """Args:
    settings: the worker's settings cache (the run forgets the tenant's entry first).
    embedders: each tenant's embedding model.
    invalidate: what makes a relationship's hot partition stale.
    settle_seconds: how long other processes may apply the change (the settings TTL).
    """

    sessions: async_sessionmaker[AsyncSession]
    settings: TenantSettingsCache
    embedders: TenantEmbedders
    invalidate: Invalidate
    settle_seconds: float

    async def run(self, tenant_id: TenantId, run_id: uuid.UUID) -> str:
        """Run (or resume) the run; its final status, or ``skipped`` when another worker
        holds it or it is finished."""
        async with tenant_transaction(self.sessions, tenant_id) as session:
            run = await ReembedRunRepository(session, tenant_id).claim(run_id, STALE_AFTER)
        if run is None:
            return "skipped"
        self.settings.forget(tenant_id)  # the change is read now, not a TTL later
        embedder = await self.embedders.for_tenant(tenant_id)
        try:
            try:
                await self._passes(tenant_id, run, embedder)
            except ProviderError as exc:
                log.warning("re-embed run %s of tenant %s failed: %s", run_id, tenant_id, exc)
                await self._report(tenant_id, run_id, status="failed", error=str(exc)[:500])
                return "failed"
            now = datetime.now(UTC)
            await self._report(tenant_id, run_id, status="done", finished_at=now)
        except Superseded:
            return "superseded"
        return "done"

    async def _passes(
        self, tenant_id: TenantId, run: ReembedRun, embedder: EmbeddingProvider
    ) -> None:
        memories = await count_tenant(self.sessions, tenant_id, embedder)
        chunks = await count_stale_chunks(self.sessions, tenant_id, embedder.name)
        await self._report(
            tenant_id,
            run.id,
            model=embedder.name,
            dimension=embedder.dimension,
            memories_total=memories,
            chunks_total=chunks,
            memories_done=0,
            chunks_done=0,
        )
        counts = _Counts(Progress(0, memories, time.monotonic()), 0, chunks)
        await self._pass(tenant_id, run.id, embedder, counts)
        settled = run.created_at.timestamp() + self.settle_seconds
        wait = settled - datetime.now(UTC).timestamp()
        if wait > 0:  # vectors another process made with the previous model meanwhile
            await asyncio.sleep(wait)
            await self._pass(tenant_id, run.id, embedder, counts)

    async def _pass(
        self,
        tenant_id: TenantId,
        run_id: uuid.UUID,
        embedder: EmbeddingProvider,
        counts: _Counts,
    ) -> None:
        async def memories(current: Progress) -> None:
            current.total = max(current.done, current.total)
            values = {"memories_done": current.done, "memories_total": current.total}
            await self._report(tenant_id, run_id, **values)

        async def still_running(session: AsyncSession) -> None:
            if not await ReembedRunRepository(session, tenant_id).hold(run_id):
                raise Superseded(str(run_id))

        await reindex_tenant(
            self.sessions,
            tenant_id,
            embedder,
            self.invalidate,
            counts.memories,
            report=memories,
            guard=still_running,
        )
        start = counts.chunks_done

        async def chunks(done: int) -> None:
            counts.chunks_done = start + done
            counts.chunks_total = max(counts.chunks_done, counts.chunks_total)
            values = {"chunks_done": counts.chunks_done, "chunks_total": counts.chunks_total}
            await self._report(tenant_id, run_id, **values)

        await reembed_chunks(self.sessions, tenant_id, embedder, chunks, guard=still_running)

    async def _report(self, tenant_id: TenantId, run_id: uuid.UUID, **values: object) -> None:
        async with tenant_transaction(self.sessions, tenant_id) as session:
            running = await ReembedRunRepository(session, tenant_id).report(run_id, **values)
        if not running:
            raise Superseded(str(run_id))


async def resumable_runs(
    sessions: async_sessionmaker[AsyncSession], pending_for: timedelta, silent_for: timedelta
) -> list[tuple[TenantId, uuid.UUID]]:
    """Runs to (re)start: pending for longer than ``pending_for`` (a lost message, or a
    change made from the CLI, which sends none), failed or running without a report for
    longer than ``silent_for`` (a provider outage, a stopped worker). The beat runs them."""
    found: list[tuple[TenantId, uuid.UUID]] = []
    now = datetime.now(UTC)
    for tenant_id in await tenant_ids(sessions):
        async with tenant_transaction(sessions, tenant_id) as session:
            runs = await ReembedRunRepository(session, tenant_id).resumable(
                now - pending_for, now - silent_for
            )
        found.extend((tenant_id, run_id) for run_id in runs)
    return found
