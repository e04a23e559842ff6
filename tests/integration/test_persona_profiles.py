"""Persona profiles: versions, ETag/If-Match, creator ownership, tenant isolation."""

import pytest

pytestmark = pytest.mark.integration

PROFILE = {
    "background": "星野露娜，住在海边小镇的天文爱好者。",
    "tone": "温柔、俏皮，偶尔用颜文字",
    "taboos": ["不谈政治", "never share real-world contact details"],
    "scripts": ["晚安，记得看星星～"],
    "notes": "",
}


async def persona(client, tenant, creator: str = "luna-studio") -> str:
    gateway = await tenant.key("gateway")
    body = {
        "user": {"external_id": "u"},
        "persona": {"external_id": "luna", "creator_external_id": creator},
    }
    return (await client.post("/v1/resolve", json=body, headers=gateway)).json()[
        "creator_persona_id"
    ]


async def test_profile_versions_with_etag_and_412_on_stale_write(client, make_tenant) -> None:
    tenant = await make_tenant()
    pid = await persona(client, tenant)
    editor = await tenant.key("creator", subject="luna-studio")
    empty = await client.get(f"/v1/personas/{pid}/profile", headers=editor)
    assert empty.json()["version"] == 0
    etag = empty.headers["etag"]

    first = await client.put(
        f"/v1/personas/{pid}/profile", json=PROFILE, headers=editor | {"If-Match": etag}
    )
    assert first.status_code == 200, first.text
    assert first.json()["version"] == 1
    assert first.json()["taboos"] == PROFILE["taboos"]

    stale = await client.put(
        f"/v1/personas/{pid}/profile",
        json=PROFILE | {"tone": "冷淡"},
        headers=editor | {"If-Match": etag},
    )
    assert stale.status_code == 412
    assert stale.json()["code"] == "profile_changed"
    assert stale.json()["current_etag"] == first.headers["ETag"]

    second = await client.put(
        f"/v1/personas/{pid}/profile",
        json=PROFILE | {"tone": "活泼"},
        headers=editor | {"If-Match": first.headers["etag"]},
    )
    assert second.json()["version"] == 2
    history = (await client.get(f"/v1/personas/{pid}/profile/history", headers=editor)).json()
    assert [(v["version"], v["tone"]) for v in history["items"]] == [
        (1, PROFILE["tone"]),
        (2, "活泼"),
    ]


async def test_put_without_if_match_is_428(client, make_tenant) -> None:
    tenant = await make_tenant()
    pid = await persona(client, tenant)
    response = await client.put(f"/v1/personas/{pid}/profile", json=PROFILE, headers=tenant.admin)
    assert response.status_code == 428


async def test_another_creator_can_neither_read_nor_edit_the_profile(client, make_tenant) -> None:
    tenant = await make_tenant()
    pid = await persona(client, tenant, creator="owner")
    intruder = await tenant.key("creator", subject="someone-else")
    response = await client.put(
        f"/v1/personas/{pid}/profile", json=PROFILE, headers=intruder | {"If-Match": '"0"'}
    )
    assert response.status_code == 404
    for path in (f"/v1/personas/{pid}/profile", f"/v1/personas/{pid}/profile/history"):
        assert (await client.get(path, headers=intruder)).status_code == 404


async def test_gateway_reads_but_cannot_write_profiles(client, make_tenant) -> None:
    tenant = await make_tenant()
    pid = await persona(client, tenant)
    gateway = await tenant.key("gateway")
    assert (await client.get(f"/v1/personas/{pid}/profile", headers=gateway)).status_code == 200
    write = await client.put(
        f"/v1/personas/{pid}/profile", json=PROFILE, headers=gateway | {"If-Match": '"0"'}
    )
    assert write.status_code == 403


async def test_profile_fields_are_validated(client, make_tenant) -> None:
    tenant = await make_tenant()
    pid = await persona(client, tenant)
    response = await client.put(
        f"/v1/personas/{pid}/profile",
        json=PROFILE | {"taboos": [""]},
        headers=tenant.admin | {"If-Match": '"0"'},
    )
    assert response.status_code == 422
    assert "taboos" in response.json()["detail"]


async def test_tenant_b_cannot_write_tenant_a_profile(client, make_tenant) -> None:
    a, b = await make_tenant(), await make_tenant()
    pid = await persona(client, a)
    response = await client.put(
        f"/v1/personas/{pid}/profile", json=PROFILE, headers=b.admin | {"If-Match": '"0"'}
    )
    assert response.status_code == 404
