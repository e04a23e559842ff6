"""The console pages added for conflicts, the recap, session flags, pool inheritance, the
extraction preview, the session defaults and the retention runs: each does what its API
call does, through the same service, and answers like the API for every role (a page,
the 404 page for an object out of reach, the 403 page for a role that may not); a form
without the CSRF token is refused; memory text and recap text are shown as text."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.authz_world import unique
from tests.console.support import session_csrf, signed_in, token_of
from tests.integration.test_memory_extraction import _session, _wait_extracted
from tether.core.ids import TenantId
from tether.retention import sweep as retention
from workers.services import services_for

pytestmark = [pytest.mark.integration, pytest.mark.worker]

XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'
ESCAPED = "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"


class World:
    def __init__(self, tenant) -> None:  # type: ignore[no-untyped-def]
        self.tenant = tenant
        self.rid = ""
        self.held = ""
        self.stated = ""
        self.browsers: dict[str, tuple[httpx.AsyncClient, str]] = {}
        self.keys: dict[str, dict[str, str]] = {}


@pytest.fixture(scope="module")
async def world(client, make_tenant, celery_worker) -> World:
    found = World(await make_tenant())
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
    found.keys = keys = {
        "admin": found.tenant.admin,
        "gateway": gateway,
        "creator": await found.tenant.key("creator", "studio-9"),
        "other_creator": await found.tenant.key("creator", "studio-x"),
        "compliance": await found.tenant.key("compliance", None),
    }
    # An open conflict, as the pipeline makes one: a statement, then a vague "yeah".
    at = datetime.now(UTC) - timedelta(days=2)
    await _session(client, gateway, rid, "s1", [("user", "I do not like coffee.")], at)
    await _wait_extracted(client, gateway, rid, "s1")
    lines = [("assistant", "Do you like coffee?"), ("user", "yeah")]
    await _session(client, gateway, rid, "s2", lines, at + timedelta(days=1))
    await _wait_extracted(client, gateway, rid, "s2")
    conflicts = await client.get(f"/v1/relationships/{rid}/conflicts", headers=gateway)
    [conflict] = conflicts.json()["items"]
    found.held, found.stated = conflict["held"]["id"], conflict["existing"]["id"]
    made = await client.post(
        f"/v1/relationships/{rid}/memories",
        json={"content": "Says " + XSS, "memory_type": "fact"},
        headers=gateway,
    )
    assert made.status_code == 201, made.text
    for role, key in keys.items():
        own = await signed_in(client, token_of(key))
        found.browsers[role] = (own, await session_csrf(own))
    return found


def _page(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text[:300]
    return response.text


def _error(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, response.text[:300]
    assert 'id="error-title"' in response.text


async def test_conflicts_and_recap_beside_the_timeline_escaped(world: World) -> None:
    own, _ = world.browsers["gateway"]
    page = _page(await own.get(f"/console/relationships/{world.rid}"))
    assert 'id="recap"' in page
    assert 'id="conflicts"' in page
    assert f'data-resolve="{world.held}"' in page
    assert f'data-resolve="{world.stated}"' in page
    assert 'id="last-contact"' in page
    assert "<script>alert" not in page
    assert "onerror=alert(1)>" not in page
    assert ESCAPED in page
    creator = _page(await world.browsers["creator"][0].get(f"/console/relationships/{world.rid}"))
    assert f'data-resolve="{world.held}"' in creator
    _error(await world.browsers["other_creator"][0].get(f"/console/relationships/{world.rid}"), 404)
    _error(await world.browsers["compliance"][0].get(f"/console/relationships/{world.rid}"), 403)
    _error(await world.browsers["admin"][0].get(f"/console/relationships/{world.rid}"), 403)


async def test_resolving_a_conflict_needs_the_token_and_reach(client, world: World) -> None:
    url = f"/console/relationships/{world.rid}/memories/{world.held}/resolve"
    own, csrf = world.browsers["gateway"]
    _error(await own.post(url, data={"reason": "no token"}), 403)
    other, other_csrf = world.browsers["other_creator"]
    _error(await other.post(url, data={"_csrf": other_csrf}), 404)
    compliance, compliance_csrf = world.browsers["compliance"]
    _error(await compliance.post(url, data={"_csrf": compliance_csrf}), 403)
    api = f"/v1/relationships/{world.rid}/conflicts"
    assert len((await client.get(api, headers=world.keys["gateway"])).json()["items"]) == 1
    done = await own.post(url, data={"_csrf": csrf, "reason": "asked the user"})
    assert done.status_code == 303
    assert done.headers["location"].endswith(f"?resolved={world.held}")
    assert (await client.get(api, headers=world.keys["gateway"])).json()["items"] == []
    after = _page(await own.get(done.headers["location"]))
    assert 'id="no-conflicts"' in after


async def test_session_flags_listed_and_set_as_the_api_does(client, world: World) -> None:
    own, csrf = world.browsers["creator"]
    url = f"/console/relationships/{world.rid}/sessions"
    page = _page(await own.get(url))
    assert 'data-session="s1"' in page
    assert 'data-session="s2"' in page
    _error(await own.post(url + "/s1", data={"memory_enabled": "off"}), 403)  # no token
    saved = await own.post(
        url + "/s1", data={"_csrf": csrf, "memory_enabled": "off", "knowledge_enabled": "on"}
    )
    assert saved.status_code == 303
    api = f"/v1/relationships/{world.rid}/sessions/s1"
    flags = (await client.get(api, headers=world.keys["gateway"])).json()
    assert (flags["memory_enabled"], flags["memory_source"]) == (False, "session")
    assert (flags["knowledge_enabled"], flags["session_knowledge_enabled"]) == (True, True)
    inherit = await own.post(url + "/s1", data={"_csrf": csrf, "memory_enabled": "inherit"})
    assert inherit.status_code == 303
    flags = (await client.get(api, headers=world.keys["gateway"])).json()
    assert flags["session_memory_enabled"] is None
    assert flags["memory_source"] != "session"
    bad = await own.post(url + "/s1", data={"_csrf": csrf, "memory_enabled": "maybe"})
    assert bad.status_code == 422
    other, other_csrf = world.browsers["other_creator"]
    _error(await other.get(url), 404)
    _error(await other.post(url + "/s1", data={"_csrf": other_csrf, "memory_enabled": "on"}), 404)
    _error(await world.browsers["compliance"][0].get(url), 403)
    # A session made only of flags (no turns) is forgotten like any other.
    gw, gw_csrf = world.browsers["gateway"]
    assert (
        await gw.post(url + "/s9", data={"_csrf": gw_csrf, "memory_enabled": "off"})
    ).status_code == 303
    assert 'data-session="s9"' in _page(await gw.get(url))
    _error(await gw.post(url + "/s9/forget", data={}), 403)
    forgot = await gw.post(url + "/s9/forget", data={"_csrf": gw_csrf})
    assert forgot.status_code == 303
    assert 'data-session="s9"' not in _page(await gw.get(url))


async def test_pool_inheritance_for_whoever_the_api_lets_edit_it(client, world: World) -> None:
    url = f"/console/relationships/{world.rid}/pool-inheritance"
    own, csrf = world.browsers["creator"]
    assert 'id="inheritance-form"' in _page(await own.get(url))
    _error(await own.post(url, data={"mode": "chosen", "layer": "semantic"}), 403)
    saved = await own.post(url, data={"_csrf": csrf, "mode": "chosen", "layer": ["semantic"]})
    assert saved.status_code == 303
    api = f"/v1/relationships/{world.rid}"
    assert (await client.get(api, headers=world.keys["gateway"])).json()["pool_layers"] == [
        "semantic"
    ]
    admin, admin_csrf = world.browsers["admin"]
    assert 'value="semantic" checked' in _page(await admin.get(url))
    reset = await admin.post(url, data={"_csrf": admin_csrf, "mode": "tenant"})
    assert reset.status_code == 303
    assert (await client.get(api, headers=world.keys["gateway"])).json()["pool_layers"] is None
    _error(await world.browsers["gateway"][0].get(url), 403)
    _error(await world.browsers["other_creator"][0].get(url), 404)
    _error(await world.browsers["compliance"][0].get(url), 403)


async def test_the_extraction_preview_stores_nothing(client, world: World) -> None:
    api = f"/v1/relationships/{world.rid}/memories"
    before = (await client.get(api, headers=world.keys["gateway"])).json()["items"]
    own, csrf = world.browsers["creator"]
    snippet = "assistant: how are you?\nuser: I like green tea. " + XSS + "\n用户：我喜欢爬山"
    form = {"_csrf": csrf, "relationship_id": world.rid, "snippet": snippet}
    page = _page(await own.post("/console/extract", data=form))
    assert 'id="extract-result"' in page
    assert 'id="candidates"' in page
    assert 'data-action="insert"' in page
    assert ESCAPED in page
    assert "<script>alert" not in page
    assert "onerror=alert(1)>" not in page
    after = (await client.get(api, headers=world.keys["gateway"])).json()["items"]
    assert [m["id"] for m in after] == [m["id"] for m in before]
    _error(await own.post("/console/extract", data={k: form[k] for k in form if k != "_csrf"}), 403)
    other, other_csrf = world.browsers["other_creator"]
    _error(await other.post("/console/extract", data=form | {"_csrf": other_csrf}), 404)
    compliance, compliance_csrf = world.browsers["compliance"]
    _error(await compliance.post("/console/extract", data=form | {"_csrf": compliance_csrf}), 403)
    empty = await own.post("/console/extract", data=form | {"snippet": "  "})
    assert empty.status_code == 422


async def test_session_defaults_and_retention_runs_for_the_tenant_admin(
    client, world: World, resources
) -> None:
    admin, csrf = world.browsers["admin"]
    page = _page(await admin.get("/console/admin/session-defaults"))
    assert 'id="session-defaults"' in page
    _error(await admin.post("/console/admin/session-defaults", data={}), 403)
    saved = await admin.post(
        "/console/admin/session-defaults", data={"_csrf": csrf, "knowledge_enabled": "on"}
    )
    assert saved.status_code == 303
    api = (await client.get("/v1/tenant/session-defaults", headers=world.tenant.admin)).json()
    assert api == {
        "memory_enabled": False,
        "knowledge_enabled": True,
        "keep_turns_without_memory": False,
    }
    restore = {"_csrf": csrf, "memory_enabled": "on", "keep_turns_without_memory": "on"}
    assert (await admin.post("/console/admin/session-defaults", data=restore)).status_code == 303
    assert 'id="retention-runs"' not in _page(await admin.get("/console/admin/retention"))
    etag = (await client.get("/v1/tenant/settings", headers=world.tenant.admin)).headers["etag"]
    changed = await client.put(
        "/v1/tenant/settings",
        json={"retention": {"raw_turns_days": 30}},
        headers=world.tenant.admin | {"If-Match": etag},
    )
    assert changed.status_code == 200, changed.text
    await retention.sweep_tenant(
        resources.sessions,
        TenantId(uuid.UUID(world.tenant.id)),
        services_for(resources).versions.invalidate,
        datetime.now(UTC),
    )
    runs = _page(await admin.get("/console/admin/retention"))
    assert 'data-kind="raw_turns"' in runs
    for role in ("gateway", "creator", "compliance"):
        browser = world.browsers[role][0]
        _error(await browser.get("/console/admin/session-defaults"), 403)
        _error(await browser.get("/console/admin/retention"), 403)
