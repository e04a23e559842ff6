"""A relationship with what the newer console pages show, made through the API and the
real worker: an open conflict (a statement, then a vague
"yeah"), two sessions, and a fact and a commitment (for the recap) whose text carries
an XSS payload."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tests.authz_world import unique
from tests.integration.test_memory_extraction import _session, _wait_extracted

XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'
ESCAPED = "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"
PLAN = "The user plans to run a marathon next month"  # a commitment the recap lists


class MemoryWorld:
    def __init__(self, tenant: Any) -> None:
        self.tenant = tenant
        self.rid = ""
        self.held = ""
        self.stated = ""
        self.keys: dict[str, dict[str, str]] = {}


async def _talk(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    rid: str,
    sid: str,
    lines: list[tuple[str, str]],
    at: datetime,
) -> None:
    await _session(client, headers, rid, sid, lines, at)
    await _wait_extracted(client, headers, rid, sid)


async def memory_world(client: httpx.AsyncClient, make_tenant: Any) -> MemoryWorld:
    found = MemoryWorld(await make_tenant())
    gateway = await found.tenant.key("gateway")
    resolved = await client.post(
        "/v1/resolve",
        json={
            "user": {"external_id": unique("u")},
            "persona": {"external_id": "luna", "creator_external_id": "studio-9"},
        },
        headers=gateway,
    )
    found.rid = rid = resolved.json()["relationship_id"]
    await client.post("/v1/creators", json={"external_id": "studio-x"}, headers=found.tenant.admin)
    found.keys = {
        "admin": found.tenant.admin,
        "gateway": gateway,
        "creator": await found.tenant.key("creator", "studio-9"),
        "other_creator": await found.tenant.key("creator", "studio-x"),
        "compliance": await found.tenant.key("compliance", None),
    }
    at = datetime.now(UTC) - timedelta(days=2)
    await _talk(client, gateway, rid, "s1", [("user", "I do not like coffee.")], at)
    lines = [("assistant", "Do you like coffee?"), ("user", "yeah")]
    await _talk(client, gateway, rid, "s2", lines, at + timedelta(days=1))
    conflicts = await client.get(f"/v1/relationships/{rid}/conflicts", headers=gateway)
    [conflict] = conflicts.json()["items"]
    found.held, found.stated = conflict["held"]["id"], conflict["existing"]["id"]
    for content, kind in (("Says " + XSS, "fact"), (PLAN + " " + XSS, "commitment")):
        made = await client.post(
            f"/v1/relationships/{rid}/memories",
            json={"content": content, "memory_type": kind},
            headers=gateway,
        )
        assert made.status_code == 201, made.text
    return found
