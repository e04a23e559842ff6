"""Errors of the memory API."""

from __future__ import annotations

from tether.core.errors import Conflict, InvalidInput, NotFound


class MemoryNotFound(NotFound):
    code = "memory_not_found"
    title = "Memory not found"


class InvalidMemories(InvalidInput):
    code = "invalid_memories"
    title = "The memories are invalid; nothing was stored"


class ExternalIdTaken(Conflict):
    code = "external_id_taken"
    title = "That external_id is already used by a memory you cannot read or that was deleted"


class MemoryNotResolvable(Conflict):
    code = "memory_not_resolvable"
    title = "The memory was deleted or replaced since: it can no longer win a conflict"
