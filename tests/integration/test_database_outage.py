"""When Postgres cannot be reached (a failover, a restart, a cut network), requests that
need it answer 503 ``database_unavailable`` with ``Retry-After``, not a 500, and the
service recovers by itself once Postgres is back. The outage is real: the app reaches
Postgres through a TCP relay (tests/pg_relay.py) that the test cuts, restores or stalls."""

from __future__ import annotations

import asyncio
import time
import uuid
from contextlib import AsyncExitStack
from typing import Any

import asyncpg.exceptions as pg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from tests.pg_relay import dropping_listener, relay_to
from tests.support import app_client, resolved_relationship
from tether.core.database import create_engine
from tether.core.database_errors import DatabaseUnavailable, connect_failed, database_unavailable
from tether.core.settings import DatabaseSettings, Settings

pytestmark = pytest.mark.integration


async def _memories_of_a_new_relationship(
    client: Any, make_tenant: Any, name: str
) -> tuple[dict[str, str], str]:
    """A gateway key's headers and the memories path of a relationship just resolved."""
    headers = await (await make_tenant()).key("gateway")
    rid = await resolved_relationship(client, headers, name)
    return headers, f"/v1/relationships/{rid}/memories"


async def test_an_unreachable_database_is_a_503_and_the_service_recovers(
    settings: Settings, client: Any, make_tenant: Any
) -> None:
    headers, memories = await _memories_of_a_new_relationship(client, make_tenant, "outage")
    async with relay_to(settings) as relay, app_client(relay.settings_for(settings)) as api:
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


def _with_timeouts(settings: Settings, url: str, seconds: float) -> Settings:
    db = settings.db.model_copy(
        update={"statement_timeout_seconds": seconds, "connect_timeout_seconds": seconds}
    )
    return settings.model_copy(update={"database_url": url, "db": db})


async def test_connections_that_died_in_the_pool_are_replaced_without_an_error(
    settings: Settings, client: Any, make_tenant: Any
) -> None:
    # A restart or failover that completed between two requests: the pooled connections
    # are closed; the first request after it reconnects instead of failing.
    headers, memories = await _memories_of_a_new_relationship(client, make_tenant, "restart")
    async with relay_to(settings) as relay, app_client(relay.settings_for(settings)) as api:
        assert (await api.get(memories, headers=headers)).status_code == 200
        await relay.cut()
        await relay.open()
        again = await api.get(memories, headers=headers)
        assert again.status_code == 200, again.text


async def test_a_network_that_drops_everything_is_a_503_within_the_timeouts(
    settings: Settings, client: Any, make_tenant: Any
) -> None:
    headers, memories = await _memories_of_a_new_relationship(client, make_tenant, "stall")
    async with relay_to(settings) as relay:
        stalling = _with_timeouts(settings, relay.url(settings.database_url), 1)
        async with app_client(stalling) as api:
            assert (await api.get(memories, headers=headers)).status_code == 200

            relay.stall()  # the pooled connections stay open and get no answer
            started = time.monotonic()
            down = await api.get(memories, headers=headers)
            waited = time.monotonic() - started
            assert down.status_code == 503, down.text
            assert down.json()["code"] == "database_unavailable"
            # The checkout's ping (1 s), then one reconnect (1 s): not TCP's minutes.
            assert waited < 10, waited

            relay.flowing.set()
            back = await api.get(memories, headers=headers)
            assert back.status_code == 200, back.text


async def test_a_statement_past_the_timeout_closes_its_connection_and_is_cancelled(
    settings: Settings,
) -> None:
    engine = create_engine(_with_timeouts(settings, settings.require_database_url(), 1))
    # Without the application role: under it, pg_stat_activity hides others' queries.
    observer = create_engine(settings.model_copy(update={"db": DatabaseSettings()}))
    marker = f"tether-timeout-{uuid.uuid4()}"
    running = text("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE :q")
    pattern = {"q": f"SELECT pg_sleep(30), '{marker}'%"}

    async def sleeping() -> None:
        async with engine.connect() as connection:
            with pytest.raises(DatabaseUnavailable, match="did not answer in time"):
                await connection.execute(text(f"SELECT pg_sleep(30), '{marker}'"))
            assert connection.invalidated

    try:
        # Autocommit: a transaction would see the activity as of its first look.
        async with observer.connect() as connection:
            watch = await connection.execution_options(isolation_level="AUTOCOMMIT")
            statement = asyncio.create_task(sleeping())
            await asyncio.sleep(0.5)
            assert await watch.scalar(running, pattern) == 1  # the observer sees it run
            await statement
            # asyncpg asked the server to cancel it: it does not run on without a client.
            for _ in range(50):
                if not await watch.scalar(running, pattern):
                    break
                await asyncio.sleep(0.1)
            assert await watch.scalar(running, pattern) == 0
        async with engine.connect() as connection:
            assert await connection.scalar(text("SELECT 1")) == 1
    finally:
        await engine.dispose()
        await observer.dispose()


async def test_a_statement_on_a_connection_that_stops_answering_is_unavailable(
    settings: Settings,
) -> None:
    async with relay_to(settings) as relay:
        engine = create_engine(_with_timeouts(settings, relay.url(settings.database_url), 0.5))
        try:
            async with engine.connect() as connection:
                assert await connection.scalar(text("SELECT 1")) == 1
                relay.stall()
                with pytest.raises(DatabaseUnavailable, match="did not answer in time"):
                    await connection.execute(text("SELECT 2"))
                assert connection.invalidated
            relay.flowing.set()
            async with engine.connect() as connection:
                assert await connection.scalar(text("SELECT 3")) == 3
        finally:
            await engine.dispose()


async def test_a_write_refused_as_read_only_is_unavailable_and_drops_the_pool(
    settings: Settings,
) -> None:
    # What a demoted primary answers after a failover the pool's connections predate.
    engine = create_engine(settings)
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SET TRANSACTION READ ONLY"))
            with pytest.raises(DatabaseUnavailable, match="read-only"):
                await connection.execute(text("CREATE TABLE read_only_probe (x int)"))
            assert connection.invalidated
        async with engine.connect() as connection:
            assert await connection.scalar(text("SELECT 1")) == 1
    finally:
        await engine.dispose()
