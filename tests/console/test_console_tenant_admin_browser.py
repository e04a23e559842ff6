"""Three tenant-admin and compliance views in a real headless Chromium against a live
server: the API keys page pages by its "next page" link (each key once, in the API's
order); the re-embed runs page (reached from the embedding section of the settings)
shows each run's model, status, progress, times and error; the audit explorer shows the
tenant's public key, which checks a signed export offline. Roles that may not see a page
get the console's 403 page. Captured under docs/console/ with
CONSOLE_SCREENSHOTS=docs/console."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.audit.export_format import verify_stream
from tenancy.audit.signing import parse_public_key
from tests.console.support import token_of
from tests.console.test_console_browser import PHONE, _page, _shot, _sign_in
from tests.integration.test_tenant_settings_sections import _put
from tests.providers_server import FakeOpenAIServer
from tether.core.settings import NamedEmbeddingProvider, ProvidersSettings, Settings

pytestmark = pytest.mark.integration

PLANTED = 119  # with the admin key: 120 keys, three console pages of 50


@pytest.fixture(scope="module")
def embedder():  # type: ignore[no-untyped-def]
    server = FakeOpenAIServer(dimension=8).start()
    yield server
    server.stop()


def _named(embedder: FakeOpenAIServer) -> dict[str, NamedEmbeddingProvider]:
    def one(model: str, dimension: int) -> NamedEmbeddingProvider:
        return NamedEmbeddingProvider.model_validate(
            {
                "base_url": embedder.base_url,
                "model": model,
                "dimension": dimension,
                "timeout_seconds": 5,
                "max_retries": 0,
            }
        )

    return {"alpha": one("model-a", 8), "beta": one("model-b", 8)}


@pytest.fixture(scope="module")
def settings(settings: Settings, embedder) -> Settings:  # type: ignore[no-untyped-def]
    providers = ProvidersSettings(embedding=_named(embedder))
    return settings.model_copy(update={"providers": providers})


class World:
    def __init__(self, tenant: Any) -> None:
        self.tenant = tenant
        self.keys: dict[str, dict[str, str]] = {"admin": tenant.admin}


@pytest.fixture(scope="module")
async def world(client, make_tenant) -> World:
    world = World(await make_tenant())
    made = await client.post(
        "/v1/creators", json={"external_id": "studio-a"}, headers=world.keys["admin"]
    )
    assert made.status_code == 201, made.text
    world.keys["creator"] = await world.tenant.key("creator", "studio-a")
    for role in ("gateway", "compliance"):
        world.keys[role] = await world.tenant.key(role)
    return world


async def _api_order(client: httpx.AsyncClient, world: World) -> list[str]:
    answer = await client.get("/v1/api-keys", params={"limit": 200}, headers=world.keys["admin"])
    assert answer.status_code == 200, answer.text
    assert answer.json()["next_cursor"] is None
    return [k["id"] for k in answer.json()["items"]]


async def test_the_keys_page_pages_by_its_next_link(
    server, chromium: Browser, client, world: World, superuser: AsyncEngine
) -> None:
    async with superuser.begin() as connection:
        await connection.execute(
            text(
                "INSERT INTO api_keys (id, tenant_id, role, name, prefix, key_hash, created_at)"
                " SELECT gen_random_uuid(), :t, 'gateway', 'pod-' || n, 'tk_planted',"
                " sha256(convert_to(:seed || n, 'UTF8')),"
                " now() - make_interval(secs => (n % 5) * 60)"
                " FROM generate_series(1, :count) AS n"
            ),
            {"t": world.tenant.id, "seed": world.tenant.id, "count": PLANTED},
        )
    expected = await _api_order(client, world)
    assert len(expected) == PLANTED + 4  # admin, creator, gateway, compliance
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["admin"]))
    await page.goto(server + "/console/admin/keys")
    seen: list[str] = []
    while True:
        rows = page.locator("#keys tr[data-key]")
        seen += [str(await row.get_attribute("data-key")) for row in await rows.all()]
        more = page.locator("nav.pager a")
        if await more.count() == 0:
            break
        await more.click()
        await page.wait_for_load_state()
    assert seen == expected
    assert "cursor=" in page.url
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()


async def _runs_of_every_kind(
    client: httpx.AsyncClient, superuser: AsyncEngine, world: World
) -> None:
    """Three changes of model through the settings API (three runs), then the progress a
    worker would have recorded for each: done, failed with its error, running."""
    for provider in ("alpha", "beta", "alpha"):
        put = await _put(client, world.tenant, {"embedding": {"provider": provider}})
        assert put.status_code == 200, put.text
    states = [
        "status = 'done', memories_done = 300, chunks_done = 40,"
        " finished_at = created_at + interval '4 minutes'",
        "status = 'failed', memories_done = 120, chunks_done = 0,"
        " error = 'embedding provider beta: connection refused', finished_at = NULL",
        "status = 'running', memories_done = 180, chunks_done = 10, finished_at = NULL",
    ]
    async with superuser.begin() as connection:
        ids = (
            (
                await connection.execute(
                    text(
                        "SELECT id FROM reembed_runs WHERE tenant_id = :t ORDER BY created_at, id"
                    ),
                    {"t": world.tenant.id},
                )
            )
            .scalars()
            .all()
        )
        assert len(ids) == 3
        for run_id, state in zip(ids, states, strict=True):
            await connection.execute(
                text(
                    f"UPDATE reembed_runs SET {state}, memories_total = 300, chunks_total = 40,"  # noqa: S608
                    " model = CASE provider WHEN 'alpha' THEN 'model-a' ELSE 'model-b' END,"
                    " dimension = 8, updated_at = now() WHERE id = :id"
                ),
                {"id": run_id},
            )


async def test_the_reembed_runs_page_shows_each_run(
    server, chromium: Browser, client, world: World, superuser: AsyncEngine, shots: Path
) -> None:
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["admin"]))
    await page.goto(server + "/console/admin/reembed-runs")
    assert await page.locator("#reembed-runs").count() == 0  # none yet
    await _runs_of_every_kind(client, superuser, world)
    api = await client.get("/v1/tenant/reembed-runs", headers=world.keys["admin"])
    # Reached from the embedding section of the settings page.
    await page.goto(server + "/console/admin/settings")
    await page.click("#section-embedding #reembed-runs-link")
    await page.wait_for_selector("#reembed-runs")
    rows = page.locator("#reembed-runs tr[data-run]")
    shown = [str(await row.get_attribute("data-run")) for row in await rows.all()]
    assert shown == [r["id"] for r in api.json()["items"]]  # newest first, as the API
    running, failed, done = (page.locator(f'tr[data-run="{i}"]') for i in shown)
    assert await running.get_attribute("data-status") == "running"
    assert "180 / 300" in await running.locator("[data-memories]").inner_text()
    assert "10 / 40" in await running.locator("[data-chunks]").inner_text()
    assert "model-a" in await running.inner_text()
    assert "connection refused" in await failed.locator("[data-error]").inner_text()
    assert "model-b" in await failed.inner_text()
    assert await done.get_attribute("data-status") == "done"
    assert "UTC" in await done.locator("td").nth(5).inner_text()  # its finish time
    await _shot(page, shots, "reembed-runs")
    await page.goto(server + "/console/locale/zh?next=/console/admin/reembed-runs")
    assert "重新嵌入" in await page.inner_text("h1")
    assert "进行中" in await running.inner_text()
    await page.goto(server + "/console/locale/en?next=/console/")
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()
    context, page = await _page(chromium, PHONE)
    await _sign_in(page, server, token_of(world.keys["admin"]))
    await page.goto(server + "/console/admin/reembed-runs")
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"] + 1, "the runs page scrolls sideways on a phone"
    await context.close()


async def test_the_audit_explorer_shows_the_public_key_that_checks_an_export(
    server, chromium: Browser, client, world: World, shots: Path
) -> None:
    published = (await client.get("/v1/audit/public-key", headers=world.keys["compliance"])).json()
    context, page = await _page(chromium)
    await context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    await _sign_in(page, server, token_of(world.keys["compliance"]))
    await page.goto(server + "/console/audit")
    card = page.locator("#audit-public-key")
    assert (await page.inner_text("#audit-key-id")).strip() == published["key_id"]
    assert (await page.inner_text("#audit-key-algorithm")).strip() == published["algorithm"]
    shown = (await page.inner_text("#audit-key-base64")).strip()
    assert shown == published["public_key"]
    pem = (await page.inner_text("#audit-key-pem")).strip()
    assert pem == published["public_key_pem"].strip()
    command = await page.inner_text("#audit-verify-command")
    assert command == f"tether audit verify-export FILE --public-key {shown}"
    await page.click("#copy-audit-key")
    assert await page.evaluate("navigator.clipboard.readText()") == shown
    await card.screenshot(path=str(shots / "audit-public-key.png"))
    # The key on the page checks a signed export without the server's secret.
    export = await client.get("/v1/audit/export", headers=world.keys["compliance"])
    assert export.status_code == 200, export.text
    check = verify_stream(io.BytesIO(export.content), parse_public_key(shown))
    assert check.ok, check.reason
    assert check.trailer is not None
    assert check.trailer["key_id"] == published["key_id"]
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()


@pytest.mark.parametrize("role", ["gateway", "creator", "compliance"])
async def test_roles_that_may_not_see_a_page_get_the_403_page(
    server, chromium: Browser, world: World, role: str
) -> None:
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys[role]))
    refused = ["/console/admin/reembed-runs", "/console/admin/keys"]
    if role != "compliance":
        refused.append("/console/audit")
    for path in refused:
        answer = await page.goto(server + path)
        assert answer is not None
        assert answer.status == 403, (role, path, answer.status)
        await page.wait_for_selector("#error-title")
        body = await page.content()
        assert 'id="reembed-runs"' not in body
        assert 'id="audit-public-key"' not in body
        assert "tk_planted" not in body
    await context.close()
