"""Users, facets, creators, personas, relationships and transfers through the API,
including every "tenant B cannot see tenant A's row" case."""

import pytest

pytestmark = pytest.mark.integration


def resolve_body(user: str, persona: str = "p", creator: str = "c") -> dict:
    return {
        "user": {"external_id": user},
        "persona": {"external_id": persona, "creator_external_id": creator},
    }


async def resolve(client, headers, user: str, persona: str = "p", creator: str = "c") -> dict:
    response = await client.post(
        "/v1/resolve", json=resolve_body(user, persona, creator), headers=headers
    )
    assert response.status_code in (200, 201), response.text
    return response.json()


async def test_user_crud_with_default_facet_and_cursor_pages(client, make_tenant) -> None:
    tenant = await make_tenant()
    admin = tenant.admin
    ids = []
    for n in range(5):
        created = await client.post("/v1/users", json={"external_id": f"user-{n}"}, headers=admin)
        assert created.status_code == 201
        ids.append(created.json()["id"])
    dup = await client.post("/v1/users", json={"external_id": "user-0"}, headers=admin)
    assert dup.status_code == 409
    assert dup.json()["code"] == "external_id_taken"
    seen, cursor = [], None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await client.get("/v1/users", params=params, headers=admin)).json()
        seen += [u["id"] for u in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids
    facets = (await client.get(f"/v1/users/{ids[0]}/facets", headers=admin)).json()
    assert [f["name"] for f in facets["items"]] == ["default"]


async def test_creator_and_personas(client, make_tenant) -> None:
    tenant = await make_tenant()
    creator = await client.post(
        "/v1/creators",
        json={"external_id": "studio", "display_name": "Studio"},
        headers=tenant.admin,
    )
    assert creator.status_code == 201
    cid = creator.json()["id"]
    persona = await client.post(
        f"/v1/creators/{cid}/personas", json={"external_id": "luna"}, headers=tenant.admin
    )
    assert persona.status_code == 201
    listed = await client.get("/v1/personas", params={"creator_id": cid}, headers=tenant.admin)
    assert [p["external_id"] for p in listed.json()["items"]] == ["luna"]


async def test_creator_key_edits_only_its_own_personas_and_another_is_not_found(
    client, make_tenant
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    mine = await resolve(client, gateway, "u1", persona="mine", creator="alice")
    theirs = await resolve(client, gateway, "u1", persona="theirs", creator="bob")
    alice = await tenant.key("creator", subject="alice")
    ok = await client.patch(
        f"/v1/personas/{mine['creator_persona_id']}", json={"display_name": "M"}, headers=alice
    )
    assert ok.status_code == 200
    denied = await client.patch(
        f"/v1/personas/{theirs['creator_persona_id']}", json={"display_name": "X"}, headers=alice
    )
    assert denied.status_code == 404


async def test_creator_key_reads_only_its_own_relationships(client, make_tenant) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    mine = await resolve(client, gateway, "u2", persona="p1", creator="carol")
    theirs = await resolve(client, gateway, "u2", persona="p2", creator="dave")
    carol = await tenant.key("creator", subject="carol")
    listed = (await client.get("/v1/relationships", headers=carol)).json()
    assert [r["id"] for r in listed["items"]] == [mine["relationship_id"]]
    hidden = await client.get(f"/v1/relationships/{theirs['relationship_id']}", headers=carol)
    assert hidden.status_code == 404


async def test_user_relationships_lists_every_persona_the_user_talks_to(
    client, make_tenant
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    first = await resolve(client, gateway, "multi", persona="a")
    second = await resolve(client, gateway, "multi", persona="b")
    await resolve(client, gateway, "someone-else", persona="a")
    listed = await client.get(f"/v1/users/{first['global_user_id']}/relationships", headers=gateway)
    got = {r["id"] for r in listed.json()["items"]}
    assert got == {first["relationship_id"], second["relationship_id"]}


async def test_transfer_records_history_and_moves_operator_access(client, make_tenant) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rel = await resolve(client, gateway, "u3", creator="erin")
    rid = rel["relationship_id"]
    operator = await tenant.key("operator", subject="pool-7")
    assert (await client.get(f"/v1/relationships/{rid}", headers=operator)).status_code == 404

    moved = await client.post(
        f"/v1/relationships/{rid}/transfer",
        json={"to": {"kind": "pool", "id": "pool-7"}, "reason": "night shift"},
        headers=gateway,
    )
    assert moved.status_code == 201, moved.text
    assert moved.json()["from_kind"] == "creator"
    assert moved.json()["from_id"] == "erin"
    now = (await client.get(f"/v1/relationships/{rid}", headers=operator)).json()
    assert (now["operator_kind"], now["operator_id"]) == ("pool", "pool-7")

    back = {"to": {"kind": "creator", "id": "erin"}, "reason": "morning"}
    await client.post(f"/v1/relationships/{rid}/transfer", json=back, headers=gateway)
    assert (await client.get(f"/v1/relationships/{rid}", headers=operator)).status_code == 404
    events = (await client.get(f"/v1/relationships/{rid}/ownership-events", headers=gateway)).json()
    assert [(e["to_kind"], e["reason"]) for e in events["items"]] == [
        ("pool", "night shift"),
        ("creator", "morning"),
    ]
    # Ownership moved; identity (and so memory) did not.
    again = await resolve(client, gateway, "u3", creator="erin")
    assert again["relationship_id"] == rid


async def test_privacy_mode_can_be_changed_and_is_validated(client, make_tenant) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid = (await resolve(client, gateway, "u4"))["relationship_id"]
    ok = await client.patch(
        f"/v1/relationships/{rid}", json={"privacy_mode": "raw_only"}, headers=gateway
    )
    assert ok.json()["privacy_mode"] == "raw_only"
    bad = await client.patch(
        f"/v1/relationships/{rid}", json={"privacy_mode": "loud"}, headers=gateway
    )
    assert bad.status_code == 422


async def test_tenant_b_cannot_see_or_touch_tenant_a_rows(client, make_tenant) -> None:
    a, b = await make_tenant(), await make_tenant()
    a_gw, b_gw = await a.key("gateway"), await b.key("gateway")
    rel = await resolve(client, a_gw, "secret-user")
    user = await client.post("/v1/users", json={"external_id": "only-a"}, headers=a.admin)
    creator = await client.post("/v1/creators", json={"external_id": "only-a"}, headers=a.admin)
    for path in (
        f"/v1/relationships/{rel['relationship_id']}",
        f"/v1/relationships/{rel['relationship_id']}/ownership-events",
        f"/v1/users/{user.json()['id']}",
        f"/v1/users/{user.json()['id']}/facets",
        f"/v1/creators/{creator.json()['id']}",
        f"/v1/personas/{rel['creator_persona_id']}",
        f"/v1/personas/{rel['creator_persona_id']}/profile",
    ):
        response = await client.get(path, headers=b.admin)
        assert response.status_code == 404, (path, response.status_code)
    transfer = await client.post(
        f"/v1/relationships/{rel['relationship_id']}/transfer",
        json={"to": {"kind": "pool", "id": "x"}},
        headers=b_gw,
    )
    assert transfer.status_code == 404
    for listing in ("/v1/users", "/v1/creators", "/v1/personas", "/v1/relationships"):
        items = (await client.get(listing, headers=b.admin)).json()["items"]
        assert items == [], listing
