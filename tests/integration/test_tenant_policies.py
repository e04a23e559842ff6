"""Tenant policy rules on top of the file policy, through the real API: grants and denies
apply to that tenant only, at once in the process that changed them and within the TTL
elsewhere; file denies and administrative objects are out of a tenant's reach; every
change is audited."""

from __future__ import annotations

import asyncio
import itertools

import httpx
import pytest
from sqlalchemy import text

from tests.support import resolve_body
from tether.core.resources import Resources
from tether.core.settings import AccessSettings, Settings
from tether.core.tenant_sessions import tenant_transaction

pytestmark = pytest.mark.integration

TTL = 1.5
URL = "/v1/policies/tenant"
COMPLIANCE_READS_MEMORY = {
    "role": "compliance",
    "object": "relationship_memory",
    "action": "read",
    "effect": "allow",
}


@pytest.fixture(scope="module")
def settings(settings: Settings) -> Settings:
    """A short policy TTL, so the other-replica case takes seconds."""
    return settings.model_copy(update={"access": AccessSettings(policy_cache_seconds=TTL)})


async def _relationship_with_memory(client: httpx.AsyncClient, tenant, user: str) -> str:  # type: ignore[no-untyped-def]
    gateway = await tenant.key("gateway")
    response = await client.post("/v1/resolve", json=resolve_body(user), headers=gateway)
    assert response.status_code in (200, 201), response.text
    rid = str(response.json()["relationship_id"])
    created = await client.post(
        f"/v1/relationships/{rid}/memories",
        json={"content": f"{user} keeps bees on the roof"},
        headers=gateway,
    )
    assert created.status_code == 201, created.text
    return rid


async def _put(client: httpx.AsyncClient, headers: dict[str, str], *rules: dict) -> httpx.Response:
    return await client.put(URL, json={"rules": list(rules)}, headers=headers)


async def _check(client: httpx.AsyncClient, headers: dict[str, str], **request: str) -> dict:
    response = await client.post("/v1/policies/check", json=request, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def _audit(client: httpx.AsyncClient, tenant, **params: str) -> list[dict]:  # type: ignore[no-untyped-def]
    response = await client.get("/v1/audit", params={"limit": 200, **params}, headers=tenant.admin)
    assert response.status_code == 200, response.text
    return response.json()["items"]


async def test_a_tenant_grant_opens_memories_to_its_compliance_key_only(
    client, make_tenant
) -> None:
    a, b = await make_tenant(), await make_tenant()
    rid_a = await _relationship_with_memory(client, a, "grant-a")
    rid_b = await _relationship_with_memory(client, b, "grant-b")
    compliance_a, compliance_b = await a.key("compliance"), await b.key("compliance")
    memories_a = f"/v1/relationships/{rid_a}/memories"
    assert (await client.get(memories_a, headers=compliance_a)).status_code == 403
    changed = await _put(client, a.admin, COMPLIANCE_READS_MEMORY)
    assert changed.status_code == 200, changed.text
    assert changed.json() == {"rules": [COMPLIANCE_READS_MEMORY]}
    listed = await client.get(memories_a, headers=compliance_a)
    assert listed.status_code == 200, listed.text
    assert [m["content"] for m in listed.json()["items"]] == ["grant-a keeps bees on the roof"]
    search = await client.post(
        f"/v1/relationships/{rid_a}/search", json={"query": "bees"}, headers=compliance_a
    )
    assert search.status_code == 200, search.text
    assert len(search.json()["items"]) == 1
    # Tenant B's compliance key is not touched by tenant A's rule...
    memories_b = f"/v1/relationships/{rid_b}/memories"
    assert (await client.get(memories_b, headers=compliance_b)).status_code == 403
    # ...and tenant A's rule gives no way into tenant B's content.
    assert (await client.get(memories_b, headers=compliance_a)).status_code == 404
    explained = await _check(
        client, compliance_a, role="compliance", object="relationship_memory", action="read"
    )
    assert explained["allowed"] is True
    assert explained["source"] == "tenant"
    assert explained["explanation"].startswith("allowed by tenant rule")
    other = await _check(
        client, compliance_b, role="compliance", object="relationship_memory", action="read"
    )
    assert other["allowed"] is False
    assert (await client.get(URL, headers=b.admin)).json() == {"rules": []}


async def _user_with_profile(client: httpx.AsyncClient, tenant) -> tuple[dict, str]:  # type: ignore[no-untyped-def]
    gateway = await tenant.key("gateway")
    response = await client.post("/v1/resolve", json=resolve_body("deny-user"), headers=gateway)
    user = response.json()["global_user_id"]
    assert (await client.get(f"/v1/users/{user}/profile", headers=gateway)).status_code == 200
    return gateway, user


async def test_a_tenant_deny_applies_at_once_and_its_denials_are_audited(
    client, make_tenant
) -> None:
    a, b = await make_tenant(), await make_tenant()
    (gateway_a, user_a), (gateway_b, user_b) = (
        await _user_with_profile(client, a),
        await _user_with_profile(client, b),
    )
    deny = {"role": "gateway", "object": "global_user_profile", "action": "read", "effect": "deny"}
    assert (await _put(client, a.admin, deny)).status_code == 200
    refused = await client.get(f"/v1/users/{user_a}/profile", headers=gateway_a)
    assert refused.status_code == 403
    assert (await client.get(f"/v1/users/{user_b}/profile", headers=gateway_b)).status_code == 200
    [event] = await _audit(client, a, decision="deny")
    assert event["actor_role"] == "gateway"
    assert event["object"] == "global_user_profile"
    assert event["matched_rule"] == "gateway, global_user_profile, read, deny"
    assert event["detail"]["rule_source"] == "tenant"
    explained = await _check(
        client, a.admin, role="gateway", object="global_user_profile", action="read"
    )
    assert (explained["allowed"], explained["source"]) == (False, "tenant")
    # Writing stays allowed: the deny names one action.
    field = {"value": "fr", "scope": "profile"}
    written = await client.put(
        f"/v1/users/{user_a}/profile/fields/language", json=field, headers=gateway_a
    )
    assert written.status_code == 200, written.text


async def test_a_tenant_allow_cannot_lift_a_file_deny(client, make_tenant) -> None:
    tenant = await make_tenant()
    lift = {
        "role": "operator",
        "object": "relationship_memory:private",
        "action": "read",
        "effect": "allow",
    }
    assert (await _put(client, tenant.admin, lift)).status_code == 200
    explained = await _check(
        client, tenant.admin, role="operator", object="relationship_memory:private", action="read"
    )
    assert explained["allowed"] is False
    assert explained["source"] == "file"
    assert explained["matched_rule"] == ["operator", "relationship_memory:private", "*", "deny"]


@pytest.mark.parametrize(
    ("obj", "action", "effect"),
    [
        ("api_key", "write", "allow"),
        ("policy", "write", "allow"),
        ("tenant_settings", "*", "allow"),
        ("policy", "*", "deny"),  # nor may a tenant lock its admins out of its own rules
        ("relationship_memory*", "read", "allow"),
        ("billing", "read", "allow"),
    ],
)
async def test_administrative_and_unknown_objects_are_refused(
    client, make_tenant, obj: str, action: str, effect: str
) -> None:
    tenant = await make_tenant()
    assert (await _put(client, tenant.admin, COMPLIANCE_READS_MEMORY)).status_code == 200
    rule = {"role": "gateway", "object": obj, "action": action, "effect": effect}
    refused = await _put(client, tenant.admin, COMPLIANCE_READS_MEMORY, rule)
    assert refused.status_code == 422, refused.text
    problem = refused.json()
    assert problem["code"] == "policy_rule_refused"
    assert problem["errors"][0]["field"] == "rules[1].object"
    assert (await client.get(URL, headers=tenant.admin)).json() == {
        "rules": [COMPLIANCE_READS_MEMORY]
    }  # nothing changed


async def test_only_admins_change_rules_and_compliance_may_read_them(client, make_tenant) -> None:
    tenant = await make_tenant()
    compliance, gateway = await tenant.key("compliance"), await tenant.key("gateway")
    assert (await _put(client, compliance, COMPLIANCE_READS_MEMORY)).status_code == 403
    assert (await _put(client, gateway, COMPLIANCE_READS_MEMORY)).status_code == 403
    assert (await client.get(URL, headers=gateway)).status_code == 403
    assert (await client.get(URL, headers=compliance)).json() == {"rules": []}
    denials = await _audit(client, tenant, decision="deny")
    assert {(e["actor_role"], e["object"]) for e in denials} == {
        ("compliance", "policy"),
        ("gateway", "policy"),
    }


async def test_changes_are_audited_with_before_and_after_and_the_chain_verifies(
    client, make_tenant
) -> None:
    tenant = await make_tenant()
    deny = {"role": "creator", "object": "knowledge", "action": "delete", "effect": "deny"}
    assert (await _put(client, tenant.admin, COMPLIANCE_READS_MEMORY)).status_code == 200
    # The same set again (duplicates collapse): the rules are a set, PUT is idempotent.
    again = await _put(client, tenant.admin, deny, COMPLIANCE_READS_MEMORY, deny)
    assert again.json() == {"rules": [COMPLIANCE_READS_MEMORY, deny]}  # sorted, no duplicate
    assert (await _put(client, tenant.admin)).json() == {"rules": []}
    changes = await _audit(client, tenant, action="policy.change")
    one = [list(COMPLIANCE_READS_MEMORY.values())]
    two = [*one, list(deny.values())]
    assert [e["detail"] for e in changes] == [
        {"before": [], "after": one},
        {"before": one, "after": two},
        {"before": two, "after": []},
    ]
    assert all(e["actor_role"] == "admin" and e["object"] == "policy" for e in changes)
    events = await _audit(client, tenant)
    assert all(e["prev_hash"] == p["hash"] for p, e in itertools.pairwise(events))
    verify = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert verify == {"ok": True, "checked": len(events)}


async def test_concurrent_replacements_apply_one_after_the_other(client, make_tenant) -> None:
    tenant = await make_tenant()
    sets = [
        [{"role": role, "object": "audit", "action": "read", "effect": "allow"}]
        for role in ("gateway", "creator", "operator")
    ]
    answers = await asyncio.gather(*(_put(client, tenant.admin, *rules) for rules in sets))
    assert [a.status_code for a in answers] == [200, 200, 200]
    final = (await client.get(URL, headers=tenant.admin)).json()["rules"]
    assert final in sets  # one whole set, never a mix
    changes = await _audit(client, tenant, action="policy.change")
    assert changes[0]["detail"]["before"] == []
    for earlier, later in itertools.pairwise(changes):
        assert later["detail"]["before"] == earlier["detail"]["after"]
    assert [list(r.values()) for r in final] == changes[-1]["detail"]["after"]


async def test_a_rule_written_by_another_replica_applies_within_the_ttl(
    client, make_tenant, resources: Resources
) -> None:
    tenant = await make_tenant()
    rid = await _relationship_with_memory(client, tenant, "replica")
    compliance = await tenant.key("compliance")
    memories = f"/v1/relationships/{rid}/memories"
    assert (await client.get(memories, headers=compliance)).status_code == 403  # loads the rules
    # What another API process's PUT leaves in Postgres (this process is not told).
    async with tenant_transaction(resources.sessions, tenant.id) as session:
        await session.execute(
            text(
                "INSERT INTO tenant_policies (id, tenant_id, role, object, action, effect)"
                " VALUES (gen_random_uuid(), :t, 'compliance', 'relationship_memory',"
                " 'read', 'allow')"
            ),
            {"t": tenant.id},
        )
    assert (await client.get(memories, headers=compliance)).status_code == 403  # not yet
    await asyncio.sleep(TTL + 0.2)
    assert (await client.get(memories, headers=compliance)).status_code == 200


async def test_a_rule_smuggled_in_by_sql_cannot_open_an_administrative_object(
    client, make_tenant, resources: Resources
) -> None:
    tenant = await make_tenant()
    async with tenant_transaction(resources.sessions, tenant.id) as session:
        await session.execute(
            text(
                "INSERT INTO tenant_policies (id, tenant_id, role, object, action, effect)"
                " VALUES (gen_random_uuid(), :t, 'gateway', 'api_key', 'write', 'allow')"
            ),
            {"t": tenant.id},
        )
    gateway = await tenant.key("gateway")  # the tenant's first request: its rules are read
    body = {"role": "admin", "name": "minted by a gateway"}
    assert (await client.post("/v1/api-keys", json=body, headers=gateway)).status_code == 403


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rules": [{**COMPLIANCE_READS_MEMORY, "role": "owner"}]}, "rules[0].role"),
        ({"rules": [{**COMPLIANCE_READS_MEMORY, "effect": "maybe"}]}, "rules[0].effect"),
        ({"rules": [{**COMPLIANCE_READS_MEMORY, "action": "fly"}]}, "rules[0].action"),
        ({"rules": [{**COMPLIANCE_READS_MEMORY, "role": 3}]}, "rules[0].role"),
        ({"rules": [{**COMPLIANCE_READS_MEMORY, "why": "x"}]}, "rules[0].why"),
        ({"rules": [{"role": "gateway", "object": "identity"}]}, "rules[0].action"),
        ({"rules": COMPLIANCE_READS_MEMORY}, "rules"),
        ({"rules": [COMPLIANCE_READS_MEMORY] * 201}, "rules"),
        ({}, "rules"),
    ],
)
async def test_bad_bodies_are_refused_naming_the_field(
    client, make_tenant, body: dict, field: str
) -> None:
    tenant = await make_tenant()
    response = await client.put(URL, json=body, headers=tenant.admin)
    assert response.status_code in (400, 422), response.text
    problem = response.json()
    assert problem["code"] == "invalid_input"
    assert [e["field"] for e in problem["errors"]] == [field]
