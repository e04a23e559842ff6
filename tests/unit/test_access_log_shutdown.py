"""The access log at shutdown with the database away: the last flush fails, the events
are reported once, and no retry outlives the app (it used to re-arm its timer forever)."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from tenancy.audit.access import AccessLog
from tenancy.enums import Role
from tenancy.ids import ApiKeyId
from tenancy.principal import Principal
from tether.core.ids import TenantId


async def test_a_shutdown_with_the_database_away_stops_retrying(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Port 9 (discard) refuses: a real connection attempt that fails at once.
    engine = create_async_engine("postgresql+asyncpg://nobody@127.0.0.1:9/none")
    log = AccessLog(async_sessionmaker(engine), flush_seconds=0.05)
    caller = Principal(ApiKeyId(uuid.uuid4()), TenantId(uuid.uuid4()), Role.GATEWAY, None, "local")
    log.note(caller, "search", uuid.uuid4(), None, [uuid.uuid4()])
    with caplog.at_level(logging.WARNING, logger="tenancy.audit.access"):
        assert await log.close() == 0
        caplog.clear()
        await asyncio.sleep(0.3)  # several flush intervals
    # Nothing retried after close (other apps in this test process may log their own).
    assert [r for r in caplog.records if str(caller.tenant_id) in r.getMessage()] == []
    await engine.dispose()


async def test_close_reports_what_it_could_not_write(caplog: pytest.LogCaptureFixture) -> None:
    engine = create_async_engine("postgresql+asyncpg://nobody@127.0.0.1:9/none")
    log = AccessLog(async_sessionmaker(engine), flush_seconds=60)
    caller = Principal(ApiKeyId(uuid.uuid4()), TenantId(uuid.uuid4()), Role.GATEWAY, None, "eu")
    for _ in range(3):
        log.note(caller, "context", uuid.uuid4(), None)
    with caplog.at_level(logging.ERROR, logger="tenancy.audit.access"):
        await log.close()
    assert "3 events not written at shutdown" in caplog.text
    await engine.dispose()
