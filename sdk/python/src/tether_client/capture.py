"""Capture that never blocks the chat: ``capture()`` queues the turn and returns; a
thread (sync client) or a task (async client) sends the queue in batches, each request
with its own deadline (3 s by default), resending after failures (every turn carries an
idempotency key, so a resend is stored once), dropping the oldest turns when the queue
is full (counted, and logged once per interval). Closing flushes; so does leaving the
interpreter."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
import time
import weakref
from typing import Any

import httpx

from tether_client._capture_buffer import (
    Buffer,
    CaptureStats,
    Outcome,
    Pending,
    backoff,
    log_refusal,
    new_turn,
    outcome_of,
    request_of,
)

__all__ = ["AsyncCaptureQueue", "CaptureQueue", "CaptureStats"]


def _send_sync(
    http: httpx.Client, batch: list[Pending], deadline: float
) -> tuple[Outcome, float | None]:
    path, body = request_of(batch)
    try:
        response = http.post(path, json=body, timeout=httpx.Timeout(deadline))
    except httpx.HTTPError:
        return Outcome.RETRY, None
    outcome, wait = outcome_of(response)
    if outcome is Outcome.REFUSED:
        log_refusal(batch, response)
    return outcome, wait


class _QueueBase:
    def __init__(self, capacity: int, deadline: float, linger: float) -> None:
        self.buffer = Buffer(capacity)
        self.deadline = deadline
        self.linger = linger  # wait this long for more turns to batch with the first
        self.closed = False

    def _put(
        self,
        relationship_id: Any,
        text: str,
        role: str,
        session_id: str,
        at: Any,
        idempotency_key: str | None,
    ) -> bool:
        if self.closed:
            self.buffer.count_invalid("capture() after close()")
            return False
        if not isinstance(text, str) or not text or role not in ("user", "assistant"):
            self.buffer.count_invalid(
                f"text must be a non-empty str and role user|assistant, got {role!r}"
            )
            return False
        if not isinstance(session_id, str) or not session_id:
            self.buffer.count_invalid("session_id must be a non-empty str")
            return False
        turn = new_turn(session_id, role, text, at, idempotency_key)
        self.buffer.put(Pending(str(relationship_id), turn))
        return True

    def stats(self) -> CaptureStats:
        return self.buffer.stats()


class CaptureQueue(_QueueBase):
    """The sync client's queue: a daemon thread sends it."""

    def __init__(
        self,
        http: httpx.Client,
        capacity: int = 1000,
        deadline: float = 3.0,
        linger: float = 0.05,
        close_timeout: float = 5.0,
    ) -> None:
        super().__init__(capacity, deadline, linger)
        self._http = http
        self._close_timeout = close_timeout
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._start_lock = threading.Lock()
        atexit.register(_close_at_exit, weakref.ref(self))

    def capture(
        self,
        relationship_id: Any,
        text: str,
        *,
        role: str = "user",
        session_id: str = "default",
        at: Any = None,
        idempotency_key: str | None = None,
    ) -> None:
        """Queue one turn and return at once; never raises."""
        try:
            if self._put(relationship_id, text, role, session_id, at, idempotency_key):
                self._ensure_thread()
        except Exception as exc:  # noqa: BLE001 - the chat must never see our failure
            self.buffer.count_invalid(repr(exc))

    def _ensure_thread(self) -> None:
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="tether-capture", daemon=True
                    )
                    self._thread.start()

    def _run(self) -> None:
        failures = 0
        while True:
            with self.buffer.changed:
                while not self.buffer.has_items() and not self._stop.is_set():
                    self.buffer.changed.wait(0.5)
            if self._stop.is_set():
                return  # close() flushed what it could; it counts the rest
            if self.linger:
                time.sleep(self.linger)
            batch = self.buffer.take()
            if not batch:
                continue
            outcome, retry_after = _send_sync(self._http, batch, self.deadline)
            self.buffer.settle(batch, outcome)
            if outcome is Outcome.RETRY:
                failures += 1
                self._stop.wait(backoff(failures, retry_after))
            else:
                failures = 0

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued turn is sent or refused; False on timeout."""
        end = None if timeout is None else time.monotonic() + timeout
        with self.buffer.changed:
            while not self.buffer.empty:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self.buffer.changed.wait(0.1 if left is None else min(left, 0.1))
        return True

    def close(self, timeout: float | None = None) -> None:
        """Flush (up to ``timeout``, default ``close_timeout``), then stop; what is still
        queued is counted as dropped and logged."""
        if self.closed:
            return
        self.closed = True
        if self._thread is not None:
            self.flush(self._close_timeout if timeout is None else timeout)
            self._stop.set()
            with self.buffer.changed:
                self.buffer.changed.notify_all()
            self._thread.join(self.deadline + 1)
        self.buffer.drop_rest("unsent when the client closed")


def _close_at_exit(ref: weakref.ReferenceType[CaptureQueue]) -> None:
    queue = ref()
    if queue is not None:
        queue.close()


class AsyncCaptureQueue(_QueueBase):
    """The async client's queue: a task on the running loop sends it."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        capacity: int = 1000,
        deadline: float = 3.0,
        linger: float = 0.05,
        close_timeout: float = 5.0,
    ) -> None:
        super().__init__(capacity, deadline, linger)
        self._http = http
        self._close_timeout = close_timeout
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        atexit.register(_drain_at_exit, weakref.ref(self))

    def capture(
        self,
        relationship_id: Any,
        text: str,
        *,
        role: str = "user",
        session_id: str = "default",
        at: Any = None,
        idempotency_key: str | None = None,
    ) -> None:
        """Queue one turn and return at once (not a coroutine); never raises."""
        try:
            if self._put(relationship_id, text, role, session_id, at, idempotency_key):
                self._ensure_task()
        except Exception as exc:  # noqa: BLE001 - the chat must never see our failure
            self.buffer.count_invalid(repr(exc))

    def _ensure_task(self) -> None:
        if self._task is None or self._task.done():
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(self._wake))
        if self._wake is not None:
            self._wake.set()

    async def _run(self, wake: asyncio.Event) -> None:
        failures = 0
        while True:
            if not self.buffer.has_items():
                wake.clear()
                await wake.wait()
            if self.linger:
                await asyncio.sleep(self.linger)
            batch = self.buffer.take()
            if not batch:
                continue
            outcome, retry_after = await self._send(batch)
            self.buffer.settle(batch, outcome)
            if outcome is Outcome.RETRY:
                failures += 1
                await asyncio.sleep(backoff(failures, retry_after))
            else:
                failures = 0

    async def _send(self, batch: list[Pending]) -> tuple[Outcome, float | None]:
        path, body = request_of(batch)
        try:
            async with asyncio.timeout(self.deadline):
                response = await self._http.post(path, json=body)
        except (httpx.HTTPError, TimeoutError):
            return Outcome.RETRY, None
        outcome, wait = outcome_of(response)
        if outcome is Outcome.REFUSED:
            log_refusal(batch, response)
        return outcome, wait

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued turn is sent or refused; False on timeout."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self.buffer.empty:
            if end is not None and time.monotonic() >= end:
                return False
            await asyncio.sleep(0.02)
        return True

    async def aclose(self, timeout: float | None = None) -> None:
        if self.closed:
            return
        self.closed = True
        if self._task is not None:
            await self.flush(self._close_timeout if timeout is None else timeout)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.buffer.drop_rest("unsent when the client closed")

    def drain_blocking(self, base_url: str, headers: dict[str, str], budget: float) -> None:
        """At interpreter exit the loop is gone: send what is left with a sync client."""
        end = time.monotonic() + budget
        with httpx.Client(base_url=base_url, headers=headers) as http:
            while self.buffer.has_items() and time.monotonic() < end:
                batch = self.buffer.take()
                outcome, _ = _send_sync(http, batch, min(self.deadline, end - time.monotonic()))
                self.buffer.settle(batch, outcome)
                if outcome is Outcome.RETRY:
                    break
        self.buffer.drop_rest("unsent at interpreter exit")


def _drain_at_exit(ref: weakref.ReferenceType[AsyncCaptureQueue]) -> None:
    queue = ref()
    if queue is not None and not queue.closed and queue.buffer.has_items():
        http = queue._http
        queue.drain_blocking(str(http.base_url), dict(http.headers), queue._close_timeout)
