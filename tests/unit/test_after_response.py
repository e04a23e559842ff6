"""Background work spawned ``after_response`` inside a request starts only once the
request's response is sent, and still runs when the request fails; elsewhere it starts
at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tether.api.after_response import after_response_middleware
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
