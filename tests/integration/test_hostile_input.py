"""Hostile input answers 4xx problems, never 5xx (issue 33, "NUL characters give 500"):
NUL in every secondary text field the issue named, in Chinese and English, every list
endpoint given a limit out of range, cursors and parameters with NUL or garbage, lone
surrogates, bytes that are not UTF-8, bodies that are not JSON, nested too deeply or
labelled as another media type. Each case also checks nothing was stored."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support import resolve_body

pytestmark = pytest.mark.integration

PROBLEM = "application/problem+json"
NUL = "\u0000"
# A NUL in the middle of Chinese and of English text.
HOSTILE = [f"用户说{NUL}了", f"the user said{NUL}so"]


def assert_problem(response: httpx.Response, status: int, field: str | None = None) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    if field is not None:
        fields = [e["field"] for e in response.json()["errors"]]
        assert field in fields, fields


@pytest.fixture(scope="module")
async def world(client: httpx.AsyncClient, make_tenant: Any) -> dict[str, Any]:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    resolved = await client.post("/v1/resolve", json=resolve_body("hostile"), headers=gateway)
    ids = resolved.json()
    rid = ids["relationship_id"]
    memory = await client.post(
        f"/v1/relationships/{rid}/memories", json={"content": "用户喜欢爬山"}, headers=gateway
    )
    creator = await tenant.key("creator", subject="c-1")
    return {
        "admin": tenant.admin,
        "gateway": gateway,
        "creator": creator,
        "rid": rid,
        "memory": f"/v1/relationships/{rid}/memories/{memory.json()['id']}",
        "user": ids["global_user_id"],
        "persona": ids["creator_persona_id"],
        "creator_id": ids["creator_id"],
    }


def _nul_cases(world: dict[str, Any], text: str) -> list[tuple[str, str, str, Any, str, str]]:
    """(method, url, role, body, field, what the read-back must not show) per field."""
    memories = f"/v1/relationships/{world['rid']}/memories"
    memory = world["memory"]
    return [
        ("POST", memories, "gateway", {"content": "x", "subject": text}, "subject", memories),
        ("POST", memories, "gateway", {"content": "x", "predicate": text}, "predicate", memories),
        ("POST", memories, "gateway", {"content": "x", "object": text}, "object", memories),
        (
            "POST",
            f"{memories}/batch",
            "gateway",
            {"memories": [{"content": "ok"}, {"content": "x", "subject": text}]},
            "memories[1].subject",
            memories,
        ),
        (
            "POST",
            f"{memories}/batch",
            "gateway",
            {"memories": [{"content": "x", "object": text}]},
            "memories[0].object",
            memories,
        ),
        ("PATCH", memory, "gateway", {"content": "新的", "reason": text}, "reason", memory),
        ("PATCH", memory, "gateway", {"predicate": text}, "predicate", memory),
        ("POST", f"{memory}/deactivate", "gateway", {"reason": text}, "reason", memory),
        (
            "PUT",
            f"/v1/users/{world['user']}/consent",
            "gateway",
            {"scopes": ["profile"], "source": text},
            "source",
            f"/v1/users/{world['user']}/consent",
        ),
        (
            "PUT",
            f"/v1/users/{world['user']}/profile/fields/language",
            "gateway",
            {"value": text, "scope": "profile"},
            "value",
            f"/v1/users/{world['user']}/profile",
        ),
        (
            "POST",
            f"/v1/relationships/{world['rid']}/transfer",
            "admin",
            {"to": {"kind": "pool", "id": "pool-1"}, "reason": text},
            "reason",
            f"/v1/relationships/{world['rid']}/ownership-events",
        ),
        (
            "POST",
            "/v1/knowledge-bases",
            "admin",
            {"name": "手册 manuals", "description": text},
            "description",
            "/v1/knowledge-bases",
        ),
        (
            "PUT",
            f"/v1/personas/{world['persona']}/profile",
            "creator",
            {"background": text},
            "background",
            f"/v1/personas/{world['persona']}/profile/history",
        ),
        (
            "PUT",
            f"/v1/personas/{world['persona']}/profile",
            "creator",
            {"taboos": ["不谈政治", text]},
            "taboos[1]",
            f"/v1/personas/{world['persona']}/profile/history",
        ),
        (
            "POST",
            f"/v1/relationships/{world['rid']}/turns",
            "gateway",
            {"turns": [{"session_id": f"s{NUL}1", "role": "user", "text": "hi"}]},
            "turns[0].session_id",
            f"/v1/relationships/{world['rid']}/turns",
        ),
        (
            "PATCH",
            f"/v1/creators/{world['creator_id']}",
            "admin",
            {"display_name": text},
            "display_name",
            f"/v1/creators/{world['creator_id']}",
        ),
    ]


@pytest.mark.parametrize("text", HOSTILE, ids=["chinese", "english"])
async def test_nul_in_any_text_field_is_a_422_naming_it_and_stores_nothing(
    client: httpx.AsyncClient, world: dict[str, Any], text: str
) -> None:
    for method, url, role, body, field, read_back in _nul_cases(world, text):
        headers = world[role] | ({"If-Match": '"0"'} if "/profile" in url else {})
        response = await client.request(method, url, json=body, headers=headers)
        assert_problem(response, 422, field)
        assert "U+0000" in str(response.json()["errors"])
        stored = await client.get(read_back, headers=world[role])
        assert stored.status_code == 200, stored.text
        assert NUL not in stored.text, url
        assert "\\u0000" not in stored.text, url


async def _list_operations(client: httpx.AsyncClient, parameter: str = "limit") -> list[str]:
    """The GET operations that take ``parameter``."""
    document = (await client.get("/schema/openapi.json")).json()
    return [
        path
        for path, item in document["paths"].items()
        if any(p["name"] == parameter for p in item.get("get", {}).get("parameters", []))
    ]


def _fill(path: str, world: dict[str, Any]) -> str:
    return (
        path.replace("{relationship_id}", world["rid"])
        .replace("{memory_id}", world["memory"].rsplit("/", 1)[-1])
        .replace("{user_id}", world["user"])
        .replace("{persona_id}", world["persona"])
        .replace("{knowledge_base_id}", "01a24100-0000-7000-8000-000000000000")
    )


async def _get_as_anyone(client: httpx.AsyncClient, url: str, world: dict[str, Any]) -> Any:
    """As the first of admin, gateway and creator whose role may read it."""
    for role in ("admin", "gateway", "creator"):
        response = await client.get(url, headers=world[role])
        if response.status_code != 403:
            return response
    return response


@pytest.mark.parametrize("limit", ["-1", "0", "201", "-9999999999999", "1e3", "一"])
async def test_every_list_endpoint_refuses_a_limit_out_of_range(
    client: httpx.AsyncClient, world: dict[str, Any], limit: str
) -> None:
    paths = await _list_operations(client)
    assert len(paths) >= 15  # users, facets, creators, personas, relationships, memories…
    for path in paths:
        response = await _get_as_anyone(client, f"{_fill(path, world)}?limit={limit}", world)
        assert_problem(response, 422, "limit")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("cursor=%00", "cursor"),
        ("cursor=not%20a%20cursor", "cursor"),
        ("cursor=AAAA", "cursor"),  # the right alphabet, not an id
        ("cursor=" + "A" * 65, "cursor"),
        ("cursor=%ED%A0%80", "cursor"),  # a surrogate's UTF-8 bytes
    ],
)
async def test_cursors_this_api_did_not_issue_are_422(
    client: httpx.AsyncClient, world: dict[str, Any], query: str, field: str
) -> None:
    paths = await _list_operations(client, "cursor")
    assert len(paths) >= 15
    for path in paths:
        response = await _get_as_anyone(client, f"{_fill(path, world)}?{query}", world)
        if response.status_code != 404:  # the unknown knowledge base
            assert_problem(response, 422, field)


async def test_nul_and_control_characters_in_parameters_are_422(
    client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    rid, gateway, admin = world["rid"], world["gateway"], world["admin"]
    cases = [
        (f"/v1/relationships/{rid}/turns?session_id=s%001", gateway, "session_id"),
        (f"/v1/relationships/{rid}/consolidations?session_id=%0A", gateway, "session_id"),
        ("/v1/audit?action=%00", admin, "action"),
        ("/v1/audit?object=a%00b", admin, "object"),
        ("/v1/audit?decision=" + "x" * 200, admin, "decision"),
        ("/v1/audit/export?action=%00", admin, "action"),
        ("/v1/audit/export?kind=access&purpose=a%0Ab", admin, "purpose"),
    ]
    for url, headers, field in cases:
        assert_problem(await client.get(url, headers=headers), 422, field)
    ended = await client.post(f"/v1/relationships/{rid}/sessions/s%001/end", headers=gateway)
    assert_problem(ended, 422, "session_id")
    field = await client.put(
        f"/v1/users/{world['user']}/profile/fields/lang%00uage",
        json={"value": "zh-CN", "scope": "profile"},
        headers=gateway,
    )
    assert_problem(field, 422, "field")


async def test_over_long_text_and_lists_are_422(
    client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    memories = f"/v1/relationships/{world['rid']}/memories"
    cases = [
        ({"content": "x", "predicate": "谓" * 65}, "predicate"),  # the column holds 64
        ({"content": "x", "subject": "s" * 129}, "subject"),
        ({"content": "长" * 32_001}, "content"),
    ]
    for body, field in cases:
        assert_problem(await client.post(memories, json=body, headers=world["gateway"]), 422, field)
    batch = {"memories": [{"content": "x"}] * 1001}
    response = await client.post(f"{memories}/batch", json=batch, headers=world["gateway"])
    assert_problem(response, 422, "memories")


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b'{"content": "x", "subject": "a\\ud800b"}', 400),  # a lone high surrogate
        (b'{"content": "x", "object": "\\udc00"}', 400),  # a lone low surrogate
        (b'{"content": "\xe7\x94\xa8\xff\xfe"}', 400),  # not UTF-8
        (b'{"content": "x", "subject": "a\xed\xa0\x80"}', 400),  # a surrogate as UTF-8 bytes
        (b"content=x&subject=y", 400),  # a form, not JSON
        (b'{"content": "x"', 400),  # cut off
        (b"[" * 5_000 + b"]" * 5_000, 400),  # past the decoder's depth
        (b"", 422),  # no body at all
    ],
)
async def test_unreadable_bodies_are_4xx_problems(
    client: httpx.AsyncClient, world: dict[str, Any], raw: bytes, status: int
) -> None:
    url = f"/v1/relationships/{world['rid']}/memories"
    before = (await client.get(url, headers=world["gateway"])).json()["items"]
    headers = world["gateway"] | {"content-type": "application/json"}
    assert_problem(await client.post(url, content=raw, headers=headers), status)
    assert (await client.get(url, headers=world["gateway"])).json()["items"] == before


@pytest.mark.parametrize(
    "media_type", ["text/plain", "multipart/form-data; boundary=x", "application/xml"]
)
async def test_a_json_body_labelled_as_another_media_type_is_415(
    client: httpx.AsyncClient, world: dict[str, Any], media_type: str
) -> None:
    url = f"/v1/relationships/{world['rid']}/memories"
    headers = world["gateway"] | {"content-type": media_type}
    response = await client.post(url, content=b'{"content": "x"}', headers=headers)
    assert_problem(response, 415)
    assert response.json()["code"] == "unsupported_media_type"


async def test_curl_default_form_label_and_json_variants_are_read_as_json(
    client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    """`curl -d` labels a body application/x-www-form-urlencoded: accepted as JSON."""
    url = f"/v1/relationships/{world['rid']}/memories"
    for media_type in (
        "application/x-www-form-urlencoded",
        "application/json; charset=utf-8",
        "application/merge-patch+json",
    ):
        headers = world["gateway"] | {"content-type": media_type}
        response = await client.post(
            url, content='{"content": "用户喜欢猫"}'.encode(), headers=headers
        )
        assert response.status_code == 201, (media_type, response.text)


async def test_text_in_every_script_with_line_breaks_is_stored_as_sent(
    client: httpx.AsyncClient, world: dict[str, Any]
) -> None:
    memories = f"/v1/relationships/{world['rid']}/memories"
    body = {
        "content": "第一行\nsecond line\twith a tab 🙂",
        "subject": "用户 user",
        "predicate": "喜欢 likes",
        "object": "猫 cats ☕",
    }
    created = await client.post(memories, json=body, headers=world["gateway"])
    assert created.status_code == 201, created.text
    assert {k: created.json()[k] for k in body} == body


@pytest.mark.parametrize(
    "part",
    [
        b'filename="a\x00b\xff\xfe.txt"\r\nContent-Type: text/plain\r\n\r\nhello \xff world',
        'filename="中文\u0000.md"\r\nContent-Type: text/markdown\r\n\r\n# t\u0000itle'.encode(),
        b'filename="x.txt"\r\n\r\n' + b"\x00" * 64,
    ],
    ids=["not-utf8-name", "nul-in-name-and-text", "binary"],
)
async def test_hostile_uploads_are_4xx_problems(
    client: httpx.AsyncClient, world: dict[str, Any], part: bytes
) -> None:
    base = await client.post(
        "/v1/knowledge-bases", json={"name": "上传 uploads"}, headers=world["admin"]
    )
    url = f"/v1/knowledge-bases/{base.json()['id']}/documents"
    body = b'--xx\r\nContent-Disposition: form-data; name="file"; ' + part + b"\r\n--xx--\r\n"
    headers = world["admin"] | {"content-type": "multipart/form-data; boundary=xx"}
    response = await client.post(url, content=body, headers=headers)
    assert 400 <= response.status_code < 500, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    assert (await client.get(url, headers=world["admin"])).json()["items"] == []
