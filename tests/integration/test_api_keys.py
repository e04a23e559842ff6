"""API keys: signed tokens that are refused without a query when forged, expiry,
rotation with an overlap, revocation, last use, subjects, and the audit of each change
(real Postgres and Redis)."""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tenancy.access.tokens import SIGNED_LENGTH, TOKEN_PREFIX, generate_token
from tests.integration.own_app import own_app
from tests.support import count_sql

KEYS = "/v1/api-keys"


def bearer(token: str) -> dict[str, bytes]:
    return {"Authorization": f"Bearer {token}".encode("latin-1")}


async def issue(client: httpx.AsyncClient, tenant: Any, **body: Any) -> dict[str, Any]:
    answer = await client.post(KEYS, json={"role": "gateway", **body}, headers=tenant.admin)
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


async def works(client: httpx.AsyncClient, token: str) -> bool:
    answer = await client.get("/v1/personas", headers=bearer(token))
    assert answer.status_code in (200, 401), answer.text
    return answer.status_code == 200


async def audit(client: httpx.AsyncClient, tenant: Any, action: str) -> list[dict[str, Any]]:
    page = await client.get("/v1/audit", params={"action": action}, headers=tenant.admin)
    assert page.status_code == 200, page.text
    return list(page.json()["items"])


async def test_a_new_token_is_signed_and_works(client, make_tenant) -> None:
    tenant = await make_tenant()
    created = await issue(client, tenant, name="chat")
    token = created["token"]
    assert token.startswith(TOKEN_PREFIX)
    assert len(token) == SIGNED_LENGTH
    assert created["key"]["signed"] is True
    assert created["key"]["expires_at"] is None
    assert await works(client, token)


@pytest.mark.parametrize(
    "token",
    [
        "nope",
        TOKEN_PREFIX + "x" * 51,  # the signed length, one character outside the alphabet
        TOKEN_PREFIX + "a" * 43 + "!" * 8,
        TOKEN_PREFIX + "é" * 51,
    ],
)
async def test_a_malformed_token_costs_no_query(client, resources, make_tenant, token) -> None:
    await make_tenant()  # the signing secret is loaded by then
    with count_sql(resources) as statements:
        answer = await client.get("/v1/personas", headers=bearer(token))
    assert answer.status_code == 401
    assert answer.json()["code"] == "unauthenticated"
    assert statements == []


async def test_an_unknown_well_formed_token_costs_no_query(client, resources, make_tenant) -> None:
    """Right prefix, length and alphabet, but not signed by this deployment: refused by
    its signature, so a flood of invented tokens never reaches Postgres."""
    tenant = await make_tenant()
    assert await works(client, (await issue(client, tenant))["token"])  # secret loaded
    invented = [generate_token(secrets.token_bytes(32)) for _ in range(20)]
    with count_sql(resources) as statements:
        answers = [await client.get("/v1/personas", headers=bearer(t)) for t in invented]
    assert {a.status_code for a in answers} == {401}
    assert statements == []


async def test_a_signed_token_that_matches_no_key_is_asked_once(
    client, resources, make_tenant
) -> None:
    """A revoked key's token (signed, but no longer a key): one lookup, then answered
    from memory."""
    tenant = await make_tenant()
    created = await issue(client, tenant)
    revoked = await client.delete(f"{KEYS}/{created['key']['id']}", headers=tenant.admin)
    assert revoked.status_code == 204
    with count_sql(resources) as first:
        assert not await works(client, created["token"])
    assert any("api_keys" in statement for statement in first)
    with count_sql(resources) as again:
        for _ in range(5):
            assert not await works(client, created["token"])
    assert again == []


async def test_a_revoked_key_stops_at_once_here_and_within_the_cache_time_elsewhere(
    client, resources, make_tenant
) -> None:
    tenant = await make_tenant()
    token = (await issue(client, tenant))["token"]
    async with own_app(resources, access={"key_cache_seconds": 1.0}) as (other, _):
        assert await works(other, token)  # cached by the other process
        key_id = next(
            k["id"]
            for k in (await client.get(KEYS, headers=tenant.admin)).json()["items"]
            if k["prefix"] == token[:10]
        )
        assert (await client.delete(f"{KEYS}/{key_id}", headers=tenant.admin)).status_code == 204
        assert not await works(client, token)
        await asyncio.sleep(1.1)
        assert not await works(other, token)


async def test_an_expired_key_stops_working(client, make_tenant) -> None:
    tenant = await make_tenant()
    soon = datetime.now(UTC) + timedelta(seconds=1.5)
    created = await issue(client, tenant, expires_at=soon.isoformat())
    assert datetime.fromisoformat(created["key"]["expires_at"]) == soon
    assert await works(client, created["token"])  # cached until it expires, no longer
    await asyncio.sleep(1.7)
    assert not await works(client, created["token"])


async def test_an_expiry_in_the_past_or_without_a_time_zone_is_refused(client, make_tenant) -> None:
    tenant = await make_tenant()
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    for expires_at in (past, "2999-01-01T00:00:00"):
        body = {"role": "gateway", "expires_at": expires_at}
        answer = await client.post(KEYS, json=body, headers=tenant.admin)
        assert answer.status_code == 422, answer.text
        assert answer.json()["errors"][0]["field"] == "expires_at"


async def test_rotation_keeps_the_old_token_for_the_overlap(client, make_tenant) -> None:
    tenant = await make_tenant()
    old = await issue(client, tenant, name="chat")
    assert await works(client, old["token"])
    rotated = await client.post(
        f"{KEYS}/{old['key']['id']}/rotate", json={"overlap_seconds": 3}, headers=tenant.admin
    )
    assert rotated.status_code == 201, rotated.text
    new = rotated.json()
    assert new["token"] != old["token"]
    assert (new["key"]["role"], new["key"]["name"]) == ("gateway", "chat")
    assert await works(client, new["token"])
    assert await works(client, old["token"])  # still inside the overlap
    listed = {k["id"]: k for k in (await client.get(KEYS, headers=tenant.admin)).json()["items"]}
    assert listed[old["key"]["id"]]["replaced_by"] == new["key"]["id"]
    assert listed[old["key"]["id"]]["expires_at"] is not None
    await asyncio.sleep(3.2)
    assert not await works(client, old["token"])
    assert await works(client, new["token"])


async def test_rotation_without_overlap_ends_the_old_token_here_at_once(
    client, make_tenant
) -> None:
    tenant = await make_tenant()
    old = await issue(client, tenant)
    assert await works(client, old["token"])  # cached
    path = f"{KEYS}/{old['key']['id']}/rotate"
    rotated = await client.post(path, json={"overlap_seconds": 0}, headers=tenant.admin)
    assert rotated.status_code == 201
    assert not await works(client, old["token"])
    again = await client.post(path, json={}, headers=tenant.admin)
    assert again.status_code == 404  # it ended: nothing left to rotate


async def test_a_key_is_rotated_once_and_keeps_its_lifetime(client, make_tenant) -> None:
    tenant = await make_tenant()
    in_a_day = datetime.now(UTC) + timedelta(days=1)
    old = await issue(client, tenant, expires_at=in_a_day.isoformat())
    path = f"{KEYS}/{old['key']['id']}/rotate"
    first = await client.post(path, headers=tenant.admin)  # no body: the defaults
    assert first.status_code == 201, first.text
    new_end = datetime.fromisoformat(first.json()["key"]["expires_at"])
    assert timedelta(hours=23, minutes=59) < new_end - datetime.now(UTC) <= timedelta(days=1)
    second = await client.post(path, json={}, headers=tenant.admin)
    assert second.status_code == 409
    assert second.json()["code"] == "api_key_already_rotated"


async def test_another_tenant_cannot_rotate_or_revoke_a_key(client, make_tenant) -> None:
    tenant, other = await make_tenant(), await make_tenant()
    key_id = (await issue(client, tenant))["key"]["id"]
    rotate = await client.post(f"{KEYS}/{key_id}/rotate", json={}, headers=other.admin)
    revoke = await client.delete(f"{KEYS}/{key_id}", headers=other.admin)
    assert (rotate.status_code, revoke.status_code) == (404, 404)


async def test_creation_rotation_and_revocation_are_audited(client, make_tenant) -> None:
    tenant = await make_tenant()
    soon = datetime.now(UTC) + timedelta(hours=1)
    created = await issue(client, tenant, expires_at=soon.isoformat())
    key_id = created["key"]["id"]
    rotated = await client.post(f"{KEYS}/{key_id}/rotate", json={}, headers=tenant.admin)
    new_id = rotated.json()["key"]["id"]
    assert (await client.delete(f"{KEYS}/{new_id}", headers=tenant.admin)).status_code == 204
    [issued] = [
        e for e in await audit(client, tenant, "key.issue") if e["detail"]["key_id"] == key_id
    ]
    assert datetime.fromisoformat(issued["detail"]["expires_at"]) == soon
    assert issued["actor_role"] == "admin"
    [rotation] = await audit(client, tenant, "key.rotate")
    assert (rotation["detail"]["key_id"], rotation["detail"]["new_key_id"]) == (key_id, new_id)
    [revocation] = await audit(client, tenant, "key.revoke")
    assert revocation["detail"]["key_id"] == new_id
    verified = await client.get("/v1/audit/verify", headers=tenant.admin)
    assert verified.json()["ok"] is True


async def test_last_use_is_written_after_the_request_not_on_every_request(
    client, resources, make_tenant
) -> None:
    tenant = await make_tenant()
    created = await issue(client, tenant)
    async with own_app(resources) as (other, app):
        assert await works(other, created["token"])  # authenticates from Postgres: noted
        await app.state.authenticator.usage.flush()
        # With parameters: the module's own app writes its admin key's last use on a
        # timer that a slow machine can see fire meanwhile.
        with count_sql(resources, with_parameters=True) as statements:
            for _ in range(10):
                assert await works(other, created["token"])
        key_id = created["key"]["id"]
        assert not any("last_used_at" in s and key_id in s for s in statements), statements
    listed = {k["id"]: k for k in (await client.get(KEYS, headers=tenant.admin)).json()["items"]}
    used = listed[created["key"]["id"]]["last_used_at"]
    assert used is not None
    assert datetime.now(UTC) - datetime.fromisoformat(used) < timedelta(minutes=1)


@pytest.mark.parametrize(
    ("role", "subject", "problem"),
    [
        ("creator", None, "needs a subject"),
        ("operator", None, "needs a subject"),
        ("gateway", "c-1", "has no subject"),
        ("creator", "nobody-registered", "no creator"),
    ],
)
async def test_a_subject_must_fit_the_role(client, make_tenant, role, subject, problem) -> None:
    tenant = await make_tenant()
    body = {"role": role, "subject": subject}
    answer = await client.post(KEYS, json=body, headers=tenant.admin)
    assert answer.status_code == 422, answer.text
    assert answer.json()["code"] == "api_key_subject_refused"
    assert problem in answer.json()["detail"]
    assert answer.json()["errors"][0]["field"] == "subject"


async def test_a_creator_key_names_a_creator_of_its_own_tenant(client, make_tenant) -> None:
    tenant, other = await make_tenant(), await make_tenant()
    made = await client.post("/v1/creators", json={"external_id": "studio-9"}, headers=other.admin)
    assert made.status_code == 201
    body = {"role": "creator", "subject": "studio-9"}
    assert (await client.post(KEYS, json=body, headers=tenant.admin)).status_code == 422
    assert (await client.post(KEYS, json=body, headers=other.admin)).status_code == 201
    operator = {"role": "operator", "subject": "pool-anything"}
    assert (await client.post(KEYS, json=operator, headers=tenant.admin)).status_code == 201
