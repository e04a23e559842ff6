"""GET /v1/audit, /v1/audit/export (JSON lines, streamed), /v1/audit/verify."""

from __future__ import annotations

import uuid
from datetime import datetime

from litestar import Controller, get
from litestar.di import NamedDependency, Provide
from litestar.params import FromQuery
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.audit.schemas import AuditPage, AuditVerification
from tenancy.audit.services import AuditFilter, AuditService, export_lines
from tenancy.principal import Principal
from tenancy.route_policy import policy
from tether.core.pagination import DEFAULT_LIMIT, Cursor, Limit
from tether.core.resources import Resources
from tether.core.text import IdentifierInQuery


def provide_audit_service(
    db_session: NamedDependency[AsyncSession], principal: NamedDependency[Principal]
) -> AuditService:
    return AuditService(db_session, principal.tenant_id)


Audit = NamedDependency[AuditService]


class AuditController(Controller):
    path = "/v1/audit"
    tags = ["audit"]  # noqa: RUF012
    dependencies = {"audit_service": Provide(provide_audit_service, sync_to_thread=False)}  # noqa: RUF012

    @get(operation_id="ListAuditEvents", opt=policy("audit", "read"))
    async def list_events(
        self,
        audit_service: Audit,
        action: FromQuery[IdentifierInQuery] = None,
        object: FromQuery[IdentifierInQuery] = None,  # noqa: A002 - the API's field name
        decision: FromQuery[IdentifierInQuery] = None,
        relationship_id: FromQuery[uuid.UUID | None] = None,
        global_user_id: FromQuery[uuid.UUID | None] = None,
        since: FromQuery[datetime | None] = None,
        until: FromQuery[datetime | None] = None,
        actor_key_id: FromQuery[uuid.UUID | None] = None,
        actor_role: FromQuery[IdentifierInQuery] = None,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> AuditPage:
        """The tenant's audit events, oldest first, filtered."""
        where = AuditFilter(
            action,
            object,
            decision,
            relationship_id,
            global_user_id,
            since,
            until,
            actor_key_id,
            actor_role,
        )
        return await audit_service.page(where, cursor, limit)

    @get("/export", operation_id="ExportAuditEvents", opt=policy("audit", "export"))
    async def export(
        self,
        principal: NamedDependency[Principal],
        resources: NamedDependency[Resources],
        action: FromQuery[IdentifierInQuery] = None,
        since: FromQuery[datetime | None] = None,
        until: FromQuery[datetime | None] = None,
    ) -> Stream:
        """Every matching event as JSON lines (hashes included, so an auditor can verify
        the chain offline)."""
        where = AuditFilter(action=action, since=since, until=until)
        lines = export_lines(resources.sessions, principal.tenant_id, where)
        return Stream(lines, media_type="application/x-ndjson")

    @get("/verify", operation_id="VerifyAuditChain", opt=policy("audit", "read"))
    async def verify(self, audit_service: Audit) -> AuditVerification:
        """Recompute the tenant's hash chain; ``first_bad_id`` names the first event that
        was changed, removed or reordered."""
        return await audit_service.verify()
