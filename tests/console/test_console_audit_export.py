"""The audit explorer's "Export (signed)" link downloads the same signed export as
GET /v1/audit/export for the filters on the page, and the console's step-by-step
verification starts from the retention anchor of a pruned chain (decisions 0071, 0072)."""

from __future__ import annotations

import html
import io
import json
import re
import uuid
from datetime import UTC, datetime

import pytest

from tenancy.audit.export_format import verify_stream
from tests.console.support import csrf_of, signed_in, token_of
from tether.core.ids import TenantId
from tether.retention import sweep as retention
from workers.services import services_for

pytestmark = pytest.mark.integration


async def test_the_export_link_downloads_a_signed_export_of_the_filtered_range(
    client, make_tenant
) -> None:
    tenant = await make_tenant()
    compliance = await tenant.key("compliance")
    await tenant.key("operator", "pool-1")
    own = await signed_in(client, token_of(compliance))
    page = await own.get("/console/audit", params={"action": "key.issue", "decision": "allow"})
    assert page.status_code == 200
    link = re.search(r'id="audit-export" href="([^"]+)">([^<]+)<', page.text)
    assert link is not None
    assert link.group(2) == "Export (signed)"
    href = html.unescape(link.group(1))
    assert "action=key.issue" in href
    assert "decision=allow" in href
    download = await own.get(href)
    assert download.status_code == 200, download.text
    assert "attachment" in download.headers["content-disposition"]
    check = verify_stream(io.BytesIO(download.content))
    assert check.ok is True
    assert check.trailer is not None
    assert check.trailer["filters"] == {"action": "key.issue", "decision": "allow"}
    assert check.lines == 3  # admin, compliance, operator
    recorded = await client.get(
        "/v1/audit", params={"action": "audit.export"}, headers=tenant.admin
    )
    [event] = recorded.json()["items"]
    assert (event["actor_role"], event["detail"]["export_id"]) == (
        "compliance",
        check.trailer["export_id"],
    )


async def test_the_console_verifies_a_pruned_chain_from_its_anchor(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    for i in range(3):
        await tenant.key("operator", f"pool-{i}")
    etag = (await client.get("/v1/tenant/settings", headers=tenant.admin)).headers["etag"]
    await client.put(
        "/v1/tenant/settings",
        json={"retention": {"audit_years": 1}},
        headers=tenant.admin | {"If-Match": etag},
    )
    boundary = datetime.now(UTC)
    await tenant.key("operator", "late")
    invalidate = services_for(resources).versions.invalidate
    later = boundary.replace(year=boundary.year + 1)
    tenant_id = TenantId(uuid.UUID(tenant.id))
    removed = await retention.sweep_tenant(resources.sessions, tenant_id, invalidate, later)
    assert removed["audit"] >= 4
    own = await signed_in(client, token_of(tenant.admin))
    explorer = await own.get("/console/audit")
    step = await own.post("/console/audit/verify", data={"_csrf": csrf_of(explorer.text)})
    while 'data-done="false"' in step.text:
        job = re.search(r'/console/audit/verify/([\w-]+)"', step.text).group(1)
        step = await own.post(
            f"/console/audit/verify/{job}", data={"_csrf": csrf_of(explorer.text)}
        )
    assert 'data-ok="true"' in step.text
    first = (await client.get("/v1/audit", headers=tenant.admin)).json()["items"][0]
    entry = await own.get(f"/console/audit/events/{first['id']}")
    assert entry.status_code == 200
    assert "badge bad" not in entry.text  # its link to the removed event holds (the anchor)
    assert json.loads((await client.get("/v1/audit/verify", headers=tenant.admin)).text)["ok"]
