"""Documents through the real worker: PDFs in English and Chinese, Markdown sections,
broken files that fail with a readable error, delete and reindex, and queries."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from tests.conftest import start_worker, stop_worker
from tests.support import stored_file
from tests.unit.test_knowledge_pdfs import build_pdf, manual_pages
from tether.providers.offline import load_model

pytestmark = [pytest.mark.integration, pytest.mark.worker]

BASES = "/v1/knowledge-bases"
GUIDE = """# Kettle guide

Read this first.

## Setup

Place the kettle on a flat, dry surface. Plug the base into a grounded socket.

## Descaling 除垢

Every month, boil a mixture of water and white vinegar, then rinse twice.
每月用白醋和水的混合液煮沸一次，然后冲洗两遍。
"""


@pytest.fixture(scope="module")
def knowledge_worker(settings, tmp_path_factory) -> Iterator[object]:  # type: ignore[no-untyped-def]
    # A data dir of its own, as a worker pod has: uploads reach it through Postgres.
    own = tmp_path_factory.mktemp("worker-pod")
    worker = start_worker(settings, {"TETHER_DATA_DIR": str(own)})
    yield worker
    stop_worker(worker)


@pytest.fixture(scope="module")
async def admin(make_tenant, knowledge_worker):  # type: ignore[no-untyped-def]
    # The app's lifespan (which loads the embedding model) does not run under the test
    # client: load it now, or the first query embedding misses its deadline.
    await asyncio.to_thread(load_model)
    return await make_tenant()


async def new_base(client, headers, name: str = "manuals") -> str:
    response = await client.post(BASES, json={"name": name}, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def upload(client, base_id: str, headers, name: str, data: bytes) -> dict:
    response = await client.post(
        f"{BASES}/{base_id}/documents", files={"file": (name, data)}, headers=headers
    )
    assert response.status_code == 202, response.text
    return dict(response.json())


async def settled(client, base_id: str, document_id: str, headers, seconds: float = 60) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        response = await client.get(f"{BASES}/{base_id}/documents/{document_id}", headers=headers)
        document = dict(response.json())
        if document["status"] in ("ready", "failed"):
            return document
        assert time.monotonic() < deadline, f"still {document['status']} after {seconds} s"
        await asyncio.sleep(0.1)


async def query(client, base_id: str, headers, text: str, top_k: int = 3) -> dict:
    response = await client.post(
        f"{BASES}/{base_id}/query", json={"query": text, "top_k": top_k}, headers=headers
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_a_multi_page_pdf_in_two_languages_is_cited_by_page(client, admin) -> None:
    base_id = await new_base(client, admin.admin)
    pages = manual_pages(12)
    pages[6] = [
        "Warranty: the kettle is covered for two years from the date of purchase.",
        "Keep the receipt; repairs outside the warranty are charged.",
    ]
    pages[9] = ["保修说明：水壶自购买之日起保修两年。", "请妥善保管购物发票。"]
    document = await upload(client, base_id, admin.admin, "manual.pdf", build_pdf(pages))
    assert document["page_count"] == 12
    ready = await settled(client, base_id, document["id"], admin.admin)
    assert ready["status"] == "ready", ready
    assert (ready["progress"], ready["error"]) == (1.0, None)
    assert ready["chunk_count"] >= 12
    assert ready["embedded_chunks"] == ready["chunk_count"]

    english = await query(client, base_id, admin.admin, "How long is the warranty?")
    best = english["items"][0]
    assert best["source"]["label"] == "manual.pdf#page=7"
    assert "two years" in best["text"]
    assert best["explanation"]["lexical_rank"] == 1
    assert english["degraded"] == []

    chinese = await query(client, base_id, admin.admin, "水壶保修多久？")
    assert chinese["items"][0]["source"]["label"] == "manual.pdf#page=10"
    assert chinese["items"][0]["source"]["page"] == 10


async def test_markdown_passages_are_cited_by_section(client, admin) -> None:
    base_id = await new_base(client, admin.admin, "guides")
    document = await upload(client, base_id, admin.admin, "guide.md", GUIDE.encode())
    ready = await settled(client, base_id, document["id"], admin.admin)
    assert ready["status"] == "ready", ready
    found = await query(client, base_id, admin.admin, "how do I descale it with vinegar")
    assert found["items"][0]["source"]["label"] == "guide.md#Descaling 除垢"
    assert found["items"][0]["source"]["section"] == "Descaling 除垢"
    found = await query(client, base_id, admin.admin, "怎么除垢")
    assert found["items"][0]["source"]["section"] == "Descaling 除垢"


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("broken.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 64, "damaged"),
        ("locked.pdf", build_pdf([["the secret recipe"]], password="pw"), "password-protected"),
        ("blank.pdf", build_pdf([[], [], []]), "no extractable text"),
    ],
)
async def test_unreadable_pdfs_fail_with_a_readable_error_and_the_worker_lives_on(
    client, admin, knowledge_worker, name: str, data: bytes, reason: str
) -> None:
    base_id = await new_base(client, admin.admin, f"bad-{name}")
    document = await upload(client, base_id, admin.admin, name, data)
    failed = await settled(client, base_id, document["id"], admin.admin)
    assert failed["status"] == "failed"
    assert reason in failed["error"]
    assert failed["chunk_count"] == 0
    assert knowledge_worker.poll() is None
    fine = await upload(client, base_id, admin.admin, "fine.txt", b"The worker still works.")
    assert (await settled(client, base_id, fine["id"], admin.admin))["status"] == "ready"


async def test_a_deleted_document_stops_answering_at_once(client, admin, resources) -> None:
    base_id = await new_base(client, admin.admin, "deletions")
    keep = await upload(client, base_id, admin.admin, "keep.txt", b"Descale the kettle monthly.")
    drop = await upload(client, base_id, admin.admin, "drop.txt", b"The lid opens with a button.")
    for document in (keep, drop):
        await settled(client, base_id, document["id"], admin.admin)
    before = await query(client, base_id, admin.admin, "kettle lid")
    assert {r["source"]["filename"] for r in before["items"]} == {"keep.txt", "drop.txt"}

    path = f"{BASES}/{base_id}/documents/{drop['id']}"
    assert (await client.delete(path, headers=admin.admin)).status_code == 204
    after = await query(client, base_id, admin.admin, "kettle lid")
    assert {r["source"]["filename"] for r in after["items"]} == {"keep.txt"}
    deleted = (await client.get(path, headers=admin.admin)).json()
    assert (deleted["status"], deleted["chunk_count"]) == ("deleted", 0)
    assert await stored_file(resources, admin.id, drop["id"]) == b""
    listed = (await client.get(f"{BASES}/{base_id}/documents", headers=admin.admin)).json()
    assert [d["id"] for d in listed["items"]] == [keep["id"]]
    assert (await client.delete(path, headers=admin.admin)).status_code == 204  # idempotent


async def test_reindex_replaces_the_passages(client, admin) -> None:
    base_id = await new_base(client, admin.admin, "reindex")
    document = await upload(client, base_id, admin.admin, "a.txt", b"Boil water for tea.")
    first = await settled(client, base_id, document["id"], admin.admin)
    ids_before = {r["id"] for r in (await query(client, base_id, admin.admin, "tea"))["items"]}
    response = await client.post(
        f"{BASES}/{base_id}/documents/{document['id']}/reindex", headers=admin.admin
    )
    assert response.status_code == 202
    assert response.json()["status"] == "uploaded"
    second = await settled(client, base_id, document["id"], admin.admin)
    assert second["status"] == "ready"
    assert second["indexed_at"] > first["indexed_at"]
    ids_after = {r["id"] for r in (await query(client, base_id, admin.admin, "tea"))["items"]}
    assert ids_after
    assert ids_after.isdisjoint(ids_before)


async def test_a_creator_queries_its_personas_base_but_not_another_tenants(
    client, admin, make_tenant
) -> None:
    base_id = await new_base(client, admin.admin, "shared")
    document = await upload(client, base_id, admin.admin, "s.txt", b"The kettle holds 1.7 litres.")
    await settled(client, base_id, document["id"], admin.admin)
    gateway = await admin.key("gateway")
    assert (await query(client, base_id, gateway, "litres"))["items"]
    other = await make_tenant()
    response = await client.post(
        f"{BASES}/{base_id}/query", json={"query": "litres"}, headers=other.admin
    )
    assert response.status_code == 404
