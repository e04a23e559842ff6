"""A worker that cannot reach Postgres retries its tasks until Postgres is back: turns
accepted during the outage become durable and an uploaded document is indexed, not
failed. The worker reaches Postgres through a relay the test cuts (tests/pg_relay.py);
the API keeps its own connection, so it accepts work throughout."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.conftest import start_worker, stop_worker
from tests.pg_relay import relay_to
from tests.support import resolved_relationship, stored_turns
from tether.core.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.worker]

BASES = "/v1/knowledge-bases"


async def _document_status(client: Any, base: str, document: str, headers: Any) -> str:
    response = await client.get(f"{BASES}/{base}/documents/{document}", headers=headers)
    assert response.status_code == 200, response.text
    return str(response.json()["status"])


async def test_tasks_wait_out_a_database_outage_and_finish_once_it_is_over(
    settings: Settings, client: Any, make_tenant: Any, resources: Any
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid = await resolved_relationship(client, gateway, "worker-out")
    created = await client.post(BASES, json={"name": "outage"}, headers=tenant.admin)
    assert created.status_code == 201, created.text
    base = created.json()["id"]

    async with relay_to(settings) as relay:
        relayed = relay.settings_for(settings)
        quick = {"TETHER_WORKER__OUTAGE_RETRY_MAX_SECONDS": "1"}
        worker = await asyncio.to_thread(start_worker, relayed, quick)
        try:
            await relay.cut()
            turns = [
                {"session_id": "s-1", "role": "user", "text": f"停电的时候说的第{i}句 turn {i}"}
                for i in range(3)
            ]
            accepted = await client.post(
                f"/v1/relationships/{rid}/turns", json={"turns": turns}, headers=gateway
            )
            assert accepted.status_code == 202, accepted.text
            uploaded = await client.post(
                f"{BASES}/{base}/documents",
                files={"file": ("kettle.txt", "Descale the kettle monthly. 每月除垢。".encode())},
                headers=tenant.admin,
            )
            assert uploaded.status_code == 202, uploaded.text
            document = uploaded.json()["id"]

            await asyncio.sleep(4)  # the worker's tasks fail on Postgres and are retried
            assert worker.poll() is None
            assert await stored_turns(resources, rid) == 0
            assert await _document_status(client, base, document, tenant.admin) != "failed"

            await relay.open()  # Postgres is back
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                stored = await stored_turns(resources, rid)
                status = await _document_status(client, base, document, tenant.admin)
                if stored == 3 and status in ("ready", "failed"):
                    break
                await asyncio.sleep(0.2)
            assert stored == 3
            assert status == "ready"
        finally:
            await asyncio.to_thread(stop_worker, worker)
