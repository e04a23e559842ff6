"""POST/GET /v1/relationships/{id}/turns and POST .../sessions/{session_id}/end."""

from __future__ import annotations

import uuid

from litestar import Controller, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.status_codes import HTTP_202_ACCEPTED
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.access.principal import Principal
from tenancy.audit.log import Actor
from tenancy.enums import Role
from tenancy.relationships.directory import CardCache
from tenancy.relationships.lifecycle import creator_returned
from tether.core.pagination import DEFAULT_LIMIT, Cursor, Limit
from tether.core.text import IdentifierInPath, IdentifierInQuery
from tether.turns.deps import provide_ingest_service, provide_session_service
from tether.turns.schemas import SessionEnded, StoredTurnPage, TurnBatch, TurnBatchResult
from tether.turns.services import IngestService
from tether.turns.sessions import SessionService


class TurnController(Controller):
    path = "/v1/relationships/{relationship_id:uuid}"
    tags = ["turns"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "ingest_service": Provide(provide_ingest_service, sync_to_thread=False),
        "session_service": Provide(provide_session_service, sync_to_thread=False),
    }

    @post(
        "/turns",
        operation_id="IngestTurns",
        status_code=HTTP_202_ACCEPTED,
        opt=policy("relationship_memory", "write"),
    )
    async def ingest(
        self,
        relationship_id: FromPath[uuid.UUID],
        data: JSONBody[TurnBatch],
        ingest_service: NamedDependency[IngestService],
        principal: NamedDependency[Principal],
        db_session: NamedDependency[AsyncSession],
        card_cache: NamedDependency[CardCache],
    ) -> TurnBatchResult:
        """Accept 1..100 turns; durable storage and extraction happen in workers.
        Each result says accepted / duplicate (with the stored turn's id) / dropped.
        Turns sent with the creator's own key are the creator's: a relationship pooled
        for the creator's silence goes back to the creator."""
        result = await ingest_service.ingest(relationship_id, data)
        if principal.role == Role.CREATOR:
            tenant_id, actor = principal.tenant_id, Actor.of(principal)
            await creator_returned(db_session, tenant_id, relationship_id, actor, card_cache)
        return result

    @get("/turns", operation_id="ListTurns", opt=policy("relationship_memory", "read"))
    async def list_turns(
        self,
        relationship_id: FromPath[uuid.UUID],
        ingest_service: NamedDependency[IngestService],
        session_id: FromQuery[IdentifierInQuery] = None,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> StoredTurnPage:
        """Stored turns (after the privacy filter), oldest first."""
        return await ingest_service.page(relationship_id, session_id, cursor, limit)

    @post(
        "/sessions/{session_id:str}/end",
        operation_id="EndSession",
        status_code=HTTP_202_ACCEPTED,
        opt=policy("relationship_memory", "write"),
    )
    async def end_session(
        self,
        relationship_id: FromPath[uuid.UUID],
        session_id: FromPath[IdentifierInPath],
        session_service: NamedDependency[SessionService],
    ) -> SessionEnded:
        """Close the session and schedule the extraction of its memories."""
        return await session_service.end(relationship_id, session_id)
