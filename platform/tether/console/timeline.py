"""A page of memories as a timeline: each current memory with the versions it superseded
folded under it (a chain A → B → C shows C with B and A beneath)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from tether.memories.schemas import MemoryRead


@dataclass(slots=True)
class Entry:
    memory: MemoryRead
    older: list[MemoryRead] = field(default_factory=list)


def timeline(items: list[MemoryRead]) -> list[Entry]:
    """Entries in the page's order; a memory whose successor is on the page is folded
    under the newest memory of its chain, one whose successor is not stays an entry."""
    by_id = {m.id: m for m in items}

    def head(memory: MemoryRead) -> uuid.UUID:
        seen = {memory.id}
        current = memory
        while current.superseded_by is not None and current.superseded_by in by_id:
            current = by_id[current.superseded_by]
            if current.id in seen:  # a loop would be a bug elsewhere; stop, don't spin
                break
            seen.add(current.id)
        return current.id

    entries: dict[uuid.UUID, Entry] = {}
    order: list[uuid.UUID] = []
    for memory in items:
        top = head(memory)
        if top not in entries:
            entries[top] = Entry(by_id[top])
            order.append(top)
        if memory.id != top:
            entries[top].older.append(memory)
    return [entries[i] for i in order]
