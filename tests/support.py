"""Helpers shared by test modules (not fixtures)."""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import numpy as np
from redis.asyncio import Redis
from sqlalchemy import event, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from tether.app import bind_resources, create_app, with_outer_middleware
from tether.core.database import async_url
from tether.core.resources import Resources, open_resources
from tether.core.settings import Settings
from tether.recall.partition import Partition
from tether.turns.models import Turn

# Memories of one relationship in English and Chinese, for the snapshot tests.
MIXED_MEMORIES = [
    "The user plays the cello in a string quartet",
    "The user's sister lives in Lyon",
    "用户每周六去爬山",
    "用户喜欢吃四川火锅",
    "The user is allergic to peanuts",
    "用户的猫叫小白",
]


@contextmanager
def count_sql(resources: Resources, *, with_parameters: bool = False) -> Iterator[list[str]]:
    """Every SQL statement the app's engine runs inside the block (followed by its
    parameters when asked)."""
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_args: Any) -> None:
        statements.append(f"{statement} {parameters!r}" if with_parameters else statement)

    event.listen(resources.engine.sync_engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(resources.engine.sync_engine, "before_cursor_execute", record)


def wait_until(predicate: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


async def wait_for_hot_copy(redis: Redis, relationship_id: object, seconds: float = 5) -> None:
    """After a cold read, the partition is filled into the hot tiers in the background:
    wait until its Redis copy exists (the filling process holds it locally by then)."""
    deadline = time.monotonic() + seconds
    while not await redis.keys(f"tether:hot*:*:{relationship_id}"):
        assert time.monotonic() < deadline, f"no hot copy of {relationship_id}"
        await asyncio.sleep(0.02)


def resolve_body(
    user: str = "u-1", persona: str = "p-1", creator: str = "c-1", facet: str = "default"
) -> dict[str, Any]:
    return {
        "user": {"external_id": user},
        "facet": facet,
        "persona": {"external_id": persona, "creator_external_id": creator},
    }


async def resolved_relationship(client: httpx.AsyncClient, headers: Any, user: str) -> str:
    """The id of the relationship ``user`` resolves to (created if new)."""
    resolved = await client.post("/v1/resolve", json=resolve_body(user), headers=headers)
    assert resolved.status_code in (200, 201), resolved.text
    return str(resolved.json()["relationship_id"])


CHESS, GO = "The user plays chess", "The user plays go"


@dataclass(frozen=True)
class HotChessAndGo:
    """A relationship holding two memories (CHESS, GO), read once so that its partition
    is in the hot tiers: for tests of what a write's invalidation leaves behind."""

    memories: str  # the relationship's memories path
    go_id: str  # the memory GO
    contents: Callable[[], Awaitable[list[str]]]  # what a search for "plays" recalls, sorted


async def hot_chess_and_go(
    client: httpx.AsyncClient, headers: Any, hot_redis: Redis, user: str
) -> HotChessAndGo:
    rid = await resolved_relationship(client, headers, user)
    memories = f"/v1/relationships/{rid}/memories"
    await client.post(memories, json={"content": CHESS}, headers=headers)
    go = await client.post(memories, json={"content": GO}, headers=headers)
    search = f"/v1/relationships/{rid}/search"

    async def contents() -> list[str]:
        answer = (await client.post(search, json={"query": "plays"}, headers=headers)).json()
        return sorted(r["content"] for r in answer["items"])

    assert await contents() == [CHESS, GO]
    await wait_for_hot_copy(hot_redis, rid)
    return HotChessAndGo(memories, str(go.json()["id"]), contents)


async def delete_go_cut_off(
    settings: Settings, pair: HotChessAndGo, headers: Any, socket_dir: Path
) -> None:
    """Delete GO through an API process that cannot reach the hot Redis (stopped after)."""
    absent = settings.model_copy(update={"hot_redis_url": f"unix://{socket_dir}/absent.sock"})
    async with app_client(absent) as writer:
        deleted = await writer.delete(f"{pair.memories}/{pair.go_id}", headers=headers)
        assert deleted.status_code == 204, deleted.text


_owners: dict[str, async_sessionmaker[AsyncSession]] = {}


def owner_sessions(resources: Resources) -> async_sessionmaker[AsyncSession]:
    """Sessions as the database owner (the embedded server's superuser), past row-level
    security: for tests that write or inspect rows of any tenant directly. The app's
    own sessions see only the tenant they name. A small pool per module's database
    (closed with its ``resources``): reconnecting each time would slow the writes."""
    url = resources.settings.require_owner_url()
    if url not in _owners:
        engine = create_async_engine(async_url(url), pool_size=1, max_overflow=4)
        _owners[url] = async_sessionmaker(engine, expire_on_commit=False)
    return _owners[url]


async def close_owner_sessions(settings: Settings) -> None:
    factory = _owners.pop(settings.require_owner_url(), None)
    if factory is not None and factory.kw.get("bind") is not None:
        await factory.kw["bind"].dispose()


async def stored_turns(resources: Resources, relationship_id: str) -> int:
    """How many turns of the relationship are in Postgres (whatever its tenant)."""
    async with owner_sessions(resources)() as session:
        count = select(func.count()).where(Turn.relationship_id == relationship_id)
        return int(await session.scalar(count) or 0)


@asynccontextmanager
async def app_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A client of another app in this process, on its own resources (``settings``)."""
    app = create_app(settings)
    async with open_resources(settings) as resources:
        bind_resources(app, resources)
        transport = httpx.ASGITransport(app=with_outer_middleware(app))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            yield client
        app.state.partitions.close()  # as the lifespan does: no retry outlives the app
        await app.state.access_log.close()
        await app.state.embedder.aclose()


def redis_down_client(
    settings: Settings, tmp_path: Path
) -> AbstractAsyncContextManager[httpx.AsyncClient]:
    """A client of an app on the same Postgres whose Redis (both: the hot tier's too,
    as in a deployment with one Redis) is unreachable."""
    absent = f"unix://{tmp_path}/absent.sock"
    return app_client(settings.model_copy(update={"redis_url": absent, "hot_redis_url": absent}))


@contextmanager
def stalled_redis() -> Iterator[str]:
    """The URL of a "Redis" that accepts connections and never answers (a stalled
    server, or a network that drops packets), for as long as the block runs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    try:
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    finally:
        listener.close()


def assert_same_ranking_columns(served: Partition, rows: Partition) -> None:
    """Every per-memory column a ranking reads, but the BM25 index and the vectors."""
    a, b = served.index, rows.index
    for column in ("keys", "importance", "confidence", "strength", "neighbours"):
        assert np.array_equal(getattr(a, column), getattr(b, column)), column
    assert np.array_equal(a.reference_time, b.reference_time)
    for name in ("kinds", "layers", "occurred", "expires_at", "private"):
        assert np.array_equal(getattr(served, name), getattr(rows, name)), name
    assert served.keys == rows.keys


def load_migration(file_name: str) -> ModuleType:
    """A migration module of migrations/versions, to read its constants."""
    path = Path(__file__).parents[1] / "migrations" / "versions" / file_name
    spec = importlib.util.spec_from_file_location(f"migration_{path.stem}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def stored_file(resources: Resources, tenant_id: str, document_id: str) -> bytes:
    """The bytes Postgres holds for a knowledge document (empty: none), read as its tenant."""
    import uuid

    from tether.core.ids import TenantId
    from tether.core.tenant_sessions import tenant_transaction
    from tether.knowledge.files import FileRepository

    tenant = TenantId(uuid.UUID(tenant_id))
    async with tenant_transaction(resources.sessions, tenant) as session:
        files = FileRepository(session, tenant)
        return b"".join([piece async for piece in files.stream(uuid.UUID(document_id))])
