"""Uploaded files in an S3-compatible object store (decision 0083), against a real local
S3 server (moto's), the real app, a real worker, real Postgres and Redis: upload →
index → query, delete → object gone after the commit, base delete → its prefix empty,
a rolled-back delete keeps the file, the sweep finishes what the hook could not, and a
store that is down fails the document with a reason."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from moto.server import ThreadedMotoServer
from sqlalchemy import func, select, update

from tests.conftest import start_worker, stop_worker
from tests.integration.test_knowledge_indexing import new_base, query, settled, upload
from tests.s3_server import object_keys, s3_client, start_s3
from tether.core.ids import TenantId
from tether.core.settings import FilesSettings, Settings
from tether.core.tenant_sessions import tenant_transaction
from tether.knowledge.file_deletions import (
    delete_after_commit,
    guard_upload,
    sweep_file_deletions,
)
from tether.knowledge.models import FileDeletion
from tether.knowledge.objects import ObjectStore
from tether.providers.offline import load_model

pytestmark = [pytest.mark.integration, pytest.mark.worker]

BUCKET = "tether-files"
BASES = "/v1/knowledge-bases"
MANUAL = b"# Heater\n\n## Filters\n\nClean the dust filter of the heater every two weeks.\n"


SERVERS: dict[str, ThreadedMotoServer] = {}


@pytest.fixture(scope="module")
def s3_url() -> Iterator[str]:
    url, server = start_s3(BUCKET)
    SERVERS["s3"] = server
    yield url
    if SERVERS.pop("s3", None) is not None:
        server.stop()


def files_env(url: str) -> dict[str, str]:
    return {
        "TETHER_FILES__BACKEND": "s3",
        "TETHER_FILES__ENDPOINT_URL": url,
        "TETHER_FILES__REGION": "eu-west-1",
        "TETHER_FILES__BUCKET": BUCKET,
        "TETHER_FILES__KEY_PREFIX": "files/",
        "TETHER_FILES__ACCESS_KEY_ID": "test",
        "TETHER_FILES__SECRET_ACCESS_KEY": "test",
        "TETHER_FILES__CONNECT_TIMEOUT_SECONDS": "1",
        "TETHER_FILES__READ_TIMEOUT_SECONDS": "2",
        "TETHER_FILES__MAX_ATTEMPTS": "1",
    }


def files_settings(url: str) -> FilesSettings:
    return FilesSettings(
        backend="s3",
        endpoint_url=url,
        region="eu-west-1",
        bucket=BUCKET,
        key_prefix="files/",
        access_key_id="test",
        secret_access_key="test",  # type: ignore[arg-type]
        connect_timeout_seconds=1,
        read_timeout_seconds=2,
        max_attempts=1,
    )


@pytest.fixture(scope="module")
def settings(settings: Settings, s3_url: str) -> Settings:  # the module's, with S3 files
    return settings.model_copy(update={"files": files_settings(s3_url)})


@pytest.fixture(scope="module")
def s3_worker(settings: Settings, s3_url: str, tmp_path_factory) -> Iterator[object]:  # type: ignore[no-untyped-def]
    own = tmp_path_factory.mktemp("worker-pod")
    worker = start_worker(settings, {"TETHER_DATA_DIR": str(own), **files_env(s3_url)})
    yield worker
    stop_worker(worker)


@pytest.fixture(scope="module")
async def admin(make_tenant, s3_worker):  # type: ignore[no-untyped-def]
    await asyncio.to_thread(load_model)
    return await make_tenant()


def keys(url: str, prefix: str = "") -> list[str]:
    return object_keys(url, BUCKET, prefix)


async def test_an_upload_goes_to_the_store_and_is_indexed_from_it(client, admin, s3_url) -> None:
    base_id = await new_base(client, admin.admin, "heaters")
    document = await upload(client, base_id, admin.admin, "heater.md", MANUAL)
    key = f"files/{admin.id}/{base_id}/{document['id']}"
    assert keys(s3_url, f"files/{admin.id}/") == [key]
    ready = await settled(client, base_id, document["id"], admin.admin)
    assert ready["status"] == "ready", ready
    found = await query(client, base_id, admin.admin, "how often do I clean the dust filter")
    assert "two weeks" in found["items"][0]["text"]

    deleted = await client.delete(
        f"{BASES}/{base_id}/documents/{document['id']}", headers=admin.admin
    )
    assert deleted.status_code == 204, deleted.text
    assert keys(s3_url, key) == []


async def test_a_large_file_goes_up_in_parts_and_reads_back_whole(settings, s3_url) -> None:
    store = ObjectStore(settings.files)
    data = bytes(range(256)) * (50 * 1024)  # 12.5 MiB: two parts of 8 MiB
    size = await store.put("files/parts/one", [memoryview(data)])
    assert size == len(data)
    back = bytearray()
    async for piece in store.read("files/parts/one"):
        assert len(piece) <= 256 * 1024
        back += piece
    assert bytes(back) == data
    await store.delete("files/parts/")
    assert keys(s3_url, "files/parts/") == []


async def test_deleting_a_base_empties_its_prefix(client, admin, s3_url) -> None:
    base_id = await new_base(client, admin.admin, "fans")
    first = await upload(client, base_id, admin.admin, "a.md", b"# Fan\n\nOil the fan yearly.\n")
    await upload(client, base_id, admin.admin, "b.md", b"# Fan\n\nDust the blades weekly.\n")
    prefix = f"files/{admin.id}/{base_id}/"
    assert len(keys(s3_url, prefix)) == 2
    await settled(client, base_id, first["id"], admin.admin)
    response = await client.delete(f"{BASES}/{base_id}", headers=admin.admin)
    assert response.status_code == 204, response.text
    assert keys(s3_url, prefix) == []


async def test_a_rolled_back_delete_keeps_the_file_and_the_sweep_finishes_a_lost_one(
    resources, settings, s3_url, admin
) -> None:
    tenant = TenantId(uuid.UUID(admin.id))
    store = ObjectStore(settings.files)
    await store.put("files/kept", [memoryview(b"kept")])
    await store.put("files/lost", [memoryview(b"lost")])

    async def delete_then_fail() -> None:
        async with tenant_transaction(resources.sessions, tenant) as session:
            await delete_after_commit(session, resources.sessions, tenant, store, "files/kept")
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        await delete_then_fail()
    assert keys(s3_url, "files/kept") == ["files/kept"]

    # A crash between commit and hook: the row commits, the hook never runs.
    down = ObjectStore(files_settings("http://127.0.0.1:9"))
    async with tenant_transaction(resources.sessions, tenant) as session:
        await delete_after_commit(session, resources.sessions, tenant, down, "files/lost")
    assert keys(s3_url, "files/lost") == ["files/lost"]
    assert await sweep_file_deletions(resources.sessions, store) == (1, 0)
    assert keys(s3_url, "files/lost") == []


async def test_a_store_that_is_down_fails_the_document_with_a_reason(client, admin, s3_url) -> None:
    base_id = await new_base(client, admin.admin, "lamps")
    document = await upload(client, base_id, admin.admin, "lamp.md", b"# Lamp\n\nUse LED bulbs.\n")
    await settled(client, base_id, document["id"], admin.admin)
    # The object vanishes behind Tether's back: a reindex fails with a reason.
    key = f"files/{admin.id}/{base_id}/{document['id']}"
    s3_client(s3_url).delete_object(Bucket=BUCKET, Key=key)
    response = await client.post(
        f"{BASES}/{base_id}/documents/{document['id']}/reindex", headers=admin.admin
    )
    assert response.status_code in (200, 202), response.text
    failed = await settled(client, base_id, document["id"], admin.admin)
    assert failed["status"] == "failed"
    assert "missing" in failed["error"]


async def test_an_upload_that_rolls_back_leaves_no_object_for_good(
    resources, settings, s3_url, admin
) -> None:
    tenant = TenantId(uuid.UUID(admin.id))
    store = ObjectStore(settings.files)

    async def upload_then_fail() -> None:
        async with tenant_transaction(resources.sessions, tenant) as session:
            await guard_upload(session, resources.sessions, tenant, "files/orphan")
            await store.put("files/orphan", [memoryview(b"orphan")])
            raise RuntimeError("rolled back after the object was written")

    with pytest.raises(RuntimeError):
        await upload_then_fail()
    async with tenant_transaction(resources.sessions, tenant) as session:
        await guard_upload(session, resources.sessions, tenant, "files/committed")
        await store.put("files/committed", [memoryview(b"committed")])
    # Within the grace the sweep leaves the orphan alone (its upload might still commit).
    assert await sweep_file_deletions(resources.sessions, store) == (0, 0)
    async with tenant_transaction(resources.sessions, tenant) as session:
        keys_left = (await session.execute(select(FileDeletion.key))).scalars().all()
        assert keys_left == ["files/orphan"]  # the committed upload took its guard away
        await session.execute(update(FileDeletion).values(not_before=func.now()))
    assert await sweep_file_deletions(resources.sessions, store) == (1, 0)
    assert keys(s3_url, "files/orphan") == []
    assert keys(s3_url, "files/committed") == ["files/committed"]


async def test_a_store_that_is_down_fails_the_document_with_a_reason_never_waits(
    client, admin, s3_url
) -> None:
    # Last in the module: it stops the store.
    base_id = await new_base(client, admin.admin, "stoves")
    document = await upload(client, base_id, admin.admin, "stove.md", b"# Stove\n\nClean it.\n")
    await settled(client, base_id, document["id"], admin.admin)
    SERVERS.pop("s3").stop()
    response = await client.post(
        f"{BASES}/{base_id}/documents/{document['id']}/reindex", headers=admin.admin
    )
    assert response.status_code in (200, 202), response.text
    failed = await settled(client, base_id, document["id"], admin.admin, seconds=30)
    assert failed["status"] == "failed"
    assert "file store failed to read the file" in failed["error"], failed["error"]
    # An upload while the store is down answers 503 with a problem, storing nothing.
    refused = await client.post(
        f"{BASES}/{base_id}/documents",
        files={"file": ("new.md", b"# New\n\nText.\n")},
        headers=admin.admin,
    )
    assert refused.status_code == 503, refused.text
    assert refused.json()["code"] == "file_store_unavailable"
