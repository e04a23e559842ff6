"""Fire-and-forget work (e.g. queueing reinforcement, filling a cache): kept referenced
until done so the event loop does not drop it, and its failure is logged, not raised.

Work spawned ``after_response`` during a request starts once that request's response is
sent (the API's outermost middleware marks it, see ``responding``), or after
``AFTER_RESPONSE_MAX_WAIT`` seconds: a cold read's fill costs tens of milliseconds of CPU
and must not delay the answer that found the partition cold, but neither may a slow or
streamed answer hold it back for long (decision 0016)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

log = logging.getLogger(__name__)
_running: set[asyncio.Task[Any]] = set()
AFTER_RESPONSE_MAX_WAIT = 1.0
# The current request's "response sent" event (None outside a request).
_response_sent: ContextVar[asyncio.Event | None] = ContextVar("response_sent", default=None)


@contextmanager
def responding() -> Iterator[asyncio.Event]:
    """Around one request: the event to set once its response is sent, which work
    spawned ``after_response`` inside it waits for. It is set on leaving in any case
    (a request that failed before answering must not hold its work back)."""
    event = asyncio.Event()
    token = _response_sent.set(event)
    try:
        yield event
    finally:
        event.set()
        _response_sent.reset(token)


async def _once_set(event: asyncio.Event, work: Coroutine[Any, Any, Any]) -> Any:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), AFTER_RESPONSE_MAX_WAIT)
    return await work


def spawn(
    work: Coroutine[Any, Any, Any], what: str, *, after_response: bool = False
) -> asyncio.Task[Any]:
    """Run ``work`` in the background; ``after_response``: inside a request, only once
    its response is sent (at once elsewhere)."""
    event = _response_sent.get() if after_response else None
    held = work
    if event is not None and not event.is_set():
        work = _once_set(event, work)
    task = asyncio.get_running_loop().create_task(work)
    # Cancelled before it started (a shutdown): closed, or Python warns it was never
    # awaited. Closing a coroutine that ran is a no-op.
    task.add_done_callback(lambda _: held.close())
    _running.add(task)

    def done(finished: asyncio.Task[Any]) -> None:
        _running.discard(finished)
        if not finished.cancelled() and finished.exception() is not None:
            log.warning("%s failed: %s", what, finished.exception())

    task.add_done_callback(done)
    return task


async def drain() -> None:
    """Wait for the background work of this event loop that is running now (tests, and
    before shutdown)."""
    loop = asyncio.get_running_loop()
    running = [task for task in _running if task.get_loop() is loop and not task.done()]
    await asyncio.gather(*running, return_exceptions=True)
