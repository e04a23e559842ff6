"""The console pages added for conflicts, the recap, session flags, pool inheritance, the
extraction preview, the session defaults and the retention runs: each does what its API
call does, through the same service, and answers like the API for every role (a page,
the 404 page for an object out of reach, the 403 page for a role that may not); a form
without the CSRF token is refused; memory text and recap text are shown as text."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import httpx
import pytest

from tests.console.memory_world import ESCAPED, PLAN, XSS, MemoryWorld, memory_world
from tests.console.support import session_csrf, signed_in, token_of
from tether.core.ids import TenantId
from tether.retention import sweep as retention
from workers.services import services_for

pytestmark = [pytest.mark.integration, pytest.mark.worker]


@pytest.fixture(scope="module")
async def world(client, make_tenant, celery_worker) -> MemoryWorld:
    return await memory_world(client, make_tenant)


@pytest.fixture(scope="module")
async def browsers(client, world: MemoryWorld) -> dict[str, tuple[httpx.AsyncClient, str]]:
    found = {}
    for role, key in world.keys.items():
        own = await signed_in(client, token_of(key))
        found[role] = (own, await session_csrf(own))
    return found


def _page(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text[:300]
    return response.text


def _error(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, response.text[:300]
    assert 'id="error-title"' in response.text


async def test_conflicts_and_recap_beside_the_timeline_escaped(
    world: MemoryWorld, browsers
) -> None:
    own, _ = browsers["gateway"]
    page = _page(await own.get(f"/console/relationships/{world.rid}"))
    assert 'id="recap"' in page
    assert 'id="conflicts"' in page
    assert f'data-resolve="{world.held}"' in page
    assert f'data-resolve="{world.stated}"' in page
    assert 'id="last-contact"' in page
    recap = page[page.index('id="recap"') : page.index('id="conflicts"')]
    assert 'id="plans"' in recap
    assert PLAN in recap
    assert ESCAPED in recap
    assert "<script>alert" not in page
    assert "onerror=alert(1)>" not in page
    assert ESCAPED in page
    creator = _page(await browsers["creator"][0].get(f"/console/relationships/{world.rid}"))
    assert f'data-resolve="{world.held}"' in creator
    _error(await browsers["other_creator"][0].get(f"/console/relationships/{world.rid}"), 404)
    _error(await browsers["compliance"][0].get(f"/console/relationships/{world.rid}"), 403)
    _error(await browsers["admin"][0].get(f"/console/relationships/{world.rid}"), 403)


async def test_resolving_a_conflict_needs_the_token_and_reach(
    client, world: MemoryWorld, browsers
) -> None:
    url = f"/console/relationships/{world.rid}/memories/{world.held}/resolve"
    own, csrf = browsers["gateway"]
    _error(await own.post(url, data={"reason": "no token"}), 403)
    other, other_csrf = browsers["other_creator"]
    _error(await other.post(url, data={"_csrf": other_csrf}), 404)
    compliance, compliance_csrf = browsers["compliance"]
    _error(await compliance.post(url, data={"_csrf": compliance_csrf}), 403)
    api = f"/v1/relationships/{world.rid}/conflicts"
    assert len((await client.get(api, headers=world.keys["gateway"])).json()["items"]) == 1
    done = await own.post(url, data={"_csrf": csrf, "reason": "asked the user"})
    assert done.status_code == 303
    assert done.headers["location"].endswith(f"?resolved={world.held}")
    assert (await client.get(api, headers=world.keys["gateway"])).json()["items"] == []
    after = _page(await own.get(done.headers["location"]))
    assert 'id="no-conflicts"' in after


async def test_session_flags_listed_and_set_as_the_api_does(
    client, world: MemoryWorld, browsers
) -> None:
    own, csrf = browsers["creator"]
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
    other, other_csrf = browsers["other_creator"]
    _error(await other.get(url), 404)
    _error(await other.post(url + "/s1", data={"_csrf": other_csrf, "memory_enabled": "on"}), 404)
    _error(await browsers["compliance"][0].get(url), 403)
    # A session made only of flags (no turns) is forgotten like any other.
    gw, gw_csrf = browsers["gateway"]
    assert (
        await gw.post(url + "/s9", data={"_csrf": gw_csrf, "memory_enabled": "off"})
    ).status_code == 303
    assert 'data-session="s9"' in _page(await gw.get(url))
    _error(await gw.post(url + "/s9/forget", data={}), 403)
    forgot = await gw.post(url + "/s9/forget", data={"_csrf": gw_csrf})
    assert forgot.status_code == 303
    assert 'data-session="s9"' not in _page(await gw.get(url))


async def test_pool_inheritance_for_whoever_the_api_lets_edit_it(
    client, world: MemoryWorld, browsers
) -> None:
    url = f"/console/relationships/{world.rid}/pool-inheritance"
    own, csrf = browsers["creator"]
    assert 'id="inheritance-form"' in _page(await own.get(url))
    _error(await own.post(url, data={"mode": "chosen", "layer": "semantic"}), 403)
    saved = await own.post(url, data={"_csrf": csrf, "mode": "chosen", "layer": ["semantic"]})
    assert saved.status_code == 303
    api = f"/v1/relationships/{world.rid}"
    assert (await client.get(api, headers=world.keys["gateway"])).json()["pool_layers"] == [
        "semantic"
    ]
    admin, admin_csrf = browsers["admin"]
    user = (await client.get(api, headers=world.keys["gateway"])).json()["global_user_id"]
    consent = _page(await admin.get(f"/console/users/{user}"))
    assert f'data-inheritance="{world.rid}"' in consent  # admins reach it from the user
    assert 'value="semantic" checked' in _page(await admin.get(url))
    reset = await admin.post(url, data={"_csrf": admin_csrf, "mode": "tenant"})
    assert reset.status_code == 303
    assert (await client.get(api, headers=world.keys["gateway"])).json()["pool_layers"] is None
    _error(await browsers["gateway"][0].get(url), 403)
    _error(await browsers["other_creator"][0].get(url), 404)
    _error(await browsers["compliance"][0].get(url), 403)


async def test_the_extraction_preview_stores_nothing(client, world: MemoryWorld, browsers) -> None:
    api = f"/v1/relationships/{world.rid}/memories"
    before = (await client.get(api, headers=world.keys["gateway"])).json()["items"]
    own, csrf = browsers["creator"]
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
    other, other_csrf = browsers["other_creator"]
    _error(await other.post("/console/extract", data=form | {"_csrf": other_csrf}), 404)
    compliance, compliance_csrf = browsers["compliance"]
    _error(await compliance.post("/console/extract", data=form | {"_csrf": compliance_csrf}), 403)
    empty = await own.post("/console/extract", data=form | {"snippet": "  "})
    assert empty.status_code == 422


async def test_session_defaults_and_retention_runs_for_the_tenant_admin(
    client, world: MemoryWorld, browsers, resources
) -> None:
    admin, csrf = browsers["admin"]
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
    # One document: the settings page shows the same section, and saving it there is
    # what the session-defaults page then shows (decision 0086).
    settings_page = _page(await admin.get("/console/admin/settings"))
    assert 'name="sessions.knowledge_enabled" checked' in settings_page
    assert 'name="sessions.memory_enabled">' in settings_page
    version = (await client.get("/v1/tenant/settings", headers=world.tenant.admin)).json()
    form = {"_csrf": csrf, "version": str(version["version"]), "sessions.memory_enabled": "on"}
    assert (await admin.post("/console/admin/settings/sessions", data=form)).status_code == 303
    defaults_page = _page(await admin.get("/console/admin/session-defaults"))
    api = (await client.get("/v1/tenant/session-defaults", headers=world.tenant.admin)).json()
    assert api == {"memory_enabled": True, "knowledge_enabled": False,
                   "keep_turns_without_memory": False}  # fmt: skip
    assert 'id="memory_enabled" checked' in defaults_page
    assert 'id="knowledge_enabled">' in defaults_page
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
        browser = browsers[role][0]
        _error(await browser.get("/console/admin/session-defaults"), 403)
        _error(await browser.get("/console/admin/retention"), 403)
