"""Knowledge bases over HTTP without a worker: bases, binding, ownership, tenant
isolation, and every upload refused before indexing starts."""

from __future__ import annotations

import pytest

from tests.support import stored_file
from tests.unit.test_knowledge_pdfs import build_pdf

pytestmark = pytest.mark.integration

BASES = "/v1/knowledge-bases"


async def persona(client, tenant, creator: str = "studio", name: str = "luna") -> str:
    gateway = await tenant.key("gateway")
    body = {
        "user": {"external_id": "u"},
        "persona": {"external_id": name, "creator_external_id": creator},
    }
    response = await client.post("/v1/resolve", json=body, headers=gateway)
    return response.json()["creator_persona_id"]


async def base(client, headers, **fields) -> dict:
    response = await client.post(BASES, json={"name": "manuals", **fields}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


def upload(client, base_id: str, headers, name: str, data: bytes):  # type: ignore[no-untyped-def]
    return client.post(
        f"{BASES}/{base_id}/documents", files={"file": (name, data)}, headers=headers
    )


async def test_create_list_get_update_and_default(client, make_tenant) -> None:
    tenant = await make_tenant()
    first = await base(client, tenant.admin)
    assert first["is_default"] is True  # the tenant's first unbound base
    second = await base(client, tenant.admin, name="faq", description="常见问题")
    assert second["is_default"] is False
    listed = (await client.get(BASES, headers=tenant.admin)).json()["items"]
    assert [b["name"] for b in listed] == ["manuals", "faq"]

    moved = await client.patch(
        f"{BASES}/{second['id']}", json={"is_default": True}, headers=tenant.admin
    )
    assert moved.status_code == 200, moved.text
    assert moved.json()["is_default"] is True
    old = (await client.get(f"{BASES}/{first['id']}", headers=tenant.admin)).json()
    assert old["is_default"] is False

    renamed = await client.patch(
        f"{BASES}/{first['id']}", json={"name": "手册"}, headers=tenant.admin
    )
    assert renamed.json()["name"] == "手册"


async def test_binding_gives_a_persona_one_base(client, make_tenant) -> None:
    tenant = await make_tenant()
    pid = await persona(client, tenant)
    bound = await base(client, tenant.admin, creator_persona_id=pid)
    assert bound["creator_persona_id"] == pid
    assert bound["is_default"] is False
    clash = await client.post(
        BASES, json={"name": "again", "creator_persona_id": pid}, headers=tenant.admin
    )
    assert clash.status_code == 409
    assert clash.json()["code"] == "knowledge_base_conflict"

    other = await base(client, tenant.admin, name="other", is_default=False)
    rebind = await client.put(
        f"{BASES}/{other['id']}/persona", json={"creator_persona_id": pid}, headers=tenant.admin
    )
    assert rebind.status_code == 409
    unbound = await client.delete(f"{BASES}/{bound['id']}/persona", headers=tenant.admin)
    assert unbound.json()["creator_persona_id"] is None
    rebind = await client.put(
        f"{BASES}/{other['id']}/persona", json={"creator_persona_id": pid}, headers=tenant.admin
    )
    assert rebind.status_code == 200, rebind.text

    default_bound = await client.post(
        BASES,
        json={"name": "x", "creator_persona_id": pid, "is_default": True},
        headers=tenant.admin,
    )
    assert default_bound.status_code == 422


async def test_a_creator_manages_only_its_own_personas_bases(client, make_tenant) -> None:
    tenant = await make_tenant()
    mine = await persona(client, tenant, creator="mine", name="a")
    theirs = await persona(client, tenant, creator="theirs", name="b")
    creator = await tenant.key("creator", subject="mine")
    own = await base(client, creator, creator_persona_id=mine)
    tenant_wide = await base(client, tenant.admin, name="tenant-wide")
    foreign = await base(client, tenant.admin, name="foreign", creator_persona_id=theirs)

    unbound = await client.post(BASES, json={"name": "loose"}, headers=creator)
    assert unbound.status_code == 403
    for_them = await client.post(
        BASES, json={"name": "x", "creator_persona_id": theirs}, headers=creator
    )
    assert for_them.status_code == 404  # another creator's persona is not found
    listed = (await client.get(BASES, headers=creator)).json()["items"]
    assert {b["id"] for b in listed} == {own["id"], tenant_wide["id"]}
    assert (await client.get(f"{BASES}/{foreign['id']}", headers=creator)).status_code == 404
    assert (await client.get(f"{BASES}/{tenant_wide['id']}", headers=creator)).status_code == 200
    # The shared base is visible but not the creator's to manage; the foreign one is
    # out of reach altogether.
    for path, status in ((tenant_wide["id"], 403), (foreign["id"], 404)):
        denied = await client.patch(f"{BASES}/{path}", json={"name": "x"}, headers=creator)
        assert denied.status_code == status
        assert (await client.delete(f"{BASES}/{path}", headers=creator)).status_code == status
        refused = await upload(client, path, creator, "a.txt", b"text")
        assert refused.status_code == status
    accepted = await upload(client, own["id"], creator, "a.txt", b"my own notes")
    assert accepted.status_code == 202, accepted.text
    assert (await client.delete(f"{BASES}/{own['id']}", headers=creator)).status_code == 204


async def test_roles_without_a_knowledge_policy_are_refused(client, make_tenant) -> None:
    tenant = await make_tenant()
    created = await base(client, tenant.admin)
    gateway = await tenant.key("gateway")
    assert (await client.get(f"{BASES}/{created['id']}", headers=gateway)).status_code == 200
    assert (await client.post(BASES, json={"name": "x"}, headers=gateway)).status_code == 403
    refused = await upload(client, created["id"], gateway, "a.txt", b"text")
    assert refused.status_code == 403
    for role in ("operator", "compliance"):
        key = await tenant.key(role, subject="someone" if role == "operator" else None)
        assert (await client.get(BASES, headers=key)).status_code == 403


async def test_tenant_b_cannot_see_or_touch_tenant_as_base(client, make_tenant) -> None:
    tenant_a, tenant_b = await make_tenant(), await make_tenant()
    created = await base(client, tenant_a.admin)
    document = (await upload(client, created["id"], tenant_a.admin, "a.txt", b"secret")).json()
    path = f"{BASES}/{created['id']}"
    assert (await client.get(path, headers=tenant_b.admin)).status_code == 404
    assert (await client.get(BASES, headers=tenant_b.admin)).json()["items"] == []
    assert (await client.get(f"{path}/documents", headers=tenant_b.admin)).status_code == 404
    doc_path = f"{path}/documents/{document['id']}"
    assert (await client.get(doc_path, headers=tenant_b.admin)).status_code == 404
    assert (await client.delete(doc_path, headers=tenant_b.admin)).status_code == 404
    query = await client.post(f"{path}/query", json={"query": "secret"}, headers=tenant_b.admin)
    assert query.status_code == 404
    assert (await upload(client, created["id"], tenant_b.admin, "b.txt", b"x")).status_code == 404
    assert (await client.delete(path, headers=tenant_b.admin)).status_code == 404
    assert (await client.get(path, headers=tenant_a.admin)).status_code == 200


async def test_the_same_file_again_answers_with_the_existing_document(client, make_tenant) -> None:
    tenant = await make_tenant()
    created = await base(client, tenant.admin)
    first = await upload(client, created["id"], tenant.admin, "faq.md", "# 问题\n答案".encode())
    assert first.status_code == 202, first.text
    body = first.json()
    assert (body["status"], body["kind"], body["media_type"]) == (
        "uploaded",
        "markdown",
        "text/markdown",
    )
    again = await upload(client, created["id"], tenant.admin, "renamed.md", "# 问题\n答案".encode())
    assert again.status_code == 200
    assert again.json()["id"] == body["id"]


async def test_a_file_over_the_size_limit_is_413_before_anything_is_stored(
    client, make_tenant, settings
) -> None:
    tenant = await make_tenant()
    created = await base(client, tenant.admin)
    oversized = b"a" * (21 * 1024 * 1024)
    response = await upload(client, created["id"], tenant.admin, "big.txt", oversized)
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == "document_too_large"
    just_over = b"a" * (settings.knowledge.max_upload_bytes + 1)
    response = await upload(client, created["id"], tenant.admin, "big.txt", just_over)
    assert response.status_code == 413
    listed = await client.get(f"{BASES}/{created['id']}/documents", headers=tenant.admin)
    assert listed.json()["items"] == []


async def test_a_pdf_over_the_page_limit_is_422(client, make_tenant) -> None:
    tenant = await make_tenant()
    created = await base(client, tenant.admin)
    pdf = build_pdf([[f"page {n}"] for n in range(101)])
    response = await upload(client, created["id"], tenant.admin, "long.pdf", pdf)
    assert response.status_code == 422
    assert response.json()["code"] == "document_too_many_pages"


@pytest.mark.parametrize(
    ("name", "data", "status", "code"),
    [
        ("fake.pdf", b"not a pdf at all", 415, "unsupported_document"),
        ("image.png", b"\x89PNG\r\n\x1a\n" + bytes(32), 415, "unsupported_document"),
        ("data.bin", bytes(range(256)), 415, "unsupported_document"),
        ("empty.txt", b"   \n", 422, "document_empty"),
    ],
)
async def test_other_files_are_refused_with_a_problem(
    client, make_tenant, name: str, data: bytes, status: int, code: str
) -> None:
    tenant = await make_tenant()
    created = await base(client, tenant.admin)
    response = await upload(client, created["id"], tenant.admin, name, data)
    assert response.status_code == status, response.text
    assert response.json()["code"] == code


async def test_deleting_a_base_removes_its_documents_and_files(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    created = await base(client, tenant.admin)
    document = (await upload(client, created["id"], tenant.admin, "a.txt", b"keep me")).json()
    assert await stored_file(resources, tenant.id, document["id"]) == b"keep me"
    assert (
        await client.delete(f"{BASES}/{created['id']}", headers=tenant.admin)
    ).status_code == 204
    assert await stored_file(resources, tenant.id, document["id"]) == b""
    gone = await client.get(
        f"{BASES}/{created['id']}/documents/{document['id']}", headers=tenant.admin
    )
    assert gone.status_code == 404


async def test_an_upload_without_a_file_part_is_a_problem(client, make_tenant) -> None:
    tenant = await make_tenant()
    created = await base(client, tenant.admin)
    path = f"{BASES}/{created['id']}/documents"
    wrong_field = await client.post(path, files={"upload": ("a.txt", b"x")}, headers=tenant.admin)
    assert wrong_field.status_code == 422
    assert wrong_field.json()["errors"][0]["field"] == "file"
    as_json = await client.post(path, json={"file": "a.txt"}, headers=tenant.admin)
    assert as_json.status_code == 400
    assert as_json.headers["content-type"].startswith("application/problem+json")


@pytest.mark.parametrize("lost", ["every slice", "the last slice"])
async def test_a_document_whose_stored_file_is_gone_or_short_fails_with_a_reason(
    client, make_tenant, resources, lost: str
) -> None:
    """A worker that cannot read the file marks the document failed, never waits."""
    import uuid

    from sqlalchemy import delete

    from tether.core.ids import TenantId
    from tether.core.tenant_sessions import tenant_transaction
    from tether.knowledge.files import SLICE_BYTES
    from tether.knowledge.indexing import DocumentIndexer
    from tether.knowledge.models import KnowledgeFileChunk
    from tether.providers.offline import OfflineEmbeddingProvider

    tenant = await make_tenant()
    created = await base(client, tenant.admin)
    data = "会被删掉的文件\n".encode() + (b"the file that goes away. " * 12_000)[:SLICE_BYTES]
    document = (await upload(client, created["id"], tenant.admin, "gone.txt", data)).json()
    assert await stored_file(resources, tenant.id, document["id"]) == data
    tenant_id, document_id = TenantId(uuid.UUID(tenant.id)), uuid.UUID(document["id"])
    statement = delete(KnowledgeFileChunk).where(KnowledgeFileChunk.document_id == document_id)
    if lost == "the last slice":
        statement = statement.where(KnowledgeFileChunk.seq == 1)
    async with tenant_transaction(resources.sessions, tenant_id) as session:
        await session.execute(statement)
    indexer = DocumentIndexer(
        resources.sessions, tenant_id, OfflineEmbeddingProvider(), resources.settings.knowledge
    )
    assert (await indexer.run(document_id)).status == "failed"
    path = f"{BASES}/{created['id']}/documents/{document['id']}"
    read = (await client.get(path, headers=tenant.admin)).json()
    assert read["status"] == "failed"
    assert "upload it again" in read["error"]
