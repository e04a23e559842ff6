"""Compliance pages: the audit explorer (filters, paging newest first), an entry with
its chain link, verifying the chain step by step, signed export of a filtered range, and the
cross-relationship access report of one global user."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlencode

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery
from litestar.response import Stream, Template
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.access.principal import Principal
from tenancy.audit.access import PURPOSES, AccessLog
from tenancy.audit.access_query import AccessFilter, access_page
from tenancy.audit.controllers import (
    provide_access_log,
    provide_audit_service,
    seal_now,
    signed_export,
)
from tenancy.audit.services import AuditFilter, AuditService
from tether.console import forms
from tether.console.pages import may, render
from tether.console.verify_jobs import VerifyJobs
from tether.core.errors import NotFound
from tether.core.resources import Resources

AnyRequest = Request[Any, Any, Any]
Audit = NamedDependency[AuditService]
READ = policy("audit", "read")
PAGE = 50
# Events one verify step checks: a step takes well under a second on this machine.
STEP = 20_000
FILTERS = (
    "since",
    "until",
    "actor_key_id",
    "actor_role",
    "action",
    "object",
    "decision",
    "relationship_id",
    "global_user_id",
)

ACCESS = (
    "global_user_id",
    "relationship_id",
    "actor_key_id",
    "purpose",
    "memory_id",
    "since",
    "until",
)


def _filter(query: dict[str, str]) -> AuditFilter:
    return AuditFilter(
        action=query.get("action") or None,
        object=query.get("object") or None,
        decision=query.get("decision") or None,
        relationship_id=forms.ident(query.get("relationship_id"), "relationship_id"),
        global_user_id=forms.ident(query.get("global_user_id"), "global_user_id"),
        since=forms.moment(query.get("since"), "since"),
        until=forms.moment(query.get("until"), "until"),
        actor_key_id=forms.ident(query.get("actor_key_id"), "actor_key_id"),
        actor_role=query.get("actor_role") or None,
    )


def _query(request: AnyRequest) -> dict[str, str]:
    return {name: str(request.query_params.get(name) or "").strip() for name in FILTERS}


class AuditPages(Controller):
    path = "/audit"
    dependencies = {  # noqa: RUF012
        "audit_service": Provide(provide_audit_service, sync_to_thread=False),
        "access_log": Provide(provide_access_log, sync_to_thread=False),
    }

    @get("/", opt=READ)
    async def explorer(
        self, request: AnyRequest, audit_service: Audit, cursor: FromQuery[str | None] = None
    ) -> Template:
        """Audit events, newest first, filtered (the page reads one page, never the log),
        and the public key that checks signed exports (``GET /v1/audit/public-key``)."""
        query = _query(request)
        page = await audit_service.page(_filter(query), cursor, PAGE, newest_first=True)
        kept = urlencode({k: v for k, v in query.items() if v})
        return render(
            request,
            "audit/explorer.html",
            page=page,
            filters=query,
            kept=kept,
            total=await audit_service.length(),
            may_export=may(request, "audit", "export"),
            public_key=audit_service.public_key(),
        )

    @get("/events/{event_id:uuid}", opt=READ)
    async def event(
        self, request: AnyRequest, event_id: FromPath[uuid.UUID], audit_service: Audit
    ) -> Template:
        """One event, its neighbours, and whether its hash and its link hold."""
        link = await audit_service.link(event_id)
        if link is None:
            raise NotFound(f"no audit event {event_id}")
        return render(request, "audit/event.html", link=link)

    @post("/verify", opt=READ)
    async def verify_start(
        self,
        request: AnyRequest,
        audit_service: Audit,
        principal: NamedDependency[Principal],
        redis: NamedDependency[Redis],
        access_log: NamedDependency[AccessLog],
        resources: NamedDependency[Resources],
    ) -> Template:
        """Seal pending access events (as ``/v1/audit/verify`` does), then start verifying
        the whole chain; the page advances it step by step and checks the tail and the
        latest signed checkpoint last."""
        await seal_now(access_log, resources, principal)
        job_id, job = await VerifyJobs(redis).start(
            str(principal.tenant_id),
            str(principal.key_id),
            await audit_service.length(),
            await audit_service.start(),
        )
        return render(request, "audit/_verify.html", job_id=job_id, job=job)

    @post("/verify/{job_id:str}", opt=READ)
    async def verify_step(
        self,
        request: AnyRequest,
        job_id: FromPath[str],
        audit_service: Audit,
        principal: NamedDependency[Principal],
        redis: NamedDependency[Redis],
    ) -> Template:
        """Check the next batch of events."""
        jobs = VerifyJobs(redis)
        job = await jobs.load(job_id, str(principal.tenant_id), str(principal.key_id))
        if job is None:
            raise NotFound("no such verification (it expired); start again")
        if not job.step.done:
            job.step = await audit_service.verify_step(job.step, STEP)
            if job.step.done:
                job.step = await audit_service.finish(job.step)
            await jobs.save(job_id, job)
        return render(request, "audit/_verify.html", job_id=job_id, job=job)

    @get("/export", opt=policy("audit", "export"))
    async def export(
        self,
        request: AnyRequest,
        principal: NamedDependency[Principal],
        resources: NamedDependency[Resources],
    ) -> Stream:
        """The filtered range as a signed export, the same one ``/v1/audit/export``
        streams (recorded as ``audit.export``; ``tether audit verify-export`` checks it)."""
        where = _filter(_query(request))
        return await signed_export(resources, principal, where)

    @get("/access-report", opt=READ)
    async def access_report(
        self,
        request: AnyRequest,
        audit_service: Audit,
        global_user_id: FromQuery[str | None] = None,
    ) -> Template:
        """Who accessed one global user's data, from which relationship, allowed or not."""
        user = forms.ident(global_user_id, "global_user_id")
        rows = [] if user is None else await audit_service.access_report(user)
        return render(
            request,
            "audit/access_report.html",
            user_id=global_user_id or "",
            rows=rows,
            asked=user is not None,
        )

    @get("/access", opt=READ)
    async def access(
        self,
        request: AnyRequest,
        db_session: NamedDependency[AsyncSession],
        principal: NamedDependency[Principal],
        access_log: NamedDependency[AccessLog],
        cursor: FromQuery[str | None] = None,
    ) -> Template:
        """The access log (``GET /v1/audit/access``): who read which memories, why,
        filtered and paged."""
        query = {name: str(request.query_params.get(name) or "").strip() for name in ACCESS}
        where = AccessFilter(
            global_user_id=forms.ident(query["global_user_id"], "global_user_id"),
            relationship_id=forms.ident(query["relationship_id"], "relationship_id"),
            actor_key_id=forms.ident(query["actor_key_id"], "actor_key_id"),
            purpose=query["purpose"] or None,
            memory_id=forms.ident(query["memory_id"], "memory_id"),
            since=forms.moment(query["since"], "since"),
            until=forms.moment(query["until"], "until"),
        )
        await access_log.flush()
        page = await access_page(db_session, principal.tenant_id, where, cursor, PAGE)
        return render(
            request,
            "audit/access.html",
            page=page,
            filters=query,
            kept=urlencode({k: v for k, v in query.items() if v}),
            purposes=PURPOSES,
        )
