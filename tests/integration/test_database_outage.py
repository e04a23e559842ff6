"""When Postgres cannot be reached (a failover, a restart, a cut network), requests that
need it answer 503 ``database_unavailable`` with ``Retry-After``, not a 500, and the
service recovers by itself once Postgres is back. The outage is real: the app reaches
Postgres through a TCP relay that the test cuts (every open connection and the
listener) and then restores on the same port."""

from __future__ import annotations

import asyncio
import glob
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from typing import Any
from urllib.parse import urlsplit

import asyncpg.exceptions as pg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from tests.support import app_client, resolve_body
from tether.core.database import create_engine
from tether.core.database_errors import DatabaseUnavailable, connect_failed, database_unavailable
from tether.core.settings import Settings

pytestmark = pytest.mark.integration


class Relay:
    """127.0.0.1:``port`` → the Postgres unix socket, until cut."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def open(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()
        self._writers.clear()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(self.socket_path)
        self._writers |= {writer, upstream_writer}
        await asyncio.gather(
            _pipe(reader, upstream_writer), _pipe(upstream_reader, writer), return_exceptions=True
        )

    def url(self, database_url: str) -> str:
        database = urlsplit(database_url).path
        return f"postgresql://postgres:@127.0.0.1:{self.port}{database}"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        with suppress(Exception):
            writer.close()


@asynccontextmanager
async def relay_to(settings: Settings) -> AsyncIterator[Relay]:
    socket_dir = urlsplit(settings.require_database_url()).query.removeprefix("host=")
    (socket_path,) = glob.glob(f"{socket_dir}/.s.PGSQL.*[0-9]")
    relay = Relay(socket_path)
    await relay.open()
    try:
        yield relay
    finally:
        with suppress(Exception):
            await relay.cut()


@asynccontextmanager
async def dropping_listener(port: int = 0) -> AsyncIterator[int]:
    """A listener on ``port`` that closes every connection as soon as it is accepted."""

    async def drop(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(drop, "127.0.0.1", port)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def test_an_unreachable_database_is_a_503_and_the_service_recovers(
    settings: Settings, client: Any, make_tenant: Any
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    resolved = await client.post("/v1/resolve", json=resolve_body("outage"), headers=headers)
    rid = resolved.json()["relationship_id"]
    memories = f"/v1/relationships/{rid}/memories"
    async with relay_to(settings) as relay:
        relayed = settings.model_copy(update={"database_url": relay.url(settings.database_url)})
        async with app_client(relayed) as api:
            assert (await api.get(memories, headers=headers)).status_code == 200

            await relay.cut()
            down = await api.get(memories, headers=headers)
            assert down.status_code == 503, down.text
            assert down.headers["content-type"].startswith("application/problem+json")
            assert down.json()["code"] == "database_unavailable"
            assert down.json()["request_id"]
            assert int(down.headers["retry-after"]) >= 1
            written = await api.post(memories, json={"content": "lost?"}, headers=headers)
            assert written.status_code == 503, written.text
            health = await api.get("/health")  # never fails; says what is down
            assert health.status_code == 200, health.text
            assert health.json()["components"]["postgres"]["status"] == "down"
            assert "DatabaseUnavailable" in health.json()["components"]["postgres"]["detail"]
            assert (await api.get("/ready")).status_code == 503

            # Postgres accepts connections and drops them (starting up, crashing).
            async with dropping_listener(relay.port):
                dropped = await api.get(memories, headers=headers)
            assert dropped.status_code == 503, dropped.text
            assert dropped.json()["code"] == "database_unavailable"

            await relay.open()  # the same port: Postgres is back
            back = await api.get(memories, headers=headers)
            assert back.status_code == 200, back.text
            assert back.json()["items"] == []  # the write during the outage was refused


def _translated(cause: BaseException) -> DBAPIError:
    """``cause`` as SQLAlchemy's asyncpg adapter raises it: a DBAPIError whose ``orig``
    was raised from the asyncpg exception."""
    orig = Exception(str(cause))
    orig.__cause__ = cause
    return DBAPIError("SELECT 1", {}, orig)


def test_only_connection_failures_count_as_the_database_being_unavailable() -> None:
    assert database_unavailable(DatabaseUnavailable())
    lost = DBAPIError("SELECT 1", {}, Exception("gone"), connection_invalidated=True)
    assert database_unavailable(lost)
    assert database_unavailable(PoolTimeout("QueuePool limit of size 10 overflow 5 reached"))
    assert database_unavailable(_translated(pg.ConnectionDoesNotExistError("closed")))
    assert database_unavailable(_translated(pg.AdminShutdownError("terminated")))
    # Statements that failed, and misuse of a connection, are bugs (500s).
    assert not database_unavailable(_translated(pg.InterfaceError("another operation")))
    assert not database_unavailable(IntegrityError("INSERT", {}, Exception("duplicate key")))
    assert not database_unavailable(_translated(pg.UndefinedColumnError("no such column")))
    assert not database_unavailable(ValueError(str(uuid.uuid4())))


def test_connecting_fails_as_unavailable_only_when_postgres_cannot_serve() -> None:
    for failure in (
        ConnectionRefusedError(111, "refused"),
        TimeoutError(),
        OSError(113, "No route to host"),
        pg.CannotConnectNowError("the database system is starting up"),
        pg.TooManyConnectionsError("sorry, too many clients already"),
        pg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
    ):
        assert connect_failed(failure), failure
    # A wrong password or database name is a configuration error, not an outage.
    for failure in (pg.InvalidPasswordError("bad"), pg.InvalidCatalogNameError("no db")):
        assert not connect_failed(failure), failure


@pytest.mark.parametrize("listening", [False, True], ids=["refused", "dropped"])
async def test_the_engine_raises_database_unavailable_when_connecting_fails(
    settings: Settings, listening: bool
) -> None:
    async with AsyncExitStack() as stack:
        port = await stack.enter_async_context(dropping_listener()) if listening else 1
        url = f"postgresql://postgres:@127.0.0.1:{port}/absent"
        engine = create_engine(settings.model_copy(update={"database_url": url}))
        stack.push_async_callback(engine.dispose)
        with pytest.raises(DatabaseUnavailable) as raised:
            async with engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        assert connect_failed(raised.value.__cause__ or ValueError())
