"""Listing API keys a page at a time: a (created_at, id) cursor that visits each key
once in creation order, a validated limit and cursor, and one tenant's cursor never
showing another's keys (real Postgres)."""

from __future__ import annotations

import base64
import uuid
from datetime import datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tether.core.pagination import encode_cursor

KEYS = "/v1/api-keys"
PROBLEM = "application/problem+json"

# 249 keys besides the admin key: random (v4) ids, so the id order is not the creation
# order, and times that repeat every 7 keys, so ties are broken by the id.
_PLANT = text(
    "INSERT INTO api_keys (id, tenant_id, role, name, prefix, key_hash, signed, created_at)"
    " SELECT gen_random_uuid(), :t, 'gateway', 'pod-' || n, 'tk_planted',"
    " sha256(convert_to(:seed || '-' || n, 'UTF8')), true,"
    " now() - make_interval(secs => (n % 7) * 60)"
    " FROM generate_series(1, :count) AS n"
)


async def _plant(superuser: AsyncEngine, tenant: Any, count: int) -> list[str]:
    """Every key of the tenant, in the order the API must list them."""
    async with superuser.begin() as connection:
        await connection.execute(
            _PLANT, {"t": str(tenant.id), "seed": str(tenant.id), "count": count}
        )
        rows = (
            await connection.execute(
                text("SELECT id, created_at FROM api_keys WHERE tenant_id = :t"),
                {"t": str(tenant.id)},
            )
        ).all()
    ordered: list[tuple[datetime, uuid.UUID]] = sorted((at, key_id) for key_id, at in rows)
    return [str(key_id) for _, key_id in ordered]


async def _all_pages(client: httpx.AsyncClient, tenant: Any, limit: int) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": limit} | ({"cursor": cursor} if cursor else {})
        answer = await client.get(KEYS, params=params, headers=tenant.admin)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        pages.append([k["id"] for k in body["items"]])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages
        assert len(cursor) <= 32


async def test_250_keys_are_listed_each_once_in_creation_order(
    client, make_tenant, superuser
) -> None:
    tenant = await make_tenant()
    expected = await _plant(superuser, tenant, 249)
    assert len(expected) == 250
    pages = await _all_pages(client, tenant, 37)
    assert [len(p) for p in pages] == [37] * 6 + [28]
    listed = [key_id for page in pages for key_id in page]
    assert listed == expected
    # The default page is 50; the largest is 200.
    first = (await client.get(KEYS, headers=tenant.admin)).json()
    assert [k["id"] for k in first["items"]] == expected[:50]
    widest = await client.get(KEYS, params={"limit": 200}, headers=tenant.admin)
    assert [k["id"] for k in widest.json()["items"]] == expected[:200]


async def test_a_full_last_page_ends_with_an_empty_one(client, make_tenant) -> None:
    tenant = await make_tenant()
    await tenant.key("gateway")  # two keys with the admin's
    pages = await _all_pages(client, tenant, 2)
    assert [len(p) for p in pages] == [2, 0]


def _assert_problem(answer: httpx.Response, field: str) -> None:
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"].startswith(PROBLEM)
    assert field in [e["field"] for e in answer.json()["errors"]]


@pytest.mark.parametrize("limit", ["-1", "0", "201", "1e3", "ten"])
async def test_a_limit_out_of_range_is_422(client, make_tenant, limit: str) -> None:
    tenant = await make_tenant()
    _assert_problem(await client.get(KEYS, params={"limit": limit}, headers=tenant.admin), "limit")


SOME_ID = uuid.UUID("0192f0c4-3b8e-7c1a-9d2e-5f6a7b8c9d0e")


def _raw_cursor(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "AAAA",  # the right alphabet, too short
        "A" * 33,  # longer than any this API issues
        "not a cursor",
        "%00",
        # Fixed ids: test workers collect the same parameters (xdist compares them).
        encode_cursor(SOME_ID),  # another list's cursor (an id alone)
        _raw_cursor(b"\x7f" * 8 + SOME_ID.bytes),  # a time past the year 9999
    ],
)
async def test_a_cursor_this_api_did_not_issue_is_422(client, make_tenant, cursor: str) -> None:
    tenant = await make_tenant()
    answer = await client.get(KEYS, params={"cursor": cursor}, headers=tenant.admin)
    _assert_problem(answer, "cursor")


async def test_another_tenants_cursor_never_shows_its_keys(client, make_tenant) -> None:
    a, b = await make_tenant(), await make_tenant()
    for _ in range(3):
        await a.key("gateway")
    ours = [key_id for page in await _all_pages(client, a, 2) for key_id in page]
    first = (await client.get(KEYS, params={"limit": 2}, headers=a.admin)).json()
    assert first["next_cursor"]
    theirs = await client.get(KEYS, params={"cursor": first["next_cursor"]}, headers=b.admin)
    assert theirs.status_code == 200
    assert not {k["id"] for k in theirs.json()["items"]} & set(ours)
    everything_b = [key_id for page in await _all_pages(client, b, 200) for key_id in page]
    assert len(everything_b) == 1  # b's admin key, never one of a's
    assert not set(everything_b) & set(ours)
