"""Sending Celery tasks by name from the API process.

The API never imports the worker package: it publishes ``name`` + JSON arguments and
the worker resolves the name. Publishing is synchronous in kombu, so it runs in a
thread; it fails fast (no retries, short socket timeouts) because a caller with a
fallback must learn quickly that the broker is away.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import anyio.to_thread
from celery import Celery

from tether.core import task_queues
from tether.core.redis_client import broker_url
from tether.core.settings import Settings
from tether.core.telemetry import publishing

log = logging.getLogger(__name__)

BROKER_TIMEOUT_SECONDS = 1.0
# After a failed publish, callers go straight to their fallback for this long instead
# of paying the connection timeout on every request.
BROKER_BACKOFF_SECONDS = 5.0


class QueueUnavailable(Exception):
    """The broker did not take the task."""


def celery_sender(url: str, visibility_timeout: int) -> Celery:
    """A Celery app configured only to publish (shared by the API and tests)."""
    app = Celery("tether-sender", broker=broker_url(url), set_as_current=False)
    app.conf.update(
        broker_connection_timeout=BROKER_TIMEOUT_SECONDS,
        broker_connection_retry=False,
        broker_connection_max_retries=0,
        broker_transport_options={
            "visibility_timeout": visibility_timeout,
            "socket_connect_timeout": BROKER_TIMEOUT_SECONDS,
            "socket_timeout": BROKER_TIMEOUT_SECONDS,
        },
        task_serializer="json",
        task_routes=task_queues.ROUTES,
        task_default_queue=task_queues.DEFAULT,
    )
    return app


class TaskQueue:
    def __init__(self, settings: Settings) -> None:
        self._app = celery_sender(
            settings.require_broker_url(), settings.worker.visibility_timeout_seconds
        )
        self._down_until = 0.0

    def send_now(self, name: str, args: Sequence[Any]) -> None:
        """Publish from synchronous code (a thread, a worker)."""
        if time.monotonic() < self._down_until:
            raise QueueUnavailable("the broker failed moments ago; not retrying yet")
        try:
            # The headers carry this trace to the worker (it runs in a thread: anyio
            # copies the caller's context into it, so the request span is the parent).
            with publishing(name) as headers:
                self._app.send_task(name, args=list(args), retry=False, headers=headers)
        except Exception as exc:  # kombu raises many types; all mean "not queued"
            self._down_until = time.monotonic() + BROKER_BACKOFF_SECONDS
            raise QueueUnavailable(f"{type(exc).__name__}: {exc}") from exc

    async def send(self, name: str, args: Sequence[Any]) -> None:
        """Publish without blocking the event loop; QueueUnavailable if it was not taken."""
        if time.monotonic() < self._down_until:
            raise QueueUnavailable("the broker failed moments ago; not retrying yet")
        await anyio.to_thread.run_sync(self.send_now, name, args)

    def close(self) -> None:
        self._app.close()
