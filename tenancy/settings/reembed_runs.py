"""Every SQL statement of re-embed runs (decision 0079), scoped to one tenant. A run is
claimed by one worker at a time: a claim is an UPDATE that only a pending run, or a
running one whose worker stopped reporting, satisfies."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.settings.models import ReembedRun
from tether.core.ids import TenantId

# The worker's task; the API names it without importing the worker.
REEMBED_TASK: Final = "memories.reembed_tenant"
# The beat's sweep of runs a lost message or a stopped worker left behind.
REEMBED_SWEEP_TASK: Final = "memories.resume_reembed_runs"
UNFINISHED: Final = ("pending", "running")


class ReembedRunRepository:
    def __init__(self, session: AsyncSession, tenant_id: TenantId) -> None:
        self._session = session
        self._tenant_id = tenant_id

    async def start(self, settings_version: int, provider: str | None) -> ReembedRun:
        """A pending run for the choice made at ``settings_version``; a run of an earlier
        choice that has not finished is superseded (its vectors would be replaced)."""
        await self._session.execute(
            update(ReembedRun)
            .where(ReembedRun.tenant_id == self._tenant_id, ReembedRun.status.in_(UNFINISHED))
            .values(status="superseded", finished_at=func.now(), updated_at=func.now())
        )
        run = ReembedRun(
            tenant_id=self._tenant_id, settings_version=settings_version, provider=provider
        )
        self._session.add(run)
        await self._session.flush()
        await self._session.refresh(run)
        return run

    async def recent(self, limit: int) -> list[ReembedRun]:
        statement = (
            select(ReembedRun)
            .where(ReembedRun.tenant_id == self._tenant_id)
            .order_by(ReembedRun.created_at.desc(), ReembedRun.id.desc())
            .limit(limit)
        )
        return list((await self._session.execute(statement)).scalars())

    async def claim(self, run_id: uuid.UUID, stale_after: timedelta) -> ReembedRun | None:
        """The run, now ``running`` for the caller; None if it is finished, superseded or
        being run by a worker that reported within ``stale_after``."""
        statement = (
            update(ReembedRun)
            .where(
                ReembedRun.tenant_id == self._tenant_id,
                ReembedRun.id == run_id,
                or_(
                    ReembedRun.status.in_(("pending", "failed")),
                    (ReembedRun.status == "running")
                    & (ReembedRun.updated_at < func.now() - stale_after),
                ),
            )
            .values(status="running", updated_at=func.now(), error=None)
            .returning(ReembedRun)
        )
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def hold(self, run_id: uuid.UUID) -> bool:
        """Whether the run is still running; if so, a newer choice cannot supersede it
        until this transaction ends (``start`` waits for the lock). A batch that writes
        vectors after this check is therefore seen by the run that supersedes it."""
        statement = (
            select(ReembedRun.id)
            .where(
                ReembedRun.tenant_id == self._tenant_id,
                ReembedRun.id == run_id,
                ReembedRun.status == "running",
            )
            .with_for_update(read=True)
        )
        return (await self._session.execute(statement)).scalar_one_or_none() is not None

    async def report(self, run_id: uuid.UUID, **values: Any) -> bool:
        """Record progress of a running run; False when it is no longer running (a newer
        choice superseded it): the worker stops."""
        statement = (
            update(ReembedRun)
            .where(
                ReembedRun.tenant_id == self._tenant_id,
                ReembedRun.id == run_id,
                ReembedRun.status == "running",
            )
            .values(updated_at=func.now(), **values)
        )
        return bool((await self._session.execute(statement)).rowcount)  # type: ignore[attr-defined]

    async def resumable(self, pending_since: datetime, silent_since: datetime) -> list[uuid.UUID]:
        """Runs the beat should (re)start: pending since ``pending_since`` (a message
        lost, or a change made from the CLI), failed or running without a report since
        ``silent_since``."""
        since = func.coalesce(ReembedRun.updated_at, ReembedRun.created_at)
        statement = select(ReembedRun.id).where(
            ReembedRun.tenant_id == self._tenant_id,
            or_(
                (ReembedRun.status == "pending") & (ReembedRun.created_at < pending_since),
                ReembedRun.status.in_(("running", "failed")) & (since < silent_since),
            ),
        )
        return list((await self._session.execute(statement)).scalars())
