"""The access log and the tenant settings document in a real headless Chromium against a
live server: compliance follows the access report to the reads of one user (who, why,
which memory ids went into a context), filters them, and verifies the chain, which seals
the pending reads first and checks the latest signed checkpoint; an admin edits a
settings section, gets the 412 view when someone else saved in between and applies the
edit again, sees a 422 next to the field, and a script typed into a text field stays
text; other roles get the 403 page, and a form without the CSRF token is refused. In
English, Chinese and at a phone's width; captured under docs/console/ with
CONSOLE_SCREENSHOTS=docs/console."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser

from tests.console.support import session_csrf, signed_in, token_of
from tests.console.test_console_browser import PHONE, XSS, _page, _shot, _sign_in

pytestmark = [pytest.mark.integration, pytest.mark.worker]

SILENCE = "ownership.creator_silence_hours"
POOL_ID = "ownership.pool_operator_id"


class World:
    def __init__(self, tenant: Any) -> None:
        self.tenant = tenant
        self.keys: dict[str, dict[str, str]] = {"admin": tenant.admin}
        self.rel: dict[str, Any] = {}
        self.memory_id = ""


@pytest.fixture(scope="module")
async def world(client, make_tenant, celery_worker, server) -> World:
    world = World(await make_tenant())
    for role, subject in (("gateway", None), ("creator", "studio-a"), ("compliance", None)):
        world.keys[role] = await world.tenant.key(role, subject)
    # Through the live server, so its own access log records (and flushes) the reads.
    async with httpx.AsyncClient(base_url=server, timeout=60) as http:
        body = {
            "user": {"external_id": "u-lan"},
            "persona": {"external_id": "luna", "creator_external_id": "studio-a"},
        }
        answer = await http.post("/v1/resolve", json=body, headers=world.keys["gateway"])
        assert answer.status_code < 300, answer.text
        world.rel = answer.json()
        rid = world.rel["relationship_id"]
        memory = await http.post(
            f"/v1/relationships/{rid}/memories",
            json={"content": "小兰喜欢在西湖边喝龙井茶 and loves green tea"},
            headers=world.keys["gateway"],
        )
        assert memory.status_code < 300, memory.text
        world.memory_id = memory.json()["id"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            context = await http.post(
                "/v1/context",
                json={"relationship_id": rid, "query": "她喜欢喝什么茶？ what tea?"},
                headers=world.keys["gateway"],
            )
            assert context.status_code == 200, context.text
            if world.memory_id in context.text:
                break
            await asyncio.sleep(0.5)
        made = await http.post("/v1/audit/checkpoints", headers=world.keys["admin"])
        assert made.status_code == 201, made.text
    return world


async def test_compliance_reads_the_access_log_and_verifies_with_the_checkpoint(
    server, chromium: Browser, world: World, shots: Path
) -> None:
    user = world.rel["global_user_id"]
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["compliance"]))
    await page.goto(f"{server}/console/audit/access-report?global_user_id={user}")
    await page.click("#access-log-link")
    await page.wait_for_selector("#access-events")
    assert page.url.endswith(f"/console/audit/access?global_user_id={user}")
    row = page.locator('tr[data-purpose="context"]').first
    assert world.memory_id in (await row.text_content() or "")
    assert "gateway" in await row.inner_text()
    # Filters: purpose, relationship, and a time range that holds nothing.
    await page.select_option("#purpose", "context")
    await page.fill("#relationship_id", world.rel["relationship_id"])
    await page.click("#access-filter")
    await page.wait_for_selector("#access-events")
    purposes = await page.locator("tr[data-access]").evaluate_all(
        "rows => rows.map(r => r.dataset.purpose)"
    )
    assert purposes
    assert set(purposes) == {"context"}
    await page.locator("tr[data-access] details summary").first.click()
    await _shot(page, shots, "audit-access-log")
    await page.goto(f"{server}/console/audit/access?global_user_id={user}&until=2000-01-01T00:00")
    assert await page.locator("tr[data-access]").count() == 0
    # A read after the checkpoint is pending until the verification seals it first.
    async with httpx.AsyncClient(base_url=server, timeout=60) as http:
        again = await http.post(
            "/v1/context",
            json={"relationship_id": world.rel["relationship_id"], "query": "龙井 tea"},
            headers=world.keys["gateway"],
        )
        assert again.status_code == 200, again.text
    await page.goto(f"{server}/console/audit/access?global_user_id={user}")
    assert "not sealed yet" in await page.inner_text("#access-events")
    # Verify: pending reads are sealed first, the latest checkpoint is checked too.
    await page.goto(server + "/console/audit")
    await page.click("#verify-start")
    await page.wait_for_selector("#verify-result")
    assert "holds" in await page.inner_text("#verify-result")
    assert await page.get_attribute("#verify-status", "data-checkpoints") == "1"
    assert int(await page.get_attribute("#verify-status", "data-sealed") or 0) >= 1
    assert "matches" in await page.inner_text("#verify-checkpoint")
    await _shot(page, shots, "audit-verify-checkpoint")
    await page.goto(f"{server}/console/audit/access?global_user_id={user}")
    assert "Sealed at" in await page.inner_text("#access-events")
    assert "not sealed yet" not in await page.inner_text("#access-events")
    await page.goto(server + "/console/locale/zh?next=/console/audit/access")
    assert "访问日志" in await page.inner_text("h1")
    assert "封存于" in await page.inner_text("#access-events")
    await page.goto(server + "/console/locale/en?next=/console/")
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()


async def _field_error(page: Any, path: str) -> str:
    return str(await page.inner_text(f'[id="error-{path}"]'))


async def test_an_admin_edits_settings_through_a_conflict_and_an_invalid_field(
    server, chromium: Browser, world: World, shots: Path
) -> None:
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["admin"]))
    await page.goto(server + "/console/admin/settings")
    # Every section of the document, rendered from the schema.
    sections = await page.locator("form[data-section]").evaluate_all(
        "forms => forms.map(f => f.dataset.section)"
    )
    assert {"retention", "ownership"} <= set(sections)
    assert await page.input_value(f'[id="{SILENCE}"]') == "72"
    await page.fill(f'[id="{SILENCE}"]', "48")
    await page.fill("#reason-ownership", "夜班团队 night shift")
    await page.click("#save-ownership")
    await page.wait_for_selector(".flash")
    assert await page.input_value(f'[id="{SILENCE}"]') == "48"
    version = int(await page.get_attribute("#tenant-settings-document", "data-version") or 0)
    await _shot(page, shots, "tenant-settings")
    # Someone else saves while this page is open: the 412 view, then apply again.
    async with httpx.AsyncClient(base_url=server) as http:
        current = (await http.get("/v1/tenant/settings", headers=world.keys["admin"])).json()
        body = {
            "retention": current["retention"] | {"raw_turns_days": 30},
            "ownership": current["ownership"] | {"creator_silence_hours": 24},
        }
        other = await http.put(
            "/v1/tenant/settings",
            json=body,
            headers=world.keys["admin"] | {"If-Match": f'"{version}"'},
        )
        assert other.status_code == 200, other.text
    await page.fill(f'[id="{SILENCE}"]', "36")
    await page.click("#save-ownership")
    await page.wait_for_selector("#settings-conflict")
    assert await page.inner_text(f'[data-theirs="{SILENCE}"]') == "24"
    assert await page.input_value(f'[id="{SILENCE}"]') == "36"  # the edit is kept
    await _shot(page, shots, "tenant-settings-conflict")
    await page.click("#save-ownership")
    await page.wait_for_selector(".flash:not(.error)")
    assert await page.input_value(f'[id="{SILENCE}"]') == "36"
    assert await page.input_value('[id="retention.raw_turns_days"]') == "30"  # theirs kept
    # 422: next to the field, nothing saved.
    await page.fill(f'[id="{SILENCE}"]', "0")
    await page.click("#save-ownership")
    await page.wait_for_selector(f'[id="error-{SILENCE}"]')
    assert ">= 1" in await _field_error(page, SILENCE)
    assert await page.input_value(f'[id="{SILENCE}"]') == "0"
    await _shot(page, shots, "tenant-settings-invalid")
    # A script in a text field is stored as text and shown back as text, never run.
    await page.fill(f'[id="{SILENCE}"]', "36")
    await page.fill(f'[id="{POOL_ID}"]', XSS)
    await page.click("#save-ownership")
    await page.wait_for_selector(".flash:not(.error)")
    assert await page.input_value(f'[id="{POOL_ID}"]') == XSS
    assert await page.locator("#section-ownership script, #section-ownership img").count() == 0
    async with httpx.AsyncClient(base_url=server) as http:
        stored = (await http.get("/v1/tenant/settings", headers=world.keys["admin"])).json()
    assert stored["ownership"]["creator_silence_hours"] == 36
    assert stored["ownership"]["pool_operator_id"] == XSS
    await page.fill(f'[id="{POOL_ID}"]', "proxy-pool")
    await page.click("#save-ownership")
    await page.wait_for_selector(".flash:not(.error)")
    await page.goto(server + "/console/locale/zh?next=/console/admin/settings")
    assert "租户设置文档" in await page.inner_text("#tenant-settings-document")
    assert "代聊池运营者 ID" in await page.inner_text("#section-ownership")
    await _shot(page, shots, "tenant-settings-zh")
    await page.goto(server + "/console/locale/en?next=/console/")
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()


async def test_at_a_phone_width(server, chromium: Browser, world: World, shots: Path) -> None:
    context, page = await _page(chromium, PHONE)
    await _sign_in(page, server, token_of(world.keys["admin"]))
    for path, name in (
        ("/console/admin/settings", "phone-tenant-settings"),
        (f"/console/audit/access?global_user_id={world.rel['global_user_id']}", None),
    ):
        await page.goto(server + path)
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"] + 1, f"{path} scrolls sideways on a phone"
        if name:
            await _shot(page, shots, name)
    await context.close()


async def test_other_roles_get_the_403_page_and_a_form_needs_its_csrf_token(
    server, chromium: Browser, world: World, client
) -> None:
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["compliance"]))
    answer = await page.goto(server + "/console/admin/settings")
    assert answer is not None
    assert answer.status == 403
    assert await page.locator("#error-title").count() == 1
    assert await page.locator("form[data-section]").count() == 0
    await context.close()
    for role in ("creator", "compliance", "gateway"):
        own = await signed_in(client, token_of(world.keys[role]))
        form = {"_csrf": await session_csrf(own), SILENCE: "12", "version": "0"}
        refused = await own.post("/console/admin/settings/ownership", data=form)
        assert refused.status_code == 403, (role, refused.status_code)
    admin = await signed_in(client, token_of(world.keys["admin"]))
    no_token = await admin.post("/console/admin/settings/ownership", data={SILENCE: "12"})
    assert no_token.status_code == 403
    assert "csrf" in no_token.text.lower()
    unknown = await admin.post(
        "/console/admin/settings/nonsense", data={"_csrf": await session_csrf(admin)}
    )
    assert unknown.status_code == 404
