"""Reinforcement of recalled memories, batched per process.

Every recall reinforces the memories it returned (they are remembered longer), but not
on the request path and not one queue message per request: a process collects what
was recalled and sends it as one task every ``flush_seconds``. A memory recalled
several times within one window is reinforced once. Reinforcement is best effort: what
a process collected when it dies, or while the queue is away, is not reinforced.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable

from tenancy.ids import RelationshipScope
from tether.core.background import spawn
from tether.core.tasks import QueueUnavailable, TaskQueue

log = logging.getLogger(__name__)

REINFORCE_TASK = "memories.reinforce"  # one relationship (kept for messages in flight)
REINFORCE_BATCH_TASK = "memories.reinforce_batch"
# Relationships per message: bounds a message's size and one task's transaction count.
MAX_PER_MESSAGE = 100

Entry = tuple[str, str, list[str]]  # tenant id, relationship id, memory ids


class ReinforcementBuffer:
    def __init__(self, tasks: TaskQueue, flush_seconds: float) -> None:
        self._tasks = tasks
        self._flush_seconds = flush_seconds
        self._pending: dict[tuple[uuid.UUID, uuid.UUID], set[uuid.UUID]] = {}
        self._timer: asyncio.TimerHandle | None = None

    def add(self, scope: RelationshipScope, memory_ids: Iterable[uuid.UUID]) -> None:
        """Remember that these memories were recalled; sent with the next flush."""
        key = (scope.tenant_id, scope.relationship_id)
        self._pending.setdefault(key, set()).update(memory_ids)
        if self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self._flush_seconds, self._flush_later)

    def _flush_later(self) -> None:
        self._timer = None
        spawn(self.flush(), "reinforcement flush")

    async def flush(self) -> None:
        """Send what was collected (also called at shutdown)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, {}
        entries: list[Entry] = [
            (str(tenant), str(relationship), sorted(str(i) for i in ids))
            for (tenant, relationship), ids in pending.items()
        ]
        for start in range(0, len(entries), MAX_PER_MESSAGE):
            try:
                await self._tasks.send(
                    REINFORCE_BATCH_TASK, [entries[start : start + MAX_PER_MESSAGE]]
                )
            except QueueUnavailable:
                log.info(
                    "reinforcement of %d relationships skipped: the queue is away", len(entries)
                )
                return
