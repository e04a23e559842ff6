"""The tenant admin pages in a real headless Chromium against a live server: a key is
created with an expiry and rotated with an overlap (both secrets shown once, both
working through the overlap); the pages in Chinese and at a phone's width; a creator
key gets the 403 page, not keys; privacy patterns tried in the test box; a document
uploaded with progress and indexed, a refused upload explained. Captured under docs/console/ with
CONSOLE_SCREENSHOTS=docs/console."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page

from tests.console.support import token_of
from tests.console.test_console_browser import PHONE, _page, _shot, _sign_in

pytestmark = [pytest.mark.integration, pytest.mark.worker]


class Admin:
    def __init__(self, tenant: Any) -> None:
        self.tenant = tenant
        self.keys: dict[str, dict[str, str]] = {"admin": tenant.admin}


@pytest.fixture(scope="module")
async def admin_world(client, make_tenant, celery_worker) -> Admin:
    world = Admin(await make_tenant())
    created = await client.post(
        "/v1/creators", json={"external_id": "studio-a"}, headers=world.tenant.admin
    )
    assert created.status_code == 201, created.text
    world.keys["creator"] = await world.tenant.key("creator", "studio-a")
    world.keys["compliance"] = await world.tenant.key("compliance", None)
    return world


async def _works(server: str, token: str) -> int:
    async with httpx.AsyncClient(base_url=server) as http:
        answer = await http.get("/v1/audit", headers={"Authorization": f"Bearer {token}"})
        return answer.status_code


async def _no_sideways_scroll(page: Page) -> None:
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"] + 1, f"{page.url} scrolls sideways on a phone"


async def test_an_admin_creates_a_key_with_an_expiry_then_rotates_it(
    server, chromium: Browser, admin_world, shots: Path
) -> None:
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(admin_world.keys["admin"]))
    await page.goto(server + "/console/admin/keys")
    await page.select_option("#role", "compliance")
    await page.fill("#name", "Audit export 审计导出")
    await page.fill("#expires_at", "2031-06-30T12:00")
    await page.click("#create-key-submit")
    await page.wait_for_selector("#new-token")
    first = (await page.inner_text("#new-token")).strip()
    assert "2031-06-30 12:00:00 UTC" in await page.inner_text("#created-key")
    assert await _works(server, first) == 200
    row = page.locator("tr[data-key]", has_text="Audit export 审计导出")
    key_id = await row.get_attribute("data-key")
    assert "2031-06-30 12:00:00 UTC" in await row.inner_text()
    # Rotate: a confirm form with the overlap window, then the new secret, once.
    await page.click(f'[data-rotate="{key_id}"]')
    await page.wait_for_selector("#rotate-form")
    assert await page.input_value("#overlap_minutes") == "60"
    await page.fill("#overlap_minutes", "15")
    await _shot(page, shots, "key-rotate")
    await page.click("#rotate-submit")
    await page.wait_for_selector("#rotated-note")
    second = (await page.inner_text("#new-token")).strip()
    assert second != first
    assert await _works(server, second) == 200
    assert await _works(server, first) == 200  # still, for the overlap
    assert await page.locator(f'tr[data-key="{key_id}"][data-state="rotated"]').count() == 1
    assert await page.locator(f'[data-rotate="{key_id}"]').count() == 0
    await _shot(page, shots, "keys")
    # The secret is never shown again.
    await page.goto(server + "/console/admin/keys")
    body = await page.content()
    assert first not in body
    assert second not in body
    await page.goto(server + "/console/locale/zh?next=/console/admin/keys")
    assert "轮换" in await page.inner_text("#keys")
    assert "最近使用" in await page.inner_text("#keys")
    await _shot(page, shots, "keys-zh")
    await page.goto(server + "/console/locale/en?next=/console/")
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()


async def test_the_admin_pages_fit_a_phone(server, chromium: Browser, admin_world, shots) -> None:
    context, page = await _page(chromium, PHONE)
    await _sign_in(page, server, token_of(admin_world.keys["admin"]))
    await page.goto(server + "/console/admin/keys")
    await _no_sideways_scroll(page)
    await _shot(page, shots, "phone-keys")
    key_id = await page.locator("[data-rotate]").first.get_attribute("data-rotate")
    for path in (f"/console/admin/keys/{key_id}/rotate", "/console/admin/privacy"):
        await page.goto(server + path)
        await _no_sideways_scroll(page)
    await page.goto(server + "/console/admin/knowledge")
    await _no_sideways_scroll(page)
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()


async def test_a_creator_key_gets_the_forbidden_page_not_the_keys(
    server, chromium: Browser, admin_world, shots, client
) -> None:
    keys = (await client.get("/v1/api-keys", headers=admin_world.keys["admin"])).json()["items"]
    admin_key = next(k for k in keys if k["role"] == "admin")
    for role in ("creator", "compliance"):
        context, page = await _page(chromium)
        await _sign_in(page, server, token_of(admin_world.keys[role]))
        for path in (
            "/console/admin/keys",
            f"/console/admin/keys/{admin_key['id']}/rotate",
            "/console/admin/privacy",
        ):
            answer = await page.goto(server + path)
            assert answer is not None
            assert answer.status in (403, 404), (role, path, answer.status)
            await page.wait_for_selector("#error-title")
            body = await page.content()
            assert admin_key["prefix"] not in body
            assert "rotate-form" not in body
            assert 'id="patterns"' not in body
        if role == "creator":
            await _shot(page, shots, "forbidden")
        await context.close()


async def test_privacy_patterns_are_tried_in_the_test_box(
    server, chromium: Browser, admin_world, shots
) -> None:
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(admin_world.keys["admin"]))
    await page.goto(server + "/console/admin/privacy")
    await page.fill("#patterns", "ORDER ORD-\\d{6}")
    await page.fill("#sample", "我的订单 ORD-123456，电话 13812345678，email mei@example.com")
    await page.click("#privacy-test")
    await page.wait_for_selector("#masked")
    masked = await page.inner_text("#masked")
    assert "[ORDER]" in masked
    assert "ORD-123456" not in masked
    assert "13812345678" not in masked
    await _shot(page, shots, "privacy")
    # A pattern RE2 refuses (a look-behind) is named, not saved.
    await page.fill("#patterns", "BAD (?<=a)b")
    await page.click("#privacy-test")
    await page.wait_for_selector(".flash.error")
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()


async def test_a_document_is_uploaded_with_progress_and_indexed(
    server, chromium: Browser, admin_world, shots
) -> None:
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(admin_world.keys["admin"]))
    await page.goto(server + "/console/admin/knowledge")
    assert await page.locator(".empty").count() >= 1  # no bases yet
    await page.fill("#name", "Café handbook 咖啡馆手册")
    await page.click("#create-base button")
    await page.wait_for_selector("#upload-form")
    await page.set_input_files(
        "#file",
        files=[
            {
                "name": "menu.md",
                "mimeType": "text/markdown",
                "buffer": "# Menu\nLatte 28 元. Oat milk on request. 燕麦奶可选。".encode(),
            }
        ],
    )
    await page.click("#upload")
    await page.wait_for_selector("[data-status=ready]", timeout=30_000)
    await _shot(page, shots, "knowledge")
    # A refused upload says why in the form (htmx does not swap an error answer).
    blank = {"name": "blank.txt", "mimeType": "text/plain", "buffer": b"   \n"}
    await page.set_input_files("#file", files=[blank])
    await page.click("#upload")
    await page.locator("#upload-error", has_text="no text").wait_for()
    assert await page.locator("#upload-progress").is_hidden()
    await page.click("[data-document] button")  # re-index
    await page.wait_for_selector("[data-status=ready]", timeout=30_000)
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()
