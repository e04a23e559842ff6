"""GET /v1/audit, /v1/audit/export (signed JSON lines, streamed), /v1/audit/verify (and POST,
against a kept checkpoint), /v1/audit/access (the access log), /v1/audit/checkpoints,
/v1/audit/public-key (what checks the signatures without the server's secret)."""

from __future__ import annotations

import uuid
from datetime import datetime

from litestar import Controller, get, post
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import FromQuery, JSONBody
from litestar.response import Stream
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.audit.access import AccessLog
from tenancy.audit.access_query import AccessFilter, access_page
from tenancy.audit.checkpoints import latest_checkpoint, write_checkpoint
from tenancy.audit.exports import ExportKind, export_stream, plan_export
from tenancy.audit.log import Actor
from tenancy.audit.schemas import (
    AccessPage,
    AuditPage,
    AuditPublicKey,
    AuditVerification,
    CheckpointRead,
)
from tenancy.audit.sealing import seal_all
from tenancy.audit.services import AuditFilter, AuditFilterInvalid, AuditService
from tenancy.principal import Principal
from tenancy.route_policy import policy
from tether.core.errors import NotFound
from tether.core.pagination import DEFAULT_LIMIT, Cursor, Limit
from tether.core.resources import Resources
from tether.core.text import IdentifierInQuery


def provide_audit_service(
    db_session: NamedDependency[AsyncSession], principal: NamedDependency[Principal]
) -> AuditService:
    return AuditService(db_session, principal.tenant_id)


def provide_access_log(state: State) -> AccessLog:
    access_log: AccessLog = state.access_log
    return access_log


Audit = NamedDependency[AuditService]
Access = NamedDependency[AccessLog]


async def seal_now(access_log: AccessLog, resources: Resources, principal: Principal) -> None:
    """What this process collected is written, and every unsealed event of the tenant
    sealed, so a verification or checkpoint that follows covers them."""
    await access_log.flush()
    await seal_all(resources.sessions, principal.tenant_id, resources.settings.audit.seal_batch)


class AuditController(Controller):
    path = "/v1/audit"
    tags = ["audit"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "audit_service": Provide(provide_audit_service, sync_to_thread=False),
        "access_log": Provide(provide_access_log, sync_to_thread=False),
    }

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
        access_log: Access,
        kind: FromQuery[ExportKind] = "audit",
        action: FromQuery[IdentifierInQuery] = None,
        object: FromQuery[IdentifierInQuery] = None,  # noqa: A002 - the API's field name
        decision: FromQuery[IdentifierInQuery] = None,
        relationship_id: FromQuery[uuid.UUID | None] = None,
        global_user_id: FromQuery[uuid.UUID | None] = None,
        since: FromQuery[datetime | None] = None,
        until: FromQuery[datetime | None] = None,
        actor_key_id: FromQuery[uuid.UUID | None] = None,
        actor_role: FromQuery[IdentifierInQuery] = None,
        purpose: FromQuery[IdentifierInQuery] = None,
        memory_id: FromQuery[uuid.UUID | None] = None,
    ) -> Stream:
        """A signed export of the matching range as JSON lines: one audit event (or,
        with ``kind=access``, one access event) per line with its ``line_mac``, then a
        trailer that signs the filters, the count, a digest over the lines and the chain
        head the range is anchored to. Recorded as ``audit.export``. Check it offline
        with ``tether audit verify-export FILE`` (the server's secret) or
        ``tether audit verify-export FILE --public-key KEY`` (``/v1/audit/public-key``)."""
        if kind == "audit":
            if purpose is not None or memory_id is not None:
                raise AuditFilterInvalid("purpose and memory_id filter kind=access only")
            where: AuditFilter | AccessFilter = AuditFilter(
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
        else:
            if any(v is not None for v in (action, object, decision, actor_role)):
                raise AuditFilterInvalid(
                    "action, object, decision and actor_role filter kind=audit only"
                )
            await seal_now(access_log, resources, principal)  # recent reads are covered
            where = AccessFilter(
                global_user_id, relationship_id, actor_key_id, purpose, memory_id, since, until
            )
        return await signed_export(resources, principal, where)

    @get("/verify", operation_id="VerifyAuditChain", opt=policy("audit", "read"))
    async def verify(
        self,
        audit_service: Audit,
        access_log: Access,
        resources: NamedDependency[Resources],
        principal: NamedDependency[Principal],
    ) -> AuditVerification:
        """Seal pending access events, then recompute the tenant's keyed hash chain and
        compare its tail with the latest signed checkpoint; ``first_bad_seq`` and
        ``first_bad_id`` name the first link that was changed, removed or truncated."""
        await seal_now(access_log, resources, principal)
        return await audit_service.verify()

    @post(
        "/verify",
        operation_id="VerifyAuditChainAgainstCheckpoint",
        opt=policy("audit", "read"),
        status_code=HTTP_200_OK,
    )
    async def verify_against(
        self,
        data: JSONBody[CheckpointRead],
        audit_service: Audit,
        access_log: Access,
        resources: NamedDependency[Resources],
        principal: NamedDependency[Principal],
    ) -> AuditVerification:
        """As GET, and also against a checkpoint you kept (from
        ``/v1/audit/checkpoints/latest``): a chain that no longer reaches it fails."""
        await seal_now(access_log, resources, principal)
        return await audit_service.verify(data)

    @get("/access", operation_id="ListAccessEvents", opt=policy("audit", "read"))
    async def access(
        self,
        db_session: NamedDependency[AsyncSession],
        principal: NamedDependency[Principal],
        access_log: Access,
        global_user_id: FromQuery[uuid.UUID | None] = None,
        relationship_id: FromQuery[uuid.UUID | None] = None,
        actor_key_id: FromQuery[uuid.UUID | None] = None,
        purpose: FromQuery[IdentifierInQuery] = None,
        memory_id: FromQuery[uuid.UUID | None] = None,
        since: FromQuery[datetime | None] = None,
        until: FromQuery[datetime | None] = None,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> AccessPage:
        """Who read which memories of which relationship (and global user), why
        (``purpose``: ``context`` = injected into a prompt), oldest first, in
        ``[since, until)`` like the audit query."""
        await access_log.flush()
        where = AccessFilter(
            global_user_id, relationship_id, actor_key_id, purpose, memory_id, since, until
        )
        return await access_page(db_session, principal.tenant_id, where, cursor, limit)

    @get(
        "/checkpoints/latest",
        operation_id="GetLatestAuditCheckpoint",
        opt=policy("audit", "read"),
    )
    async def latest(
        self, db_session: NamedDependency[AsyncSession], principal: NamedDependency[Principal]
    ) -> CheckpointRead:
        """The latest signed checkpoint of the chain's head: keep it outside Tether and
        hand it to ``POST /v1/audit/verify`` later."""
        found = await latest_checkpoint(db_session, principal.tenant_id)
        if found is None:
            raise NotFound("no checkpoint yet: POST /v1/audit/checkpoints makes one")
        return found

    @post(
        "/checkpoints",
        operation_id="CreateAuditCheckpoint",
        opt=policy("audit", "export"),
        status_code=HTTP_201_CREATED,
    )
    async def checkpoint(
        self,
        db_session: NamedDependency[AsyncSession],
        principal: NamedDependency[Principal],
        access_log: Access,
        resources: NamedDependency[Resources],
    ) -> CheckpointRead:
        """Seal pending access events and sign the chain's head now."""
        await seal_now(access_log, resources, principal)
        return await write_checkpoint(db_session, principal.tenant_id)

    @get("/public-key", operation_id="GetAuditPublicKey", opt=policy("audit", "read"))
    async def public_key(self, audit_service: Audit) -> AuditPublicKey:
        """The tenant's Ed25519 public key and its id (the fingerprint that checkpoints
        and export trailers name): it checks their signatures, and those of retention
        anchors, without the server's secret. Keep it outside Tether."""
        return audit_service.public_key()


async def signed_export(
    resources: Resources, principal: Principal, where: AuditFilter | AccessFilter
) -> Stream:
    """The signed export of ``where`` as a download (recorded before a byte is sent);
    the API's and the console's export are this one."""
    plan = await plan_export(resources.sessions, principal.tenant_id, Actor.of(principal), where)
    return Stream(
        export_stream(resources.sessions, plan),
        media_type="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="{plan.filename}"'},
    )
