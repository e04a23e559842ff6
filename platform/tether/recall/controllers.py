"""POST /v1/relationships/{id}/search."""

from __future__ import annotations

import uuid

from litestar import Controller, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, JSONBody
from litestar.status_codes import HTTP_200_OK

from tenancy.access.guard import policy
from tether.recall.deps import provide_recall, provide_search_service
from tether.recall.schemas import SearchRequest, SearchResponse
from tether.recall.search import SearchService


class SearchController(Controller):
    path = "/v1/relationships/{relationship_id:uuid}/search"
    tags = ["recall"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "recall": Provide(provide_recall, sync_to_thread=False),
        "search_service": Provide(provide_search_service, sync_to_thread=False),
    }

    @post(
        operation_id="SearchMemories",
        status_code=HTTP_200_OK,
        opt=policy("relationship_memory", "read"),
    )
    async def search(
        self,
        relationship_id: FromPath[uuid.UUID],
        data: JSONBody[SearchRequest],
        search_service: NamedDependency[SearchService],
    ) -> SearchResponse:
        """The relationship's memories ranked for ``query`` (BM25 + vectors, fused, with
        time decay), each with its explanation; ``degraded`` lists what was skipped."""
        return await search_service.search(relationship_id, data)
