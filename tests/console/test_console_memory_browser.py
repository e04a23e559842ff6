"""The newer relationship pages in a real headless Chromium against a live server: a
support agent resolves an open conflict beside the timeline and turns a session's memory
off; the extraction preview; pool inheritance, session defaults and retention runs; the
API-keys table at a 375 px phone width does not scroll sideways. Captured under
docs/console/ with CONSOLE_SCREENSHOTS=docs/console."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.async_api import Browser

from tests.console.memory_world import PLAN, MemoryWorld, memory_world
from tests.console.support import token_of
from tests.console.test_console_browser import _page, _shot, _sign_in
from tether.core.ids import TenantId
from tether.retention import sweep as retention
from workers.services import services_for

pytestmark = [pytest.mark.integration, pytest.mark.worker]

PHONE_375 = {"width": 375, "height": 812}


@pytest.fixture(scope="module")
async def world(client, make_tenant, celery_worker) -> MemoryWorld:
    return await memory_world(client, make_tenant)


async def test_a_conflict_resolved_and_a_session_flag_toggled(
    server, chromium: Browser, world: MemoryWorld, shots: Path, client
) -> None:
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["gateway"]))
    await page.goto(f"{server}/console/relationships/{world.rid}")
    assert PLAN in await page.text_content("#recap")
    assert "<script>" in await page.text_content("#timeline")  # shown as text, never run
    await _shot(page, shots, "memories-conflicts")
    await page.click(f'[data-resolve="{world.held}"]')
    await page.wait_for_selector("#no-conflicts")
    api = f"/v1/relationships/{world.rid}"
    gateway = world.keys["gateway"]
    assert (await client.get(api + "/conflicts", headers=gateway)).json()["items"] == []
    held = (await client.get(f"{api}/memories/{world.held}", headers=gateway)).json()
    assert held["is_active"] is True

    await page.click("#sessions-link")
    session = 'li[data-session="s1"]'
    await page.select_option(f"{session} select[name=memory_enabled]", "off")
    await page.click('[data-save="s1"]')
    await page.wait_for_selector(f'{session} [data-flag="memory"]')
    shown = await page.text_content(f'{session} [data-flag="memory"]')
    assert "off" in shown
    assert "set for this session" in shown
    flags = (await client.get(api + "/sessions/s1", headers=gateway)).json()
    assert (flags["memory_enabled"], flags["memory_source"]) == (False, "session")
    await _shot(page, shots, "sessions")

    await page.goto(f"{server}/console/extract?relationship_id={world.rid}")
    await page.fill("#snippet", "assistant: 最近怎么样？\nuser: I started learning the violin.")
    await page.click("#preview-extract")
    await page.wait_for_selector("#candidates")
    await _shot(page, shots, "extract")
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()


async def test_pool_inheritance_session_defaults_and_retention_runs(
    server, chromium: Browser, world: MemoryWorld, shots: Path, resources
) -> None:
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["creator"]))
    await page.goto(f"{server}/console/relationships/{world.rid}/pool-inheritance")
    await page.check('input[name=mode][value="chosen"]')
    await page.check('input[name=layer][value="semantic"]')
    await page.click("#save-inheritance")
    await page.wait_for_selector(".flash")
    assert await page.is_checked('input[name=layer][value="semantic"]')
    await _shot(page, shots, "pool-inheritance")
    await context.close()
    await retention.sweep_tenant(
        resources.sessions,
        TenantId(uuid.UUID(world.tenant.id)),
        services_for(resources).versions.invalidate,
        datetime.now(UTC),
    )
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["admin"]))
    await page.goto(f"{server}/console/admin/session-defaults")
    await page.uncheck("#keep_turns_without_memory")
    await page.click("#save-defaults")
    await page.wait_for_selector(".flash")
    assert not await page.is_checked("#keep_turns_without_memory")
    await _shot(page, shots, "session-defaults")
    await page.goto(f"{server}/console/admin/retention")
    await _shot(page, shots, "retention")
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()


async def test_the_keys_table_fits_a_375px_phone(
    server, chromium: Browser, world: MemoryWorld, shots: Path, client
) -> None:
    for role, name in (("gateway", "Chat gateway production 生产环境"), ("compliance", None)):
        body = {"role": role} | ({"name": name} if name else {})
        made = await client.post("/v1/api-keys", json=body, headers=world.tenant.admin)
        assert made.status_code == 201, made.text
    context, page = await _page(chromium, PHONE_375)
    await _sign_in(page, server, token_of(world.keys["admin"]))
    for locale, shot in (("en", "phone-keys-375"), ("zh", "phone-keys-375-zh")):
        await page.goto(f"{server}/console/locale/{locale}?next=/console/admin/keys")
        await page.wait_for_selector("#keys")
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE_375["width"], f"the keys page is {width}px wide ({locale})"
        wrap = await page.evaluate(
            "(() => { const w = document.querySelector('#keys').closest('.table-wrap');"
            " return [w.scrollWidth, w.clientWidth]; })()"
        )
        assert wrap[0] <= wrap[1], f"the keys table scrolls inside its box: {wrap}"
        await _shot(page, shots, shot)
    await context.close()
