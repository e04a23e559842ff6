"""/v1/relationships/{id}/memories[...]: manual control of a relationship's memories."""

from __future__ import annotations

import uuid
from datetime import datetime

from litestar import Controller, Response, delete, get, patch, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

from tenancy.access.guard import policy
from tether.core.pagination import DEFAULT_LIMIT, Cursor, Limit
from tether.core.text import IdentifierInQuery
from tether.memories import schemas as s
from tether.memories.conflicts import ConflictService
from tether.memories.deps import provide_conflict_service, provide_memory_service
from tether.memories.enums import MemoryType
from tether.memories.services import MemoryService

Memories = NamedDependency[MemoryService]
Conflicts = NamedDependency[ConflictService]
READ = policy("relationship_memory", "read")
WRITE = policy("relationship_memory", "write")
DELETE = policy("relationship_memory", "delete")


class MemoryController(Controller):
    path = "/v1/relationships/{relationship_id:uuid}"
    tags = ["memories"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "memory_service": Provide(provide_memory_service, sync_to_thread=False)
    }

    @get("/memories", operation_id="ListMemories", opt=READ)
    async def list_memories(
        self,
        relationship_id: FromPath[uuid.UUID],
        memory_service: Memories,
        memory_type: FromQuery[MemoryType | None] = None,
        active: FromQuery[bool | None] = None,
        since: FromQuery[datetime | None] = None,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.MemoryPage:
        """Memories in creation order, filtered by type, active state and time."""
        return await memory_service.list(relationship_id, cursor, limit, memory_type, active, since)

    @post("/memories", operation_id="CreateMemory", opt=WRITE)
    async def create(
        self,
        relationship_id: FromPath[uuid.UUID],
        data: JSONBody[s.MemoryCreate],
        memory_service: Memories,
    ) -> Response[s.MemoryRead]:
        """A manual memory (confidence 1). With an ``external_id`` already stored, the
        stored memory is returned with 200 instead of 201 (idempotent create)."""
        memory, created = await memory_service.create(relationship_id, data)
        return Response(memory, status_code=HTTP_201_CREATED if created else HTTP_200_OK)

    @post("/memories/batch", operation_id="CreateMemories", status_code=HTTP_200_OK, opt=WRITE)
    async def create_batch(
        self,
        relationship_id: FromPath[uuid.UUID],
        data: JSONBody[s.MemoryBatchCreate],
        memory_service: Memories,
    ) -> s.MemoryBatchResult:
        """Up to 500 manual memories at once (imports); all or nothing on bad input."""
        return await memory_service.create_many(relationship_id, data.memories)

    @get("/memories/{memory_id:uuid}", operation_id="GetMemory", opt=READ)
    async def get_memory(
        self,
        relationship_id: FromPath[uuid.UUID],
        memory_id: FromPath[uuid.UUID],
        memory_service: Memories,
    ) -> s.MemoryRead:
        return await memory_service.get(relationship_id, memory_id)

    @patch("/memories/{memory_id:uuid}", operation_id="EditMemory", opt=WRITE)
    async def edit(
        self,
        relationship_id: FromPath[uuid.UUID],
        memory_id: FromPath[uuid.UUID],
        data: JSONBody[s.MemoryUpdate],
        memory_service: Memories,
    ) -> s.MemoryRead:
        """Change a memory; the previous state stays in its history."""
        return await memory_service.update(relationship_id, memory_id, data)

    @post(
        "/memories/{memory_id:uuid}/deactivate",
        operation_id="DeactivateMemory",
        status_code=HTTP_200_OK,
        opt=WRITE,
    )
    async def deactivate(
        self,
        relationship_id: FromPath[uuid.UUID],
        memory_id: FromPath[uuid.UUID],
        data: JSONBody[s.MemoryDeactivate],
        memory_service: Memories,
    ) -> s.MemoryRead:
        return await memory_service.deactivate(relationship_id, memory_id, data.reason)

    @delete(
        "/memories/{memory_id:uuid}",
        operation_id="DeleteMemory",
        status_code=HTTP_204_NO_CONTENT,
        opt=DELETE,
    )
    async def delete_memory(
        self,
        relationship_id: FromPath[uuid.UUID],
        memory_id: FromPath[uuid.UUID],
        memory_service: Memories,
    ) -> None:
        """Soft delete: the memory stops being recalled and listed; its history remains."""
        await memory_service.delete(relationship_id, memory_id)

    @get("/memories/{memory_id:uuid}/history", operation_id="ListMemoryHistory", opt=READ)
    async def history(
        self,
        relationship_id: FromPath[uuid.UUID],
        memory_id: FromPath[uuid.UUID],
        memory_service: Memories,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.MemoryVersionPage:
        return await memory_service.history(relationship_id, memory_id, cursor, limit)

    @get("/memories/{memory_id:uuid}/sources", operation_id="GetMemorySources", opt=READ)
    async def sources(
        self,
        relationship_id: FromPath[uuid.UUID],
        memory_id: FromPath[uuid.UUID],
        memory_service: Memories,
    ) -> s.MemorySources:
        """Why Tether remembers this: the turns it was extracted from."""
        return await memory_service.sources(relationship_id, memory_id)

    @get("/consolidations", operation_id="ListConsolidations", opt=READ)
    async def consolidations(
        self,
        relationship_id: FromPath[uuid.UUID],
        memory_service: Memories,
        session_id: FromQuery[IdentifierInQuery] = None,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.ConsolidationPage:
        """The conflict log: every consolidation decision with its reason."""
        return await memory_service.consolidations(relationship_id, session_id, cursor, limit)


class ConflictController(Controller):
    path = "/v1/relationships/{relationship_id:uuid}"
    tags = ["memories"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "conflict_service": Provide(provide_conflict_service, sync_to_thread=False)
    }

    @get("/conflicts", operation_id="ListMemoryConflicts", opt=READ)
    async def list_conflicts(
        self,
        relationship_id: FromPath[uuid.UUID],
        conflict_service: Conflicts,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.ConflictPage:
        """Newer memories held back because the memory they would replace has stronger
        evidence (stated beats inferred; manual memories are never replaced)."""
        return await conflict_service.list(relationship_id, cursor, limit)

    @post(
        "/memories/{memory_id:uuid}/resolve",
        operation_id="ResolveMemoryConflicts",
        status_code=HTTP_200_OK,
        opt=WRITE,
    )
    async def resolve(
        self,
        relationship_id: FromPath[uuid.UUID],
        memory_id: FromPath[uuid.UUID],
        data: JSONBody[s.MemoryResolve],
        conflict_service: Conflicts,
    ) -> s.ConflictResolution:
        """This memory wins every open conflict it is part of (idempotent)."""
        return await conflict_service.resolve(relationship_id, memory_id, data.reason)
