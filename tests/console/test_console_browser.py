"""The console in a real headless Chromium against a live server: signing in and out and
an ended session; two editors and the 412 merge view; the playground equals POST
/v1/context; compliance verifies the chain, then names a tampered row; a creator cannot
open another creator's persona; XSS renders as text and a cross-origin form is refused.
Every page is captured (docs/console/ with CONSOLE_SCREENSHOTS=docs/console); the tenant
admin pages are in test_console_admin_browser."""

from __future__ import annotations

import asyncio
import io
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, BrowserContext, Page
from sqlalchemy import text

from tenancy.audit.export_format import verify_stream
from tests.console.support import token_of

pytestmark = [pytest.mark.integration, pytest.mark.worker]

XSS = "<script>alert('xss')</script> 用户说 <img src=x onerror=alert(1)>"
LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


class World:
    """A tenant as a customer would set it up, through the API."""

    def __init__(self, tenant: Any) -> None:
        self.tenant = tenant
        self.keys: dict[str, dict[str, str]] = {"admin": tenant.admin}

    async def call(
        self, client: httpx.AsyncClient, method: str, path: str, role: str, **kw: Any
    ) -> Any:
        answer = await client.request(method, path, headers=self.keys[role], **kw)
        assert answer.status_code < 300, f"{method} {path}: {answer.text}"
        return answer.json() if answer.content else None


async def _resolve(
    world: World, client: httpx.AsyncClient, user: str, persona: str, creator: str
) -> Any:
    body = {
        "user": {"external_id": user},
        "persona": {"external_id": persona, "creator_external_id": creator},
    }
    return await world.call(client, "POST", "/v1/resolve", "gateway", json=body)


@pytest.fixture(scope="module")
async def world(client, make_tenant, celery_worker) -> World:
    world = World(await make_tenant())
    for role, subject in (
        ("gateway", None),
        ("creator", "studio-a"),
        ("bob", "studio-b"),
        ("compliance", None),
    ):
        world.keys[role] = await world.tenant.key("creator" if role == "bob" else role, subject)
    luna = await _resolve(world, client, "u-mei", "luna", "studio-a")
    world.luna, world.sol = luna, await _resolve(world, client, "u-mei", "sol", "studio-b")
    persona = luna["creator_persona_id"]
    current = await client.get(f"/v1/personas/{persona}/profile", headers=world.keys["creator"])
    await client.put(
        f"/v1/personas/{persona}/profile",
        json={
            "background": "Luna runs a small café in Hangzhou. 在杭州开一家小咖啡馆。",
            "tone": "warm, playful 温暖俏皮",
            "taboos": ["politics 政治"],
            "scripts": ["晚安，好梦"],
        },
        headers=world.keys["creator"] | {"If-Match": current.headers["etag"]},
    )
    rid = luna["relationship_id"]
    turns = [
        {"session_id": "chat-1", "role": "user", "text": "我叫小美，我喜欢周末去西湖边跑步。"},
        {"session_id": "chat-1", "role": "assistant", "text": "听起来很棒！"},
        {
            "session_id": "chat-1",
            "role": "user",
            "text": "I have a cat named Mochi and I prefer green tea.",
        },
    ]
    await world.call(
        client, "POST", f"/v1/relationships/{rid}/turns", "gateway", json={"turns": turns}
    )
    await world.call(client, "POST", f"/v1/relationships/{rid}/sessions/chat-1/end", "gateway")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        page = await world.call(client, "GET", f"/v1/relationships/{rid}/memories", "gateway")
        if page["items"]:
            break
        await asyncio.sleep(0.5)
    await world.call(
        client, "POST", f"/v1/relationships/{rid}/memories", "gateway", json={"content": XSS}
    )
    user = luna["global_user_id"]
    await world.call(
        client,
        "PUT",
        f"/v1/users/{user}/profile/fields/language",
        "admin",
        json={"value": "zh-CN", "scope": "profile"},
    )
    await world.call(
        client,
        "PUT",
        f"/v1/users/{user}/profile/fields/spending_tier",
        "admin",
        json={"value": "T-03", "scope": "spending", "sensitivity": "high"},
    )
    await world.call(
        client,
        "PUT",
        f"/v1/users/{user}/consent",
        "admin",
        json={"scopes": ["profile"], "source": "signup form"},
    )
    return world


async def _page(
    chromium: Browser, viewport: dict[str, int] = LAPTOP, locale: str = "en-US"
) -> tuple[BrowserContext, Page]:
    context = await chromium.new_context(viewport=viewport, locale=locale)
    page = await context.new_page()
    problems: list[str] = []
    page.on(
        "dialog",
        lambda dialog: (
            problems.append(f"dialog: {dialog.message}"),
            asyncio.ensure_future(dialog.dismiss()),
        ),
    )
    page.on(
        "console",
        lambda message: (
            problems.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    page.problems = problems  # type: ignore[attr-defined]
    return context, page


async def _sign_in(page: Page, server: str, token: str) -> None:
    await page.goto(server + "/console/sign-in")
    await page.fill("#api_key", token)
    await page.click("#sign-in")
    await page.wait_for_selector("#sign-out")


async def _shot(page: Page, shots: Path, name: str) -> None:
    await page.screenshot(path=str(shots / f"{name}.png"), full_page=True)


async def test_sign_in_sign_out_and_an_ended_session(
    server, chromium, world, shots, resources
) -> None:
    context, page = await _page(chromium)
    await page.goto(server + "/console/")
    assert "/console/sign-in" in page.url
    await _shot(page, shots, "sign-in")
    await _sign_in(page, server, token_of(world.keys["admin"]))
    await _shot(page, shots, "home")
    cookies = {c["name"]: c for c in await context.cookies()}
    session = cookies["tether_console"]
    assert session["httpOnly"]
    assert session["sameSite"] == "Strict"
    assert token_of(world.keys["admin"]) not in json.dumps(await context.storage_state())
    await page.click("#sign-out")
    await page.wait_for_selector("#api_key")
    await _sign_in(page, server, token_of(world.keys["admin"]))
    # The session's lifetime ends (as after TETHER_CONSOLE__SESSION_MAX_HOURS).
    cookie = {c["name"]: c for c in await context.cookies()}["tether_console"]["value"]
    from tether.console.sessions import hash_id

    key = f"tether:console:session:{hash_id(cookie)}"
    stored = json.loads(await resources.redis.get(key))
    stored["expires_at"] = time.time() - 1
    await resources.redis.set(key, json.dumps(stored), ex=60)
    await page.goto(server + "/console/personas")
    assert "/console/sign-in" in page.url
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()


async def test_a_second_editor_gets_the_merge_view(server, chromium, world, shots) -> None:
    persona = world.luna["creator_persona_id"]
    first_context, first = await _page(chromium)
    second_context, second = await _page(chromium)
    for page in (first, second):
        await _sign_in(page, server, token_of(world.keys["creator"]))
        await page.goto(f"{server}/console/personas/{persona}")
    await first.fill("#tone", "warm, playful, a little shy 温暖俏皮，有点害羞")
    await first.locator("#preview-text", has_text="a little shy").wait_for()
    await _shot(first, shots, "persona-editor")
    await first.click("#save")
    await first.wait_for_selector(".flash")
    await second.fill("#background", "Luna runs a night café in Hangzhou. 在杭州开一家深夜咖啡馆。")
    await second.click("#save")
    await second.wait_for_selector("#merge")
    assert "a little shy" in await second.inner_text("#theirs")
    assert "night café" in await second.inner_text("#mine")
    await _shot(second, shots, "persona-merge")
    await second.fill("#merge-form #tone", "warm, playful, a little shy 温暖俏皮，有点害羞")
    await second.click("#save-merged")
    await second.wait_for_selector(".flash")
    await second.goto(f"{server}/console/personas/{persona}/history")
    await _shot(second, shots, "persona-history")
    await second.goto(f"{server}/console/personas")
    await _shot(second, shots, "personas")
    assert not first.problems
    assert not second.problems
    await first_context.close()
    await second_context.close()


async def test_the_playground_shows_the_context_the_api_returns(
    server, chromium, world, shots, client
) -> None:
    rid = world.luna["relationship_id"]
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["gateway"]))
    await page.goto(f"{server}/console/playground?relationship_id={rid}")
    await page.fill("#query", "周末有什么好玩的？ any weekend plans?")
    await page.click("#build")
    await page.wait_for_selector("#context-text")
    shown = await page.inner_text("#context-text")
    api = await client.post(
        "/v1/context",
        json={"relationship_id": rid, "query": "周末有什么好玩的？ any weekend plans?"},
        headers=world.keys["gateway"],
    )
    assert shown == api.json()["context"]
    await _shot(page, shots, "playground")
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()


async def test_compliance_verifies_the_chain_then_sees_the_tampered_row(
    server, chromium, world, shots, client, superuser
) -> None:
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["compliance"]))
    await page.goto(server + "/console/audit")
    await page.click("#verify-start")
    await page.wait_for_selector("#verify-result")
    assert "holds" in await page.inner_text("#verify-result")
    await _shot(page, shots, "audit-verified")
    events = (await client.get("/v1/audit?limit=10", headers=world.keys["admin"])).json()["items"]
    target = events[3]["id"]
    async with superuser.connect() as conn:
        await conn.execute(text("SET session_replication_role = replica"))
        await conn.execute(
            text("UPDATE audit_events SET decision = 'allow', action = 'export' WHERE id = :i"),
            {"i": target},
        )
        await conn.commit()
    await page.reload()
    await page.click("#verify-start")
    await page.wait_for_selector("#first-bad")
    assert target in await page.inner_text("#first-bad")
    await _shot(page, shots, "audit-broken")
    await page.click("#first-bad")
    await page.wait_for_selector("#content-check")
    assert "NOT" in await page.inner_text("#content-check")
    await _shot(page, shots, "audit-event")
    await page.goto(
        f"{server}/console/audit/access-report?global_user_id={world.luna['global_user_id']}"
    )
    await _shot(page, shots, "audit-access-report")
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()


async def test_the_explorer_downloads_a_signed_export_of_its_filters(
    server, chromium, world
) -> None:
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["compliance"]))
    await page.goto(server + "/console/audit?action=key.issue")
    assert await page.inner_text("#audit-export") == "Export (signed)"
    async with page.expect_download() as info:
        await page.click("#audit-export")
    download = await info.value
    saved = await asyncio.to_thread(Path(await download.path()).read_bytes)
    check = verify_stream(io.BytesIO(saved))
    assert check.ok is True, check.reason
    assert check.trailer is not None
    assert check.trailer["filters"] == {"action": "key.issue"}
    assert check.lines >= 1
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()


async def test_a_creator_cannot_open_another_creators_persona(
    server, chromium, world, shots
) -> None:
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["bob"]))
    answer = await page.goto(f"{server}/console/personas/{world.luna['creator_persona_id']}")
    assert answer is not None
    assert answer.status == 404
    assert await page.inner_text("#error-title") == "Not found"
    body = await page.content()
    assert "café" not in body
    assert "咖啡馆" not in body
    await _shot(page, shots, "not-found")
    await context.close()


async def test_xss_renders_as_text_and_a_cross_origin_form_is_refused(
    server, chromium, world, shots, client
) -> None:
    rid = world.luna["relationship_id"]
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["admin"]))
    gateway, viewer = await _page(chromium)
    await _sign_in(viewer, server, token_of(world.keys["gateway"]))
    await viewer.goto(f"{server}/console/relationships/{rid}")
    assert await viewer.locator("text=<script>alert('xss')</script>").count() == 1
    assert await viewer.locator("img[src=x]").count() == 0
    await asyncio.sleep(0.3)
    await _shot(viewer, shots, "memories")
    # Another origin on this machine posts a form at the console with the admin's cookie.
    attacker = f"""<form id=f method=post action="{server}/console/admin/keys">
      <input name=role value=admin><input name=name value=planted></form>
      <button id=go onclick="document.getElementById('f').submit()">go</button>"""
    with _attacker_site(attacker) as evil:
        await page.goto(evil)
        await page.click("#go")
        await page.wait_for_load_state()
    assert "csrf_failed" in await page.content() or "/console/sign-in" in page.url
    keys = (await client.get("/v1/api-keys", headers=world.keys["admin"])).json()["items"]
    assert not [k for k in keys if k["name"] == "planted"]
    assert not viewer.problems  # type: ignore[attr-defined]
    await gateway.close()
    await context.close()


def _attacker_site(body: str) -> Any:
    import http.server
    import threading
    from contextlib import contextmanager

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: Any) -> None:
            pass

    @contextmanager
    def serve() -> Any:
        httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}/"
        finally:
            httpd.shutdown()

    return serve()


async def test_every_page_renders_on_a_laptop_and_a_phone(server, chromium, world, shots) -> None:
    rid = world.luna["relationship_id"]
    user = world.luna["global_user_id"]
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["gateway"]))
    await page.goto(f"{server}/console/relationships")
    await _shot(page, shots, "relationships")
    await page.goto(f"{server}/console/relationships/{rid}")
    first = page.locator("#timeline li a").first
    await first.click()
    await page.wait_for_selector("#origin")
    await _shot(page, shots, "memory-why")
    await page.goto(f"{server}/console/relationships/{rid}")
    await page.fill("#query", "cat 猫")
    await page.click("#forget-preview")
    await page.wait_for_selector("h1")
    await _shot(page, shots, "forget-preview")
    await context.close()
    context, page = await _page(chromium)
    await _sign_in(page, server, token_of(world.keys["admin"]))
    for name, path in (
        ("users", "/console/users"),
        ("consent", f"/console/users/{user}"),
        ("policies", "/console/admin/policies"),
        ("settings", "/console/admin/settings"),
    ):
        await page.goto(server + path)
        await _shot(page, shots, name)
    await page.goto(server + "/console/locale/zh?next=/console/audit")
    await _shot(page, shots, "audit-zh")
    await page.goto(server + "/console/locale/en?next=/console/")
    assert not page.problems  # type: ignore[attr-defined]
    await context.close()
    context, page = await _page(chromium, PHONE)
    await _sign_in(page, server, token_of(world.keys["gateway"]))
    await page.goto(f"{server}/console/relationships/{rid}")
    await _shot(page, shots, "phone-memories")
    await page.click(".menu summary")
    await _shot(page, shots, "phone-menu")
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"] + 1, "the page scrolls sideways on a phone"
    await context.close()
