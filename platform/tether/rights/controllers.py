"""Forget (preview + confirm), export a user, erase a user."""

from __future__ import annotations

import uuid
from typing import Annotated

from litestar import Controller, get, post
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.response import Stream
from litestar.status_codes import HTTP_200_OK
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.access.principal import Principal
from tenancy.audit.log import Actor, AuditLog
from tenancy.audit.services import AuditService
from tenancy.enums import Role
from tenancy.graph.erasure import UserEraser
from tenancy.graph.schemas import ErasureRequest, ErasureResult
from tenancy.graph.services import GraphService
from tenancy.relationships.directory import RelationshipDirectory
from tether.core.errors import BadRequest
from tether.core.resources import Resources
from tether.core.text import query, text
from tether.recall.services import may_see_private
from tether.rights import schemas as s
from tether.rights.erasure import ErasureService
from tether.rights.export import audited_relationship_export, export_user
from tether.rights.forget import ForgetService

ReasonInQuery = Annotated[str | None, query(text(2000, min_length=3))]
ERASE = policy("data_subject", "erase")


class ReasonRequired(BadRequest):
    code = "reason_required"
    title = "Say why: this action on a user's behalf is recorded with its reason"


def provide_forget_service(
    state: State,
    db_session: NamedDependency[AsyncSession],
    relationship_directory: NamedDependency[RelationshipDirectory],
    redis: NamedDependency[Redis],
    principal: NamedDependency[Principal],
) -> ForgetService:
    return ForgetService(
        db_session,
        relationship_directory,
        redis,
        principal,
        state.policy.for_tenant(principal.tenant_id),
        state.partitions.invalidate,
    )


class ForgetController(Controller):
    path = "/v1/relationships/{relationship_id:uuid}/forget"
    tags = ["rights"]  # noqa: RUF012
    dependencies = {"forget_service": Provide(provide_forget_service, sync_to_thread=False)}  # noqa: RUF012

    @post(
        operation_id="PreviewForget",
        status_code=HTTP_200_OK,
        opt=policy("relationship_memory", "delete"),
    )
    async def preview(
        self,
        relationship_id: FromPath[uuid.UUID],
        data: JSONBody[s.ForgetRequest],
        forget_service: NamedDependency[ForgetService],
    ) -> s.ForgetPreview:
        """The memories that match, and a token (valid 5 minutes) that forgets exactly
        those. Nothing changes yet."""
        return await forget_service.preview(relationship_id, data)

    @post(
        "/confirm",
        operation_id="ConfirmForget",
        status_code=HTTP_200_OK,
        opt=policy("relationship_memory", "delete"),
    )
    async def confirm(
        self,
        relationship_id: FromPath[uuid.UUID],
        data: JSONBody[s.ForgetConfirm],
        forget_service: NamedDependency[ForgetService],
    ) -> s.ForgetResult:
        """Forget the previewed memories: gone from recall, context and the hot tier at
        once; ``hard`` previews also purge their content and history."""
        return await forget_service.confirm(relationship_id, data.token)


def provide_user_eraser(
    db_session: NamedDependency[AsyncSession],
    redis: NamedDependency[Redis],
    principal: NamedDependency[Principal],
    resources: NamedDependency[Resources],
) -> ErasureService:
    broker_url = resources.settings.require_broker_url()
    return ErasureService(db_session, redis, resources.hot_redis, principal, broker_url)


class UserExportController(Controller):
    path = "/v1/users/{user_id:uuid}/export"
    tags = ["rights"]  # noqa: RUF012

    @get(operation_id="ExportUser", opt=policy("relationship_memory", "export"))
    async def export(
        self,
        state: State,
        user_id: FromPath[uuid.UUID],
        principal: NamedDependency[Principal],
        db_session: NamedDependency[AsyncSession],
        resources: NamedDependency[Resources],
        reason: FromQuery[ReasonInQuery] = None,
    ) -> Stream:
        """Everything Tether holds about the user across relationships, as JSON lines
        (``kind`` says what each line is; the first line says whether the export is
        complete or which kinds of rows this key may not receive). Audited, with the
        ``reason`` a compliance key must give (it acts on the user's behalf)."""
        if principal.role == Role.COMPLIANCE and not reason:
            raise ReasonRequired("a compliance key exports a user's data only with a reason")
        user = await GraphService(db_session, principal).require_user(user_id)
        enforcer = state.policy.for_tenant(principal.tenant_id)
        complete = may_see_private(enforcer, principal, "export")
        await AuditLog(db_session).record(
            principal.tenant_id,
            Actor.of(principal),
            "export",
            "relationship_memory",
            global_user_id=user.id,
            detail={"complete": complete, "reason": reason},
        )
        state.access_log.note(principal, "export", None, user.id)
        lines = export_user(resources.sessions, principal.tenant_id, user.id, complete=complete)
        return Stream(lines, media_type="application/x-ndjson")


class RelationshipExportController(Controller):
    path = "/v1/relationships/{relationship_id:uuid}/export"
    tags = ["rights"]  # noqa: RUF012

    @get(operation_id="ExportRelationship", opt=policy("relationship_memory", "export"))
    async def export(
        self,
        state: State,
        relationship_id: FromPath[uuid.UUID],
        principal: NamedDependency[Principal],
        db_session: NamedDependency[AsyncSession],
        relationship_directory: NamedDependency[RelationshipDirectory],
        resources: NamedDependency[Resources],
    ) -> Stream:
        """One relationship's turns, memories and their versions as JSON lines (the first
        line says whether private notes are included). Audited."""
        card = await relationship_directory.open(relationship_id)
        enforcer = state.policy.for_tenant(principal.tenant_id)
        complete = may_see_private(enforcer, principal, "export")
        lines = await audited_relationship_export(
            db_session, resources.sessions, card, principal, complete, state.access_log
        )
        return Stream(lines, media_type="application/x-ndjson")


class UserErasureController(Controller):
    path = "/v1/users/{user_id:uuid}/erasure"
    tags = ["rights"]  # noqa: RUF012

    @post(operation_id="EraseUserWithReason", status_code=HTTP_200_OK, opt=ERASE)
    async def erase(
        self,
        user_id: FromPath[uuid.UUID],
        data: JSONBody[ErasureRequest],
        user_eraser: NamedDependency[UserEraser],
    ) -> ErasureResult:
        """Erase the user on their behalf (admin or compliance), recording why: the
        receipt counts what each store held. Same erasure as ``DELETE /v1/users/{id}``."""
        return await user_eraser.erase(user_id, data.reason)


class AccessReportController(Controller):
    path = "/v1/users/{user_id:uuid}/access-report"
    tags = ["rights"]  # noqa: RUF012

    @get(operation_id="GetUserAccessReport", opt=policy("audit", "read"))
    async def report(
        self,
        user_id: FromPath[uuid.UUID],
        principal: NamedDependency[Principal],
        db_session: NamedDependency[AsyncSession],
    ) -> s.AccessReport:
        """Every recorded access to the user's data across all their relationships,
        grouped by relationship, role, key, action and decision (newest first, up to
        500 groups). Ids and decisions only: no memory content."""
        user = await GraphService(db_session, principal).require_user(user_id)
        rows = await AuditService(db_session, principal.tenant_id).access_report(user.id)
        return s.AccessReport(user.id, rows)
