"""Session agent flags, the tenant's session defaults, and forgetting a session."""

from __future__ import annotations

import uuid

from litestar import Controller, delete, get, put
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.status_codes import HTTP_200_OK
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.access.principal import Principal
from tenancy.audit.log import Actor
from tenancy.relationships.directory import RelationshipDirectory
from tenancy.settings.cache import TenantSettingsCache
from tenancy.settings.services import TenantSettingsService
from tether.core.ids import TenantId
from tether.core.pagination import DEFAULT_LIMIT, KeyedCursor, Limit
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.core.text import IdentifierInPath
from tether.memories import session_schemas as s
from tether.memories.session_flags import SessionDefaultsService, SessionFlagService


def provide_session_flags(
    state: State,
    db_session: NamedDependency[AsyncSession],
    resources: NamedDependency[Resources],
    relationship_directory: NamedDependency[RelationshipDirectory],
    principal: NamedDependency[Principal],
) -> SessionFlagService:
    return SessionFlagService(
        db_session,
        relationship_directory,
        resources.redis,
        state.partitions.invalidate,
        principal,
    )


def provide_session_defaults(
    db_session: NamedDependency[AsyncSession],
    principal: NamedDependency[Principal],
    settings: NamedDependency[Settings],
) -> SessionDefaultsService:
    return SessionDefaultsService(
        TenantSettingsService(
            db_session, TenantId(principal.tenant_id), Actor.of(principal), settings
        )
    )


def settings_changed_here(state: State, principal: Principal) -> None:
    """This process's settings cache drops the tenant's document (a new version)."""
    cache: TenantSettingsCache | None = getattr(state, "tenant_settings", None)
    if cache is not None:
        cache.forget(TenantId(principal.tenant_id))


Flags = NamedDependency[SessionFlagService]
Defaults = NamedDependency[SessionDefaultsService]
# The session list and a session's flags are two paths on one service.
SESSION_FLAGS = {"session_flags": Provide(provide_session_flags, sync_to_thread=False)}


class SessionListController(Controller):
    path = "/v1/relationships/{relationship_id:uuid}/sessions"
    tags = ["turns"]  # noqa: RUF012
    dependencies = SESSION_FLAGS

    @get(operation_id="ListSessions", opt=policy("relationship_memory", "read"))
    async def list_sessions(
        self,
        relationship_id: FromPath[uuid.UUID],
        session_flags: Flags,
        cursor: FromQuery[KeyedCursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.SessionSummaryPage:
        """The relationship's sessions, most recently opened first, each with the flags
        in force and which level set them."""
        return await session_flags.sessions(relationship_id, cursor, limit)


class SessionFlagController(Controller):
    path = "/v1/relationships/{relationship_id:uuid}/sessions/{session_id:str}"
    tags = ["turns"]  # noqa: RUF012
    dependencies = SESSION_FLAGS

    @get(operation_id="GetSessionFlags", opt=policy("relationship_memory", "read"))
    async def read(
        self,
        relationship_id: FromPath[uuid.UUID],
        session_id: FromPath[IdentifierInPath],
        session_flags: Flags,
    ) -> s.SessionFlagsRead:
        """The flags in force for a session and which level set them (an unknown
        session gets the persona's, then the tenant's)."""
        return await session_flags.read(relationship_id, session_id)

    @put(operation_id="PutSessionFlags", opt=policy("relationship_memory", "write"))
    async def put(
        self,
        relationship_id: FromPath[uuid.UUID],
        session_id: FromPath[IdentifierInPath],
        data: JSONBody[s.SessionFlagsUpdate],
        session_flags: Flags,
    ) -> s.SessionFlagsRead:
        """Set the session's memory / knowledge flags (null: inherit)."""
        return await session_flags.put(relationship_id, session_id, data)

    @delete(
        operation_id="ForgetSession",
        status_code=HTTP_200_OK,
        opt=policy("relationship_memory", "delete"),
    )
    async def forget(
        self,
        relationship_id: FromPath[uuid.UUID],
        session_id: FromPath[IdentifierInPath],
        session_flags: Flags,
    ) -> s.SessionForgotten:
        """Forget a session: its turns and the memories derived only from them."""
        return await session_flags.forget(relationship_id, session_id)


class SessionDefaultsController(Controller):
    path = "/v1/tenant/session-defaults"
    tags = ["turns"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "session_defaults": Provide(provide_session_defaults, sync_to_thread=False)
    }

    @get(operation_id="GetSessionDefaults", opt=policy("tenant_settings", "read"))
    async def read(self, session_defaults: Defaults) -> s.SessionDefaults:
        """The tenant's defaults for sessions whose persona does not decide."""
        return await session_defaults.get()

    @put(operation_id="PutSessionDefaults", opt=policy("tenant_settings", "write"))
    async def put(
        self,
        data: JSONBody[s.SessionDefaults],
        session_defaults: Defaults,
        state: State,
        principal: NamedDependency[Principal],
    ) -> s.SessionDefaults:
        """Replace the tenant's session defaults: the ``sessions`` section of the tenant
        settings, written as a new version (audited as ``settings.update``)."""
        written = await session_defaults.put(data)
        settings_changed_here(state, principal)
        return written
