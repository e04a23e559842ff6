"""Reading and changing a tenant's settings: versioned, with optimistic concurrency
(ETag / If-Match), every change audited (which sections changed, never their values'
history beyond the stored versions)."""

from __future__ import annotations

import logging

import msgspec
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.audit.log import Actor, AuditLog
from tenancy.limits.schemas import TenantLimitsRead
from tenancy.limits.services import TenantLimitsService
from tenancy.settings.errors import SettingsChanged, SettingsIfMatchRequired
from tenancy.settings.models import ReembedRun, TenantSettingsVersion
from tenancy.settings.providers import check_providers
from tenancy.settings.reembed_runs import REEMBED_TASK, ReembedRunRepository
from tenancy.settings.repositories import TenantSettingsRepository
from tenancy.settings.schemas import (
    ReembedRunList,
    ReembedRunRead,
    SessionsTenantSettings,
    TenantSettingsDocument,
    TenantSettingsRead,
    TenantSettingsWrite,
    dump_document,
    newer_sections,
    parse_document,
)
from tether.core.ids import TenantId
from tether.core.settings import Settings
from tether.core.tasks import QueueUnavailable, TaskQueue
from tether.core.unit_of_work import on_commit

log = logging.getLogger(__name__)


def _run(r: ReembedRun) -> ReembedRunRead:
    return ReembedRunRead(
        id=str(r.id),
        status=r.status,  # type: ignore[arg-type]
        settings_version=r.settings_version,
        provider=r.provider,
        model=r.model,
        dimension=r.dimension,
        memories_done=r.memories_done,
        memories_total=r.memories_total,
        chunks_done=r.chunks_done,
        chunks_total=r.chunks_total,
        error=r.error,
        created_at=r.created_at,
        updated_at=r.updated_at,
        finished_at=r.finished_at,
    )


def etag(version: int) -> str:
    return f'"{version}"'


def _read(row: TenantSettingsVersion | None, limits: TenantLimitsRead) -> TenantSettingsRead:
    if row is None:  # never changed: the defaults, at version 0
        return TenantSettingsRead.of(0, TenantSettingsDocument(), None, None, limits)
    key = None if row.actor_key_id is None else str(row.actor_key_id)
    document = parse_document(row.document)
    return TenantSettingsRead.of(row.version, document, row.created_at, key, limits)


async def current_settings(session: AsyncSession, tenant_id: TenantId) -> TenantSettingsDocument:
    """The settings in force for a tenant (the defaults if it never changed them)."""
    row = await TenantSettingsRepository(session, tenant_id).latest()
    return TenantSettingsDocument() if row is None else parse_document(row.document)


class TenantSettingsService:
    """The settings document of one tenant.

    Args:
        deployment: the deployment's settings: the providers a tenant may choose, and
            the limits' defaults (the document shows the limits in force, read only).
    """

    def __init__(
        self,
        session: AsyncSession,
        tenant_id: TenantId,
        actor: Actor,
        deployment: Settings,
        tasks: TaskQueue | None = None,
    ) -> None:
        self._session = session
        # Where a re-embed run is sent after the commit (None: the beat's sweep starts it).
        self._tasks = tasks
        self._tenant_id = tenant_id
        self._actor = actor
        self._providers = deployment.providers
        self._settings = TenantSettingsRepository(session, tenant_id)
        self._limits = TenantLimitsService(session, tenant_id, deployment.limits, actor)

    async def get(self) -> TenantSettingsRead:
        return _read(await self._settings.latest(), await self._limits.get())

    async def reembed_runs(self, limit: int) -> ReembedRunList:
        """The tenant's latest re-embed runs, newest first."""
        runs = await ReembedRunRepository(self._session, self._tenant_id).recent(limit)
        return ReembedRunList([_run(r) for r in runs])

    async def put(self, data: TenantSettingsWrite, if_match: str | None) -> TenantSettingsRead:
        """Write a new version if ``if_match`` names the one in force (412 otherwise)."""
        if if_match is None:
            raise SettingsIfMatchRequired()
        current = await self._settings.latest()
        version = 0 if current is None else current.version
        if if_match.strip() not in (etag(version), f"W/{etag(version)}"):
            raise SettingsChanged(
                f"you sent If-Match {if_match}, the settings are at {etag(version)}"
            )
        # 422 before anything is stored
        check_providers(data.extraction, data.embedding, self._providers)
        return await self._append(current, data.document(), bool(data.reason))

    async def put_sessions(self, sessions: SessionsTenantSettings) -> TenantSettingsRead:
        """Replace only the ``sessions`` section, as a new version (the view that
        /v1/tenant/session-defaults is, decision 0086): no If-Match, since that route
        never had one; the other sections are carried over as they are in force."""
        current = await self._settings.latest()
        in_force = TenantSettingsDocument() if current is None else parse_document(current.document)
        document = msgspec.structs.replace(in_force, sessions=sessions)
        return await self._append(current, document, False)

    async def _append(
        self,
        current: TenantSettingsVersion | None,
        document: TenantSettingsDocument,
        reason: bool,
    ) -> TenantSettingsRead:
        version = 0 if current is None else current.version
        in_force = TenantSettingsDocument() if current is None else parse_document(current.document)
        kept = {} if current is None else newer_sections(current.document)
        before = {**kept, **dump_document(in_force)}
        after = {**kept, **dump_document(document)}
        try:
            async with self._session.begin_nested():
                row = await self._settings.append(version + 1, after, self._actor.key_id)
        except IntegrityError as exc:  # another writer took this version first
            raise SettingsChanged("the settings changed while you wrote them") from exc
        changed = sorted(name for name in after if after[name] != before.get(name))
        if "embedding" in changed:
            await self._reembed(row.version, document.embedding.provider)
        if "sessions" in changed:
            sessions = document.sessions
            await self._settings.mirror_session_defaults(
                sessions.memory_enabled,
                sessions.knowledge_enabled,
                sessions.keep_turns_without_memory,
            )
        await AuditLog(self._session).record(
            self._tenant_id,
            self._actor,
            "settings.update",
            "tenant_settings",
            detail={"version": row.version, "sections": changed, "reason": reason},
        )
        return _read(row, await self._limits.get())

    async def _reembed(self, version: int, provider: str | None) -> None:
        """A new embedding model: a run re-embeds the tenant's vectors (decision 0079),
        recorded in this transaction so that it is never lost, sent once committed."""
        run = await ReembedRunRepository(self._session, self._tenant_id).start(version, provider)
        tasks, args = self._tasks, [str(self._tenant_id), str(run.id)]
        if tasks is None:
            return

        async def send() -> None:
            try:
                await tasks.send(REEMBED_TASK, args)
            except QueueUnavailable as exc:  # the beat's sweep starts it
                log.warning("re-embed run %s not queued: %s", run.id, exc)

        on_commit(self._session, send)
