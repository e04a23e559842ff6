"""The beat's audit tasks run in a real worker: ``audit.seal`` seals every tenant's
access events, ``audit.checkpoint`` signs every tenant's head."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support import resolve_body
from tether.core.resources import Resources

pytestmark = pytest.mark.integration


async def test_the_worker_seals_and_checkpoints_every_tenant(
    client, make_tenant, resources: Resources, celery_worker
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rel = (await client.post("/v1/resolve", json=resolve_body("beat-user"), headers=gateway)).json()
    rid = rel["relationship_id"]
    for _ in range(3):
        await client.get(f"/v1/relationships/{rid}/memories", headers=gateway)
    page = await client.get(
        "/v1/audit/access", params={"relationship_id": rid}, headers=tenant.admin
    )
    assert [e["sealed_seq"] for e in page.json()["items"]] == [None, None, None]
    await resources.tasks.send("audit.seal", [])
    await resources.tasks.send("audit.checkpoint", [])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        latest = await client.get("/v1/audit/checkpoints/latest", headers=tenant.admin)
        if latest.status_code == 200:
            break
        await asyncio.sleep(0.25)
    assert latest.status_code == 200, latest.text
    page = await client.get(
        "/v1/audit/access", params={"relationship_id": rid}, headers=tenant.admin
    )
    sealed = {e["sealed_seq"] for e in page.json()["items"]}
    assert None not in sealed
    assert latest.json()["seq"] >= max(sealed)
    verify = await client.post("/v1/audit/verify", json=latest.json(), headers=tenant.admin)
    assert verify.json()["ok"] is True
