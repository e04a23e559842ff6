"""Fire-and-forget work after a response (e.g. queueing reinforcement): kept referenced
until done so the event loop does not drop it, and its failure is logged, not raised."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)
_running: set[asyncio.Task[Any]] = set()


def spawn(work: Coroutine[Any, Any, Any], what: str) -> asyncio.Task[Any]:
    task = asyncio.get_running_loop().create_task(work)
    _running.add(task)

    def done(finished: asyncio.Task[Any]) -> None:
        _running.discard(finished)
        if not finished.cancelled() and finished.exception() is not None:
            log.warning("%s failed: %s", what, finished.exception())

    task.add_done_callback(done)
    return task
