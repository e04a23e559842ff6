"""One event loop and one set of Resources per worker process.

Tasks are synchronous Celery functions that run our async services; creating an engine
per task would cost a connection handshake each time, so every process (each prefork
child, after the fork) keeps its own loop, engine and Redis pool for its whole life.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TypeVar

from tether.core.database_errors import DatabaseUnavailable, database_unavailable
from tether.core.resources import Resources, open_resources
from tether.core.settings import Settings

T = TypeVar("T")


class _ProcessRuntime:
    def __init__(self) -> None:
        self._pid: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._resources: Resources | None = None
        self._stack: AsyncExitStack | None = None

    def _ensure(self, settings: Settings) -> tuple[asyncio.AbstractEventLoop, Resources]:
        if self._pid != os.getpid() or self._loop is None or self._resources is None:
            # A forked child must not reuse its parent's sockets: start afresh.
            self._loop = asyncio.new_event_loop()
            self._stack = AsyncExitStack()
            self._resources = self._loop.run_until_complete(
                self._stack.enter_async_context(open_resources(settings))
            )
            self._pid = os.getpid()
        return self._loop, self._resources

    def run(self, settings: Settings, job: Callable[[Resources], Awaitable[T]]) -> T:
        loop, resources = self._ensure(settings)
        return loop.run_until_complete(job(resources))

    def close(self) -> None:
        if self._loop is not None and self._stack is not None and self._pid == os.getpid():
            self._loop.run_until_complete(self._stack.aclose())
            self._loop.close()
        self._loop = self._resources = self._stack = None
        self._pid = None


_runtime = _ProcessRuntime()


def run(settings: Settings, job: Callable[[Resources], Awaitable[T]]) -> T:
    """Run ``job`` on this process's loop with this process's resources. Any failure
    that says Postgres cannot serve now (a lost connection, a full pool, a timeout) is
    raised as ``DatabaseUnavailable``, which tasks retry (``workers.app.OUTAGE_RETRIES``)."""
    try:
        return _runtime.run(settings, job)
    except Exception as exc:
        if isinstance(exc, DatabaseUnavailable) or not database_unavailable(exc):
            raise
        raise DatabaseUnavailable("the memory store cannot be reached") from exc


def close() -> None:
    _runtime.close()
