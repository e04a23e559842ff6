"""Background work spawned ``after_response`` inside a request starts only once the
request's response is sent, and still runs when the request fails; elsewhere it starts
at once."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from typing import Any

import pytest

from tether.api.after_response import after_response_middleware
from tether.core import background
from tether.core.background import spawn

HTTP_SCOPE: dict[str, Any] = {"type": "http", "method": "GET", "path": "/", "headers": []}


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


def _app(events: list[str], *, after_response: bool, fail: bool = False) -> Any:
    async def work() -> None:
        events.append("work")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        spawn(work(), "test work", after_response=after_response)
        await asyncio.sleep(0.01)  # long enough for the work to run, were it not held
        if fail:
            raise RuntimeError("failed before answering")
        events.append("answering")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": True})
        await asyncio.sleep(0.01)  # a streamed body: not sent yet
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        await asyncio.sleep(0.01)  # what the request does after answering
        events.append("request done")

    return app


async def _served(app: Any, events: list[str]) -> None:
    async def send(message: dict[str, Any]) -> None:
        events.append(message["type"] + (" (more)" if message.get("more_body") else ""))

    await after_response_middleware(app)(HTTP_SCOPE, _receive, send)
    await asyncio.sleep(0.01)


async def test_work_after_the_response_starts_once_the_last_body_part_is_sent() -> None:
    events: list[str] = []
    await _served(_app(events, after_response=True), events)
    assert events == [
        "answering",
        "http.response.start",
        "http.response.body (more)",
        "http.response.body",
        "work",
        "request done",
    ]


async def test_other_background_work_starts_at_once() -> None:
    events: list[str] = []
    await _served(_app(events, after_response=False), events)
    assert events[0] == "work"


async def test_work_after_the_response_still_runs_when_the_request_fails() -> None:
    events: list[str] = []
    with pytest.raises(RuntimeError):
        await _served(_app(events, after_response=True, fail=True), events)
    await asyncio.sleep(0.01)
    assert events == ["work"]


async def test_outside_a_request_work_after_the_response_starts_at_once() -> None:
    events: list[str] = []

    async def work() -> None:
        events.append("work")

    await spawn(work(), "test work", after_response=True)
    assert events == ["work"]


async def test_two_requests_hold_their_own_work_only() -> None:
    events: list[str] = []
    first_answers = asyncio.Event()

    def app_named(name: str, answer_after: asyncio.Event | None) -> Any:
        async def work() -> None:
            events.append(f"{name} work")

        async def app(scope: Any, receive: Any, send: Any) -> None:
            spawn(work(), "test work", after_response=True)
            if answer_after is not None:
                await answer_after.wait()
                await asyncio.sleep(0.02)
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            events.append(f"{name} answered")
            if answer_after is None:
                first_answers.set()
            await asyncio.sleep(0.02)

        return app

    async def send(message: dict[str, Any]) -> None:
        return None

    slow = after_response_middleware(app_named("slow", first_answers))
    fast = after_response_middleware(app_named("fast", None))
    await asyncio.gather(slow(HTTP_SCOPE, _receive, send), fast(HTTP_SCOPE, _receive, send))
    await asyncio.sleep(0.01)
    # Each request's work came after its own answer, the fast one's before the slow one.
    assert events.index("fast work") > events.index("fast answered")
    assert events.index("slow work") > events.index("slow answered")
    assert events.index("fast work") < events.index("slow answered")


async def test_work_after_the_response_waits_a_bounded_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(background, "AFTER_RESPONSE_MAX_WAIT", 0.01)
    events: list[str] = []

    async def work() -> None:
        events.append("work")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        spawn(work(), "test work", after_response=True)
        await asyncio.sleep(0.1)  # a slow answer, still streaming
        events.append("answered")

    await _served(app, events)
    assert events[:2] == ["work", "answered"]


async def test_work_cancelled_before_it_started_is_closed() -> None:
    """Closed, not left for the garbage collector to warn that it was never awaited."""

    async def work() -> None:
        raise AssertionError("never runs")

    held = work()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        task = spawn(held, "test work", after_response=True)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    await _served(app, [])
    assert inspect.getcoroutinestate(held) == inspect.CORO_CLOSED


async def test_work_after_the_response_runs_when_sending_fails() -> None:
    events: list[str] = []

    async def work() -> None:
        events.append("work")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        spawn(work(), "test work", after_response=True)
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def send(message: dict[str, Any]) -> None:
        raise OSError("the client went away")

    with pytest.raises(OSError, match="went away"):
        await after_response_middleware(app)(HTTP_SCOPE, _receive, send)
    await asyncio.sleep(0.01)
    assert events == ["work"]


async def test_drain_waits_for_the_background_work_running_now() -> None:
    finished: list[str] = []

    async def work(name: str, seconds: float) -> None:
        await asyncio.sleep(seconds)
        finished.append(name)

    async def failing() -> None:
        raise RuntimeError("logged, not raised by drain")

    spawn(work("slow", 0.05), "test work")
    spawn(work("fast", 0.0), "test work")
    spawn(failing(), "test work")
    await background.drain()
    assert sorted(finished) == ["fast", "slow"]
    await background.drain()  # nothing running: returns at once
