"""POST /v1/context: the gateway's one call per message."""

from __future__ import annotations

from litestar import Controller, post
from litestar.di import NamedDependency, Provide
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK

from tenancy.access.guard import policy
from tether.context.deps import provide_context_service
from tether.context.schemas import ContextRequest, ContextResponse
from tether.context.services import ContextService
from tether.recall.deps import provide_recall


class ContextController(Controller):
    path = "/v1/context"
    tags = ["context"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "recall": Provide(provide_recall, sync_to_thread=False),
        "context_service": Provide(provide_context_service, sync_to_thread=False),
    }

    @post(
        operation_id="BuildContext",
        status_code=HTTP_200_OK,
        opt=policy("relationship_memory", "read"),
    )
    async def build(
        self, data: JSONBody[ContextRequest], context_service: NamedDependency[ContextService]
    ) -> ContextResponse:
        """What the model should know for this message: put ``context`` in ONE system
        message right after your base system prompt (``messages`` does it for you)."""
        return await context_service.build(data)
