"""Signing in to the console from tests: a cookie-keeping HTTP client per key."""

from __future__ import annotations

import re

import httpx

CSRF = re.compile(r'name="_csrf" value="([^"]+)"')


def token_of(headers: dict[str, str]) -> str:
    return headers["Authorization"].split(" ", 1)[1]


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "no CSRF field on the page"
    return found.group(1)


async def browser(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """A new client on the same app with a cookie jar of its own (one browser)."""
    return httpx.AsyncClient(transport=client._transport, base_url=str(client.base_url))


async def signed_in(client: httpx.AsyncClient, token: str) -> httpx.AsyncClient:
    own = await browser(client)
    form = await own.get("/console/sign-in")
    answer = await own.post(
        "/console/sign-in",
        data={"_csrf": csrf_of(form.text), "api_key": token, "next": "/console/"},
    )
    assert answer.status_code == 303, answer.text[:300]
    return own


async def session_csrf(own: httpx.AsyncClient) -> str:
    return csrf_of((await own.get("/console/")).text)
