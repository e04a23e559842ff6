"""Signing in and out of the console: the key becomes a server-side session (never a
cookie value), sessions end on sign-out, key revocation, idleness and their lifetime;
CSRF on every state-changing request; the language switch; error pages."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from redis.asyncio import Redis

from tests.console.support import browser, csrf_of, session_csrf, signed_in, token_of
from tether.console.middleware import SESSION_COOKIE, secure_cookies
from tether.console.sessions import SessionStore, hash_id
from tether.core.settings import ConsoleSettings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
async def tenant(make_tenant):
    return await make_tenant()


async def test_sign_in_exchanges_the_key_for_an_opaque_http_only_cookie(client, tenant) -> None:
    token = token_of(tenant.admin)
    own = await browser(client)
    form = await own.get("/console/sign-in")
    assert form.status_code == 200
    answer = await own.post(
        "/console/sign-in", data={"_csrf": csrf_of(form.text), "api_key": token}
    )
    assert answer.status_code == 303
    cookie = next(h for h in answer.headers.get_list("set-cookie") if h.startswith(SESSION_COOKIE))
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/console" in cookie
    assert "Secure" not in cookie  # plain HTTP here; TLS makes it Secure (below)
    assert token not in " ".join(answer.headers.get_list("set-cookie"))
    home = await own.get("/console/")
    assert home.status_code == 200
    assert token not in home.text
    assert 'id="sign-out"' in home.text


async def test_a_wrong_key_or_a_forged_sign_in_form_is_refused(client, tenant) -> None:
    own = await browser(client)
    form = await own.get("/console/sign-in")
    wrong = await own.post(
        "/console/sign-in", data={"_csrf": csrf_of(form.text), "api_key": "tth_" + "x" * 40}
    )
    assert wrong.status_code == 401
    assert 'id="sign-in-error"' in wrong.text
    # Another site's form has no login cookie to repeat: refused before the key is read.
    stranger = await browser(client)
    forged = await stranger.post(
        "/console/sign-in", data={"_csrf": "guess", "api_key": token_of(tenant.admin)}
    )
    assert forged.status_code == 403
    assert not [
        c for c in forged.headers.get_list("set-cookie") if c.startswith(SESSION_COOKIE + "=")
    ]


async def test_pages_need_a_session_and_htmx_is_told_to_navigate(client) -> None:
    own = await browser(client)
    page = await own.get("/console/personas")
    assert page.status_code == 303
    assert page.headers["location"] == "/console/sign-in?next=/console/personas"
    fragment = await own.get("/console/personas", headers={"HX-Request": "true"})
    assert fragment.status_code == 401
    assert fragment.headers["HX-Redirect"].startswith("/console/sign-in")


async def test_sign_out_ends_the_session_and_needs_its_csrf_token(client, tenant) -> None:
    own = await signed_in(client, token_of(tenant.admin))
    refused = await own.post("/console/sign-out", data={"_csrf": "not-it"})
    assert refused.status_code == 403
    assert (await own.get("/console/")).status_code == 200
    cookie = own.cookies.get(SESSION_COOKIE)
    answer = await own.post("/console/sign-out", data={"_csrf": await session_csrf(own)})
    assert answer.status_code == 303
    replay = await browser(client)
    replay.cookies.set(SESSION_COOKIE, cookie or "", path="/console")
    assert (await replay.get("/console/")).status_code == 303  # the old cookie is dead


async def test_revoking_the_key_ends_its_console_sessions(client, tenant) -> None:
    created = await client.post(
        "/v1/api-keys", json={"role": "compliance", "name": "auditor"}, headers=tenant.admin
    )
    key = created.json()
    own = await signed_in(client, key["token"])
    assert (await own.get("/console/audit")).status_code == 200
    revoked = await client.delete(f"/v1/api-keys/{key['key']['id']}", headers=tenant.admin)
    assert revoked.status_code == 204
    assert (await own.get("/console/audit")).status_code == 303


async def test_a_session_ends_after_its_idle_time_and_its_lifetime(resources, tenant) -> None:
    redis: Redis = resources.redis
    from tenancy.access.authenticator import Authenticator
    from tenancy.access.failures import FailedAuthentications
    from tenancy.access.key_usage import KeyUsage
    from tenancy.access.tokens import digest

    token = token_of(tenant.admin)
    access = resources.settings.access
    authenticator = Authenticator(
        resources.sessions,
        access,
        FailedAuthentications(redis, 1_000_000),
        KeyUsage(resources.sessions, access.last_used_resolution_seconds),
    )
    principal = await authenticator.authenticate(token)
    idle = SessionStore(redis, ConsoleSettings(session_idle_minutes=1 / 60))  # one second
    cookie, _ = await idle.create(principal, digest(token), "test")
    assert await idle.load(cookie) is not None
    await asyncio.sleep(1.5)
    assert await idle.load(cookie) is None
    store = SessionStore(redis, ConsoleSettings())
    cookie, _session = await store.create(principal, digest(token), "test")
    key = f"tether:console:session:{hash_id(cookie)}"
    stored = json.loads(await redis.get(key))
    stored["expires_at"] = time.time() - 1  # its lifetime is over, however active it was
    await redis.set(key, json.dumps(stored), ex=60)
    assert await store.load(cookie) is None
    assert await redis.get(key) is None


def test_cookies_are_secure_over_tls_and_behind_a_trusted_proxy_only() -> None:
    https = {"type": "http", "scheme": "https", "headers": []}
    proxied = {"type": "http", "scheme": "http", "headers": [(b"x-forwarded-proto", b"https")]}
    auto = ConsoleSettings()
    assert secure_cookies(https, auto)  # type: ignore[arg-type]
    assert not secure_cookies(proxied, auto)  # type: ignore[arg-type]
    trusting = ConsoleSettings(trust_forwarded_proto=True)
    assert secure_cookies(proxied, trusting)  # type: ignore[arg-type]
    assert secure_cookies(proxied, ConsoleSettings(secure_cookies="always"))  # type: ignore[arg-type]


async def test_state_changing_requests_without_the_session_token_are_refused(
    client, tenant
) -> None:
    own = await signed_in(client, token_of(tenant.admin))
    other = await signed_in(client, token_of(tenant.admin))
    body = {"role": "gateway", "name": "made by a forged form"}
    for token in (None, "guess", await session_csrf(other)):
        data = body | ({"_csrf": token} if token else {})
        answer = await own.post("/console/admin/keys", data=data)
        assert answer.status_code == 403
        assert "csrf_failed" in answer.text
    cross = await own.post(
        "/console/admin/keys",
        data=body | {"_csrf": await session_csrf(own)},
        headers={"Sec-Fetch-Site": "cross-site"},
    )
    assert cross.status_code == 403
    keys = (await client.get("/v1/api-keys", headers=tenant.admin)).json()["items"]
    assert not [k for k in keys if k["name"] == "made by a forged form"]
    made = await own.post("/console/admin/keys", data=body | {"_csrf": await session_csrf(own)})
    assert made.status_code == 201


async def test_every_page_carries_the_security_headers(client, tenant) -> None:
    own = await signed_in(client, token_of(tenant.admin))
    for path in ("/console/", "/console/sign-in", "/console/no-such-page"):
        answer = await own.get(path)
        csp = answer.headers["content-security-policy"]
        assert "script-src 'self'" in csp
        assert "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert "unsafe-eval" not in csp
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["cache-control"] == "no-store"
    missing = await own.get("/console/no-such-page")
    assert missing.status_code == 404
    assert 'id="error-title"' in missing.text


async def test_the_language_switch_and_its_redirect_stay_on_the_console(client, tenant) -> None:
    own = await signed_in(client, token_of(tenant.admin))
    switched = await own.get("/console/locale/zh?next=/console/personas")
    assert switched.status_code == 303
    assert switched.headers["location"] == "/console/personas"
    page = await own.get("/console/personas")
    assert "人设" in page.text
    assert 'lang="zh-CN"' in page.text
    for target in ("//evil.example/x", "https://evil.example/", "/console\\@evil"):
        away = await own.get("/console/locale/en", params={"next": target})
        assert away.headers["location"] == "/console/"
    assert 'lang="en"' in (await own.get("/console/personas")).text
    chinese_browser = await browser(client)
    first = await chinese_browser.get("/console/sign-in", headers={"Accept-Language": "zh-CN,zh"})
    assert "登录" in first.text
