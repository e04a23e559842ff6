"""Every route the app serves, called by every role on its own object, on another
creator's object in the same tenant, on another operator's relationship and on another
tenant's object, against one declarative table. A route the table does not list fails.

Codes per role (admin, gateway, creator, operator, compliance):
  A  the role reaches every object of its tenant: 2xx there, 404 in another tenant
  O  only its own objects: 2xx on its own, 404 on every other object
  S  its own object is visible but the change is not its to make: 403 there, else 404
  D  the role may never do this: 403 whatever the object (the guard decides first)
Routes without an object (lists, creation, tenant settings) are called once: A/O mean 2xx.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.authz_world import ROLES, Side, Tenant, build_tenant, unique
from tether.app import create_app

pytestmark = pytest.mark.integration

# A request's body and headers, for a side, made for the caller (its headers).
Build = Callable[[Side, dict[str, str]], Awaitable[dict[str, Any]]]
Fresh = Callable[[Side], Awaitable[Side]]


async def _nothing(_: Side, __: dict[str, str]) -> dict[str, Any]:
    return {}


def body(make: Callable[[Side], dict[str, Any]]) -> Build:
    async def build(side: Side, _: dict[str, str]) -> dict[str, Any]:
        return {"json": make(side)}

    return build


@dataclass(frozen=True)
class Route:
    codes: str  # one letter per role, in ROLES order
    build: Build = _nothing
    fresh: str | None = None  # "relationship", "base", "document" or "key"
    objects: bool | None = None  # None: the path names an object


async def _if_match(side: Side, _: dict[str, str]) -> dict[str, Any]:
    path = f"/v1/personas/{side.persona_id}/profile"
    current = await side.tenant.client.get(path, headers=side.tenant.admin)
    return {
        "json": {"background": "A cheerful barista. 开朗的咖啡师。"},
        "headers": {"If-Match": current.headers["etag"]},
    }


async def _checkpoint(side: Side, _: dict[str, str]) -> dict[str, Any]:
    """A signed checkpoint of the side's chain (made by its admin), as a body."""
    made = await side.tenant.client.post("/v1/audit/checkpoints", headers=side.tenant.admin)
    return {"json": made.json()}


async def _with_reason(_: Side, __: dict[str, str]) -> dict[str, Any]:
    return {"params": {"reason": "data-subject access request"}}


async def _settings_if_match(side: Side, _: dict[str, str]) -> dict[str, Any]:
    current = await side.tenant.client.get("/v1/tenant/settings", headers=side.tenant.admin)
    return {
        "json": {"ownership": {"creator_silence_hours": 48}},
        "headers": {"If-Match": current.headers["etag"]},
    }


async def _forget_token(side: Side, caller: dict[str, str]) -> dict[str, Any]:
    """A token previewed by the caller (a token is the previewing key's), or, where the
    caller may not preview, the gateway's."""
    path = f"/v1/relationships/{side.relationship_id}/forget"
    request = {"memory_ids": [side.memory_id]}
    preview = await side.tenant.client.post(path, json=request, headers=caller)
    if preview.status_code != 200:
        preview = await side.tenant.client.post(path, json=request, headers=side.tenant.gateway)
    return {"json": {"token": preview.json()["token"]}}


async def _fresh_persona_base(side: Side, _: dict[str, str]) -> dict[str, Any]:
    persona_id = await side.tenant.fresh_persona(side)
    return {"json": {"name": unique("kb"), "creator_persona_id": persona_id}}


async def _bind_fresh_persona(side: Side, _: dict[str, str]) -> dict[str, Any]:
    return {"json": {"creator_persona_id": await side.tenant.fresh_persona(side)}}


async def _upload(_: Side, __: dict[str, str]) -> dict[str, Any]:
    return {"files": {"file": (unique("doc") + ".md", "# Care\nWater daily. 每天浇水。".encode())}}


TURNS = {"turns": [{"session_id": "s-1", "role": "user", "text": "我养了一只猫 I have a cat"}]}
R, M = "/v1/relationships/{relationship_id:uuid}", "/memories/{memory_id:uuid}"
KB, DOC = "/v1/knowledge-bases/{knowledge_base_id:uuid}", "/documents/{document_id:uuid}"
U, P = "/v1/users/{user_id:uuid}", "/v1/personas/{persona_id:uuid}"
C = "/v1/creators/{creator_id:uuid}"

TABLE: dict[tuple[str, str], Route] = {
    ("GET", "/v1/api-keys"): Route("ADDDD"),
    ("POST", "/v1/api-keys"): Route("ADDDD", body(lambda s: {"role": "gateway"})),
    ("DELETE", "/v1/api-keys/{key_id:uuid}"): Route("ADDDD", fresh="key"),
    ("POST", "/v1/api-keys/{key_id:uuid}/rotate"): Route("ADDDD", fresh="key"),
    ("GET", "/v1/tenant/limits"): Route("ADDDD"),
    ("PUT", "/v1/tenant/limits"): Route("ADDDD", body(lambda s: {"turns_per_day": 1000})),
    ("GET", "/v1/tenant/session-defaults"): Route("ADDDD"),
    ("PUT", "/v1/tenant/session-defaults"): Route(
        "ADDDD", body(lambda s: {"memory_enabled": True})
    ),
    ("GET", "/v1/tenant/settings"): Route("ADDDD"),
    ("PUT", "/v1/tenant/settings"): Route("ADDDD", _settings_if_match),
    ("GET", "/v1/tenant/retention-runs"): Route("ADDDD"),
    ("GET", "/v1/tenant/reembed-runs"): Route("ADDDD"),
    ("POST", "/v1/resolve"): Route(
        "AADDD",
        body(
            lambda s: {
                "user": {"external_id": unique("u")},
                "persona": {
                    "external_id": s.persona_external_id,
                    "creator_external_id": s.creator_external_id,
                },
            }
        ),
    ),
    ("POST", "/v1/users"): Route("AADDD", body(lambda s: {"external_id": unique("u")})),
    ("GET", "/v1/users"): Route("AAAAD"),
    ("GET", U): Route("AAOOD"),
    ("DELETE", U): Route("ADDDD", fresh="relationship"),
    ("GET", U + "/facets"): Route("AAOOD"),
    ("POST", U + "/facets"): Route("AADDD", body(lambda s: {"name": unique("facet")})),
    ("GET", U + "/relationships"): Route("AAOOD"),
    ("GET", "/v1/creators"): Route("AAAAD"),
    ("POST", "/v1/creators"): Route("AADDD", body(lambda s: {"external_id": unique("c")})),
    ("GET", C): Route("AAOOD"),
    ("PATCH", C): Route("AADDD", body(lambda s: {"display_name": "Studio 七"})),
    ("POST", C + "/personas"): Route("ADODD", body(lambda s: {"external_id": unique("p")})),
    ("GET", "/v1/personas"): Route("AAAAD"),
    ("GET", P): Route("AAOOD"),
    ("PATCH", P): Route("ADODD", body(lambda s: {"display_name": "Luna 月"})),
    ("GET", P + "/profile"): Route("AAODD"),
    ("PUT", P + "/profile"): Route("ADODD", _if_match),
    ("GET", P + "/profile/history"): Route("AAODD"),
    ("GET", "/v1/relationships"): Route("AAAAD"),
    ("GET", R): Route("AAOOD"),
    ("PATCH", R): Route("AADDD", body(lambda s: {"privacy_mode": "normal"})),
    ("POST", R + "/transfer"): Route(
        "AADDD", body(lambda s: {"to": {"kind": "pool", "id": "op-9"}}), fresh="relationship"
    ),
    ("GET", R + "/ownership-events"): Route("AAOOD"),
    ("PUT", R + "/pool-inheritance"): Route("ADODD", body(lambda s: {"layers": ["semantic"]})),
    ("GET", R + "/turns"): Route("DAOOD"),
    ("POST", R + "/turns"): Route("DAODD", body(lambda s: TURNS)),
    ("GET", R + "/sessions"): Route("DAOOD"),
    ("POST", R + "/sessions/{session_id:str}/end"): Route("DAODD"),
    ("GET", R + "/sessions/{session_id:str}"): Route("DAOOD"),
    ("PUT", R + "/sessions/{session_id:str}"): Route(
        "DAODD", body(lambda s: {"memory_enabled": False, "knowledge_enabled": None})
    ),
    ("DELETE", R + "/sessions/{session_id:str}"): Route("DAODD"),
    ("GET", R + "/consolidations"): Route("DAOOD"),
    ("GET", R + "/memories"): Route("DAOOD"),
    ("POST", R + "/memories"): Route("DAODD", body(lambda s: {"content": unique("用户喜欢茶")})),
    ("POST", R + "/memories/batch"): Route(
        "DAODD", body(lambda s: {"memories": [{"content": unique("likes tea")}]})
    ),
    ("GET", R + M): Route("DAOOD"),
    ("PATCH", R + M): Route("DAODD", body(lambda s: {"content": "The user keeps 3 hives"})),
    ("DELETE", R + M): Route("DAODD", fresh="relationship"),
    ("POST", R + M + "/deactivate"): Route(
        "DAODD", body(lambda s: {"reason": "moved"}), fresh="relationship"
    ),
    ("GET", R + M + "/history"): Route("DAOOD"),
    ("GET", R + M + "/sources"): Route("DAOOD"),
    ("GET", R + "/conflicts"): Route("DAOOD"),
    ("POST", R + M + "/resolve"): Route("DAODD", body(lambda s: {"reason": "checked"})),
    ("POST", R + "/search"): Route("DAOOD", body(lambda s: {"query": "bees 蜜蜂"})),
    ("GET", R + "/recap"): Route("DAOOD"),
    ("POST", "/v1/memories/extract"): Route(
        "DAOOD",
        body(
            lambda s: {
                "relationship_id": s.relationship_id,
                "turns": [{"role": "user", "text": "我喜欢喝绿茶 I like green tea"}],
            }
        ),
        objects=True,
    ),
    ("POST", "/v1/context"): Route(
        "DAOOD",
        body(lambda s: {"relationship_id": s.relationship_id, "query": "bees"}),
        objects=True,
    ),
    ("POST", R + "/forget"): Route("DAODD", body(lambda s: {"memory_ids": [s.memory_id]})),
    ("POST", R + "/forget/confirm"): Route("DAODD", _forget_token, fresh="relationship"),
    ("GET", U + "/export"): Route("AADDA", _with_reason),
    ("GET", R + "/export"): Route("AADDA"),
    ("POST", U + "/erasure"): Route(
        "ADDDA", body(lambda s: {"reason": "data-subject request 删除"}), fresh="relationship"
    ),
    ("GET", U + "/access-report"): Route("ADDDA"),
    ("GET", U + "/consent"): Route("AADDD"),
    ("PUT", U + "/consent"): Route(
        "AADDD", body(lambda s: {"scopes": ["profile"], "source": "settings page"})
    ),
    ("GET", U + "/profile"): Route("AADDD"),
    ("PUT", U + "/profile/fields/{field:str}"): Route(
        "AADDD", body(lambda s: {"value": "zh-CN", "scope": "profile"})
    ),
    ("GET", "/v1/tenant/privacy-patterns"): Route("ADDDD"),
    ("PUT", "/v1/tenant/privacy-patterns"): Route("ADDDD", body(lambda s: {"patterns": []})),
    ("POST", "/v1/policies/check"): Route(
        "ADDDA", body(lambda s: {"role": "gateway", "object": "identity", "action": "read"})
    ),
    ("GET", "/v1/policies/tenant"): Route("ADDDA"),
    ("PUT", "/v1/policies/tenant"): Route("ADDDD", body(lambda s: {"rules": []})),
    ("GET", "/v1/audit"): Route("ADDDA"),
    ("GET", "/v1/audit/verify"): Route("ADDDA"),
    ("GET", "/v1/audit/export"): Route("ADDDA"),
    ("POST", "/v1/audit/verify"): Route("ADDDA", _checkpoint),
    ("GET", "/v1/audit/access"): Route("ADDDA"),
    ("GET", "/v1/audit/checkpoints/latest"): Route("ADDDA", _checkpoint),
    ("POST", "/v1/audit/checkpoints"): Route("ADDDA"),
    ("GET", "/v1/audit/public-key"): Route("ADDDA"),
    ("GET", "/v1/knowledge-bases"): Route("AAADD"),
    ("POST", "/v1/knowledge-bases"): Route("ADODD", _fresh_persona_base, objects=True),
    ("GET", KB): Route("AAODD"),
    ("PATCH", KB): Route("ADODD", body(lambda s: {"description": "说明书 manuals"})),
    ("DELETE", KB): Route("ADODD", fresh="base"),
    ("PUT", KB + "/persona"): Route("ADODD", _bind_fresh_persona, fresh="base"),
    ("DELETE", KB + "/persona"): Route("ADSDD", fresh="base"),
    ("POST", KB + "/query"): Route("AAODD", body(lambda s: {"query": "warranty 保修"})),
    ("GET", KB + "/documents"): Route("AAODD"),
    ("POST", KB + "/documents"): Route("ADODD", _upload),
    ("GET", KB + DOC): Route("AAODD"),
    ("DELETE", KB + DOC): Route("ADODD", fresh="document"),
    ("POST", KB + DOC + "/reindex"): Route("ADODD"),
}
PUBLIC = {("GET", "/health"), ("GET", "/ready"), ("GET", "/metrics")}
VARIANTS = ("own", "other_creator", "other_operator", "other_tenant")


def served_routes() -> set[tuple[str, str]]:
    from tether.core.settings import Settings

    app = create_app(Settings(_env_file=None))  # type: ignore[call-arg]
    served = set()
    for route in app.routes:
        if route.path.startswith("/console"):
            continue  # the console's pages: tests/console/test_console_matrix.py covers them
        for handler in getattr(route, "route_handlers", []):
            if handler.fn.__module__.startswith("litestar."):
                continue  # the OpenAPI document and Litestar's OPTIONS answers
            served |= {(method, route.path) for method in handler.http_methods}
    return served


def test_the_table_lists_every_route_the_app_serves() -> None:
    served = served_routes() - PUBLIC
    assert served - TABLE.keys() == set(), "routes with no expectation"
    assert TABLE.keys() - served == set(), "expectations for routes the app does not serve"


@pytest.fixture(scope="module")
async def world(client, make_tenant) -> dict[str, Tenant]:
    return {
        "a": await build_tenant(client, make_tenant),
        "b": await build_tenant(client, make_tenant),
    }


def side_for(world: dict[str, Tenant], role: str, variant: str) -> Side:
    home = world["a"].sides
    return {
        "own": home["op1"] if role == "operator" else home["alice"],
        "other_creator": home["bob"],
        "other_operator": home["op2"],
        "other_tenant": world["b"].sides["alice"],
    }[variant]


def expected(code: str, variant: str, objects: bool) -> str:
    if code == "D":
        return "403"
    if not objects:
        return "2xx"
    if code == "S":
        return "403" if variant == "own" else "404"
    reached = variant == "own" or (code == "A" and variant != "other_tenant")
    return "2xx" if reached else "404"


async def _prepared(route: Route, side: Side) -> tuple[Side, dict[str, str]]:
    tenant = side.tenant
    if route.fresh == "relationship":
        side = await tenant.fresh(side)
    elif route.fresh == "base":
        side = await tenant.fresh_base(side)
    elif route.fresh == "document":
        side = await tenant.fresh_document(side)
    extra = {"key_id": await tenant.fresh_key()} if route.fresh == "key" else {}
    return side, extra


def concrete(template: str, side: Side, extra: dict[str, str]) -> str:
    values = {
        "user_id": side.user_id,
        "creator_id": side.creator_id,
        "persona_id": side.persona_id,
        "relationship_id": side.relationship_id,
        "memory_id": side.memory_id,
        "knowledge_base_id": side.knowledge_base_id,
        "document_id": side.document_id,
        "session_id": "s-1",
        "field": "language",
        **extra,
    }
    return re.sub(r"\{(\w+):\w+\}", lambda m: values[m.group(1)], template)


@pytest.mark.parametrize(("method", "path"), sorted(TABLE))
async def test_route_answers_each_role_as_the_table_says(world, method: str, path: str) -> None:
    route = TABLE[(method, path)]
    objects = route.objects if route.objects is not None else "{" in path
    wrong = []
    for role, code in zip(ROLES, route.codes, strict=True):
        for variant in VARIANTS if objects else ("own",):
            side, extra = await _prepared(route, side_for(world, role, variant))
            caller = world["a"].keys[role]
            request = await route.build(side, caller)
            headers = caller | request.pop("headers", {})
            response = await side.tenant.client.request(
                method, concrete(path, side, extra), headers=headers, **request
            )
            got = "2xx" if response.status_code < 300 else str(response.status_code)
            want = expected(code, variant, objects)
            if got != want:
                wrong.append(f"{role}/{variant}: {got} (want {want}) {response.text[:160]}")
    assert not wrong, "\n".join(wrong)
