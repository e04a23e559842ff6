"""What a key reaches inside its own tenant: lists are filtered (not just guarded), the
context only uses knowledge its relationship's persona may use, exports say what they
withhold, and — as a property — no sequence of reads by any role returns an id outside
that role's reach."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from tests.authz_world import ROLES, Side, Tenant, build_tenant

pytestmark = pytest.mark.integration

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture(scope="module")
async def world(client, make_tenant) -> dict[str, Tenant]:
    return {
        "a": await build_tenant(client, make_tenant),
        "b": await build_tenant(client, make_tenant),
    }


def _relationship_ids(side: Side) -> set[str]:
    """The ids that belong to the relationship alone (not to its persona or creator)."""
    return {
        side.relationship_id,
        side.user_id,
        side.facet_id,
        side.memory_id,
        side.private_memory_id,
    }


def out_of_reach(world: dict[str, Tenant], role: str) -> set[str]:
    """Ids the role's key (of tenant a) must never receive."""
    home, other = world["a"].sides, world["b"]
    ids = {i for side in other.sides.values() for i in side.ids | {side.private_memory_id}}
    ids.add(other.shared_base_id)
    if role == "creator":  # alice
        ids |= home["bob"].ids | home["op2"].ids
        ids |= {home["bob"].private_memory_id, home["op2"].private_memory_id}
    if role == "operator":  # op-1
        ids |= _relationship_ids(home["alice"]) | home["bob"].ids | home["op2"].ids
        ids |= {home["bob"].private_memory_id, home["op2"].private_memory_id}
    if role in ("gateway", "operator"):
        ids |= {side.private_memory_id for side in home.values()}
    return ids


LISTS = [
    "/v1/users",
    "/v1/creators",
    "/v1/personas",
    "/v1/relationships",
    "/v1/knowledge-bases",
]


@pytest.mark.parametrize("role", ["creator", "operator"])
async def test_lists_hold_only_what_the_key_reaches(world, role: str) -> None:
    tenant = world["a"]
    own = tenant.sides["alice" if role == "creator" else "op1"]
    hidden = out_of_reach(world, role)
    seen: set[str] = set()
    paths = [*LISTS, f"/v1/users/{own.user_id}/facets", f"/v1/users/{own.user_id}/relationships"]
    for path in paths:
        response = await tenant.client.get(path, headers=tenant.keys[role])
        if role == "operator" and path == "/v1/knowledge-bases":
            assert response.status_code == 403  # no knowledge policy at all
            continue
        assert response.status_code == 200, f"{path}: {response.text}"
        ids = {item["id"] for item in response.json()["items"]}
        assert not ids & hidden, f"{role} listed {ids & hidden} at {path}"
        seen |= ids
    # Not vacuous: the key's own objects are listed.
    assert {own.user_id, own.creator_id, own.persona_id, own.relationship_id} <= seen


async def test_context_refuses_another_creators_knowledge_base(world) -> None:
    tenant = world["a"]
    bob, alice = tenant.sides["bob"], tenant.sides["alice"]
    for key in (tenant.keys["creator_bob"], tenant.gateway):
        for base_id, status in (
            (alice.knowledge_base_id, 404),
            (world["b"].shared_base_id, 404),
            (tenant.shared_base_id, 200),
            (bob.knowledge_base_id, 200),
        ):
            request = {
                "relationship_id": bob.relationship_id,
                "query": "warranty 保修",
                "knowledge_enabled": True,
                "knowledge_base_id": base_id,
            }
            response = await tenant.client.post("/v1/context", json=request, headers=key)
            assert response.status_code == status, response.text
            if status == 404:
                assert "Warranty" not in response.text


def _export(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


async def test_a_gateway_export_withholds_private_notes_and_says_so(world) -> None:
    tenant = world["a"]
    side = tenant.sides["alice"]
    path = f"/v1/users/{side.user_id}/export"
    gateway = await tenant.client.get(path, headers=tenant.gateway)
    assert gateway.status_code == 200
    lines = _export(gateway.text)
    assert lines[0] == {
        "kind": "export",
        "user_id": side.user_id,
        "complete": False,
        "withheld": ["creator_private_notes"],
    }
    assert side.private_memory_id not in gateway.text
    assert "贵宾" not in gateway.text
    assert side.memory_id in {line.get("id") for line in lines if line["kind"] == "memory"}
    for role in ("admin", "compliance"):
        # A compliance key acts on the user's behalf: it says why (docs/compliance-rights.md).
        reason = {"reason": "subject access request 访问请求"}
        full = await tenant.client.get(path, params=reason, headers=tenant.keys[role])
        assert full.status_code == 200
        lines = _export(full.text)
        assert lines[0]["complete"] is True
        assert lines[0]["withheld"] == []
        kinds = {(line["kind"], line.get("memory_id") or line.get("id")) for line in lines}
        assert ("memory", side.private_memory_id) in kinds
        assert ("memory_version", side.private_memory_id) in kinds


READS = [
    ("GET", "/v1/users/{user_id}"),
    ("GET", "/v1/users/{user_id}/facets"),
    ("GET", "/v1/users/{user_id}/relationships"),
    ("GET", "/v1/users/{user_id}/export"),
    ("GET", "/v1/users/{user_id}/profile"),
    ("GET", "/v1/creators/{creator_id}"),
    ("GET", "/v1/personas/{persona_id}"),
    ("GET", "/v1/personas/{persona_id}/profile/history"),
    ("GET", "/v1/relationships/{relationship_id}"),
    ("GET", "/v1/relationships/{relationship_id}/ownership-events"),
    ("GET", "/v1/relationships/{relationship_id}/memories"),
    ("GET", "/v1/relationships/{relationship_id}/memories/{memory_id}"),
    ("GET", "/v1/relationships/{relationship_id}/memories/{private_memory_id}"),
    ("GET", "/v1/relationships/{relationship_id}/memories/{private_memory_id}/history"),
    ("GET", "/v1/relationships/{relationship_id}/consolidations"),
    ("GET", "/v1/relationships/{relationship_id}/turns"),
    ("POST", "/v1/relationships/{relationship_id}/search"),
    ("POST", "/v1/context"),
    ("GET", "/v1/knowledge-bases/{knowledge_base_id}"),
    ("GET", "/v1/knowledge-bases/{knowledge_base_id}/documents"),
    ("POST", "/v1/knowledge-bases/{knowledge_base_id}/query"),
    ("GET", "/v1/audit"),
    *[("GET", path) for path in LISTS],
]


def _answer(path: str, text: str) -> str:
    """The answer, without what the tenant's own keys sent: a refused request is audited
    with the path it asked for, ids of another tenant included."""
    if path != "/v1/audit":
        return text
    answer = json.loads(text)
    for event in answer["items"]:
        (event.get("detail") or {}).pop("route", None)
    return json.dumps(answer, ensure_ascii=False)


SIDES = [("a", "alice"), ("a", "op1"), ("a", "bob"), ("a", "op2"), ("b", "alice"), ("b", "bob")]


@hypothesis_settings(
    max_examples=8,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    calls=st.lists(
        st.tuples(st.sampled_from(ROLES), st.sampled_from(READS), st.sampled_from(SIDES)),
        min_size=10,
        max_size=25,
    )
)
async def test_no_sequence_of_reads_returns_an_id_out_of_reach(world, calls) -> None:
    tenant = world["a"]
    for role, (method, template), (tenant_name, side_name) in calls:
        side = world[tenant_name].sides[side_name]
        path = template.format(**{k: getattr(side, k) for k in re.findall(r"\{(\w+)\}", template)})
        request: dict = {}
        if method == "POST":
            request["json"] = {"query": "bees warranty 养蜂"}
            if path == "/v1/context":
                request["json"] |= {
                    "relationship_id": side.relationship_id,
                    "knowledge_enabled": True,
                }
        response = await tenant.client.request(method, path, headers=tenant.keys[role], **request)
        assert response.status_code < 500, f"{role} {method} {path}: {response.text}"
        if response.status_code >= 300:
            continue
        leaked = set(UUID.findall(_answer(path, response.text))) & out_of_reach(world, role)
        assert not leaked, f"{role} {method} {path} returned {leaked}"
        if role in ("gateway", "operator"):
            assert "贵宾" not in response.text, f"{role} saw a private note at {path}"
