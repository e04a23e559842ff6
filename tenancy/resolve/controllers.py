"""POST /v1/resolve."""

from __future__ import annotations

from litestar import Controller, Response, post
from litestar.di import NamedDependency, Provide
from litestar.params import JSONBody

from tenancy.access.guard import policy
from tenancy.resolve.deps import provide_resolve_service
from tenancy.resolve.schemas import ResolveRequest, ResolveResponse
from tenancy.resolve.services import ResolveService


class ResolveController(Controller):
    path = "/v1/resolve"
    tags = ["identity"]  # noqa: RUF012
    dependencies = {"resolve_service": Provide(provide_resolve_service, sync_to_thread=False)}  # noqa: RUF012

    @post(operation_id="Resolve", opt=policy("identity", "write"))
    async def resolve(
        self, data: JSONBody[ResolveRequest], resolve_service: NamedDependency[ResolveService]
    ) -> Response[ResolveResponse]:
        """Map (user, facet, persona) to its relationship, creating whatever is missing."""
        ids, created = await resolve_service.resolve(data)
        body = ResolveResponse(
            relationship_id=ids.relationship_id,
            global_user_id=ids.global_user_id,
            user_facet_id=ids.user_facet_id,
            creator_persona_id=ids.creator_persona_id,
            creator_id=ids.creator_id,
            created=created,
        )
        return Response(body, status_code=201 if created else 200)
