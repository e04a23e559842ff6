"""POST /v1/relationships/{id}/search: recall for one relationship, explained."""

from __future__ import annotations

import time
import uuid

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.principal import Principal
from tenancy.audit.access import AccessLog
from tenancy.relationships.directory import RelationshipDirectory
from tether.recall.schemas import SearchRequest, SearchResponse
from tether.recall.services import Recall, hit, may_see_private


class SearchService:
    def __init__(
        self,
        directory: RelationshipDirectory,
        recall: Recall,
        principal: Principal,
        enforcer: PolicyEnforcer,
        access: AccessLog | None = None,
    ) -> None:
        self._access = access
        self._directory = directory
        self._recall = recall
        self._principal = principal
        self._enforcer = enforcer

    async def search(self, relationship_id: uuid.UUID, request: SearchRequest) -> SearchResponse:
        started = time.perf_counter()
        card = await self._directory.open(relationship_id)
        opened = (time.perf_counter() - started) * 1000
        recalled = await self._recall.recall(
            card.scope,
            request.query,
            request.k,
            types=[t.value for t in request.types] if request.types else None,
            layers=await self._directory.inherited_layers(
                card, [layer.value for layer in request.layers] if request.layers else None
            ),
            include_private=may_see_private(self._enforcer, self._principal),
        )
        degraded = (["redis"] if self._directory.redis_degraded else []) + [
            d for d in recalled.degraded if d != "redis" or not self._directory.redis_degraded
        ]
        if self._access is not None:
            self._access.note(
                self._principal,
                "search",
                card.id,
                card.global_user_id,
                [r.id for r, _ in recalled.hits],
            )
        timings = {"resolve": round(opened, 3), **recalled.timings_ms}
        timings["total"] = round((time.perf_counter() - started) * 1000, 3)
        return SearchResponse(
            items=[hit(r, e, recalled.neighbours.get(r.id)) for r, e in recalled.hits],
            degraded=degraded,
            tier=recalled.tier,
            timings_ms=timings,
        )
