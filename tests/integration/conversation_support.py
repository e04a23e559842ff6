"""Helpers for the recap, flags and preview tests: sessions with chosen timestamps,
waiting for the worker's extraction, and counting a relationship's rows."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support import resolve_body

TABLES = ("turns", "chat_sessions", "memories", "memory_versions", "consolidation_log")


async def relationship(client: httpx.AsyncClient, headers: dict[str, str], user: str) -> str:
    response = await client.post("/v1/resolve", json=resolve_body(user), headers=headers)
    assert response.status_code in (200, 201), response.text
    return str(response.json()["relationship_id"])


async def say(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    rid: str,
    session_id: str,
    lines: list[tuple[str, str]],
    at: datetime,
    *,
    end: bool = True,
    **flags: bool,
) -> None:
    """The lines as one session's turns, a second apart from ``at``; then end it."""
    turns = [
        {
            "session_id": session_id,
            "role": role,
            "text": line,
            "at": (at + timedelta(seconds=i)).isoformat(),
            **flags,
        }
        for i, (role, line) in enumerate(lines)
    ]
    response = await client.post(
        f"/v1/relationships/{rid}/turns", json={"turns": turns}, headers=headers
    )
    assert response.status_code == 202, response.text
    if end:
        ended = await client.post(
            f"/v1/relationships/{rid}/sessions/{session_id}/end", headers=headers
        )
        assert ended.status_code == 202, ended.text


async def wait_extracted(
    engine: AsyncEngine, rid: str, session_id: str, seconds: float = 60
) -> None:
    """Until the worker marked the session extracted."""
    deadline = time.monotonic() + seconds
    query = text(
        "SELECT extracted_at IS NOT NULL FROM chat_sessions "
        "WHERE relationship_id = :rid AND session_id = :sid"
    )
    while time.monotonic() < deadline:
        async with engine.connect() as connection:
            done = (await connection.execute(query, {"rid": rid, "sid": session_id})).scalar()
        if done:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"session {session_id} was not extracted")


async def row_counts(engine: AsyncEngine, rid: str) -> dict[str, int]:
    counts = {}
    async with engine.connect() as connection:
        for table in TABLES:
            query = text(f"SELECT count(*) FROM {table} WHERE relationship_id = :rid")  # noqa: S608
            counts[table] = int((await connection.execute(query, {"rid": rid})).scalar_one())
    return counts
