"""Failed authentications are throttled per client address, valid keys from that address
still work, and tokens issued before signing (legacy) still authenticate while they exist
(real Postgres and Redis)."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.access.tokens import LEGACY_LENGTH, TOKEN_PREFIX, generate_token
from tests.integration.own_app import own_app
from tests.support import app_client, count_sql

LIMIT = 5


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def invented() -> str:
    return generate_token(secrets.token_bytes(32))


def legacy() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


async def test_an_address_is_throttled_after_repeated_failures(
    client, resources, make_tenant
) -> None:
    tenant = await make_tenant()
    valid = await tenant.key("gateway")
    limits = {"failed_auth_per_minute": LIMIT}
    async with own_app(resources, "198.51.100.7", limits=limits) as (attacker, _):
        statuses = [
            (await attacker.get("/v1/personas", headers=bearer(invented()))).status_code
            for _ in range(LIMIT + 3)
        ]
        assert statuses == [401] * LIMIT + [429] * 3
        refused = await attacker.get("/v1/personas", headers=bearer("garbage"))
        assert refused.status_code == 429
        assert refused.json()["code"] == "too_many_failed_authentications"
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
        # The address's valid key is still served: an attacker behind the same address
        # (a NAT, a proxy) does not lock real clients out.
        assert (await attacker.get("/v1/personas", headers=valid)).status_code == 200
    async with own_app(resources, "198.51.100.8", limits=limits) as (neighbour, _):
        # Another address is not throttled; another process learns of the first one
        # from Redis at its first failure.
        answer = await neighbour.get("/v1/personas", headers=bearer(invented()))
        assert answer.status_code == 401
    async with own_app(resources, "198.51.100.7", limits=limits) as (again, _):
        answer = await again.get("/v1/personas", headers=bearer(invented()))
        assert answer.status_code == 429


async def test_failed_authentication_is_still_401_when_redis_is_away(
    client, resources, make_tenant, tmp_path
) -> None:
    await make_tenant()
    absent = f"unix://{tmp_path}/absent.sock"
    settings = resources.settings.model_copy(update={"redis_url": absent})
    async with app_client(settings) as away:
        for _ in range(3):
            answer = await away.get("/v1/personas", headers=bearer(invented()))
            assert answer.status_code == 401


@pytest.fixture
async def legacy_tokens(superuser: AsyncEngine) -> AsyncIterator[None]:
    """This deployment had keys before tokens were signed (as after upgrading one)."""
    async with superuser.begin() as connection:
        await connection.execute(text("UPDATE api_key_signing SET legacy_tokens = true"))
    yield
    async with superuser.begin() as connection:
        await connection.execute(text("UPDATE api_key_signing SET legacy_tokens = false"))


async def _legacy_key(superuser: AsyncEngine, tenant: Any, token: str) -> None:
    async with superuser.begin() as connection:
        await connection.execute(
            text(
                "INSERT INTO api_keys (id, tenant_id, role, name, prefix, key_hash, signed)"
                " VALUES (gen_random_uuid(), :t, 'gateway', 'old', :p, :h, false)"
            ),
            {"t": tenant.id, "p": token[:10], "h": hashlib.sha256(token.encode()).digest()},
        )


async def test_a_legacy_token_still_works_and_shows_unsigned(
    client, resources, make_tenant, superuser, legacy_tokens
) -> None:
    tenant = await make_tenant()
    token = legacy()
    assert len(token) == LEGACY_LENGTH
    await _legacy_key(superuser, tenant, token)
    async with own_app(resources) as (fresh, _):  # reads the signing row anew
        assert (await fresh.get("/v1/personas", headers=bearer(token))).status_code == 200
        listed = (await fresh.get("/v1/api-keys", headers=tenant.admin)).json()["items"]
        assert [k["signed"] for k in listed if k["prefix"] == token[:10]] == [False]


async def test_legacy_tokens_are_refused_without_a_query_where_none_exist(
    client, resources, make_tenant
) -> None:
    """A new deployment never had unsigned keys: a token of the old shape is refused
    from its shape alone."""
    tenant = await make_tenant()
    assert (await client.get("/v1/personas", headers=tenant.admin)).status_code == 200
    with count_sql(resources) as statements:
        answer = await client.get("/v1/personas", headers=bearer(legacy()))
    assert answer.status_code == 401
    assert statements == []


async def test_unknown_legacy_tokens_stop_costing_queries_once_the_address_is_throttled(
    client, resources, make_tenant, superuser, legacy_tokens
) -> None:
    await make_tenant()
    limits = {"failed_auth_per_minute": LIMIT}
    async with own_app(resources, "198.51.100.9", limits=limits) as (attacker, _):
        with count_sql(resources) as first:
            for _ in range(LIMIT):
                answer = await attacker.get("/v1/personas", headers=bearer(legacy()))
                assert answer.status_code == 401
        # The lookup asks the system function for the digest's tenant (migration 0017).
        lookups = [s for s in first if "tether_key_tenant" in s]
        assert len(lookups) == LIMIT  # unsigned tokens can only be checked by a lookup
        # The failure past the limit is looked up, then answered 429; later ones are not.
        answer = await attacker.get("/v1/personas", headers=bearer(legacy()))
        assert answer.status_code == 429
        with count_sql(resources) as after:
            for _ in range(20):
                answer = await attacker.get("/v1/personas", headers=bearer(legacy()))
                assert answer.status_code == 429
        assert after == []
