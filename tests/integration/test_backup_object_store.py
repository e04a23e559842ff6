"""`tether backup` / `tether restore` with uploaded files in an S3-compatible store
(decisions 0083, 0096), against a real local S3 server (moto's), the real app, a real
worker, real Postgres and Redis: fill a base with two documents, back up, wipe the
database AND the bucket, restore, and the documents answer queries and re-index from
their restored files. A store holding other bytes at a restored key is refused unless
--force; a key already holding the same bytes is left alone."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import start_worker, stop_worker
from tests.integration.test_backup_restore import _tether as tether_cli
from tests.integration.test_backup_restore import _wipe
from tests.integration.test_knowledge_indexing import new_base, query, settled, upload
from tests.integration.test_knowledge_object_store import files_env, files_settings
from tests.s3_server import s3_client, start_s3
from tether.core.settings import Settings
from tether.providers.offline import load_model

pytestmark = [pytest.mark.integration, pytest.mark.worker, pytest.mark.timeout(600)]

BASES = "/v1/knowledge-bases"
# Moto's state is per process, shared by every server in it: a bucket of this module's own.
BUCKET = "tether-backup-files"
HEATER = b"# Heater\n\n## Filters\n\nClean the dust filter of the heater every two weeks.\n"
KETTLE = b"# Kettle\n\nDescale the kettle with citric acid once a month.\n"


@pytest.fixture(scope="module")
def s3() -> Iterator[tuple[str, Any]]:
    url, server = start_s3(BUCKET)
    yield url, s3_client(url)
    server.stop()


@pytest.fixture(scope="module")
def settings(settings: Settings, s3: tuple[str, Any]) -> Settings:  # the module's, with S3 files
    files = files_settings(s3[0]).model_copy(update={"bucket": BUCKET})
    return settings.model_copy(update={"files": files})


@pytest.fixture(scope="module")
def worker(settings: Settings, s3: tuple[str, Any], tmp_path_factory):  # type: ignore[no-untyped-def]
    own = tmp_path_factory.mktemp("worker-pod")
    env = {"TETHER_DATA_DIR": str(own), **_files_env(s3[0])}
    process = start_worker(settings, env)
    yield process
    stop_worker(process)


def _files_env(url: str) -> dict[str, str]:
    return files_env(url) | {"TETHER_FILES__BUCKET": BUCKET}


def _tether(*args: str, settings: Settings, s3_url: str) -> subprocess.CompletedProcess[str]:
    return tether_cli(*args, settings=settings, extra=_files_env(s3_url))


def _keys(client: Any) -> list[str]:
    return sorted(i["Key"] for i in client.list_objects_v2(Bucket=BUCKET).get("Contents", []))


def _empty_bucket(client: Any) -> None:
    for key in _keys(client):
        client.delete_object(Bucket=BUCKET, Key=key)


async def _answers(client: Any, base_id: str, headers: Any) -> list[str]:
    found = []
    for question in ("how often do I clean the dust filter", "descale the kettle"):
        items = (await query(client, base_id, headers, question))["items"]
        found.append(items[0]["text"])
    return found


async def test_files_in_the_store_are_backed_up_and_restored_with_the_database(
    client, make_tenant, resources, settings, worker, pg_server, s3, tmp_path: Path
) -> None:
    url, store = s3
    await asyncio.to_thread(load_model)
    tenant = await make_tenant()
    base_id = await new_base(client, tenant.admin, "manuals")
    documents = [
        await upload(client, base_id, tenant.admin, name, data)
        for name, data in (("heater.md", HEATER), ("kettle.md", KETTLE))
    ]
    for document in documents:
        assert (await settled(client, base_id, document["id"], tenant.admin))["status"] == "ready"
    before = await _answers(client, base_id, tenant.admin)
    assert "two weeks" in before[0]
    assert "citric acid" in before[1]
    stored = _keys(store)
    assert len(stored) == 2

    made = _tether("backup", str(tmp_path / "b"), settings=settings, s3_url=url)
    assert made.returncode == 0, made.stderr
    assert "files copied" in made.stderr  # its progress bar
    summary = json.loads(made.stdout)
    assert (summary["files"], summary["file_bytes"]) == (2, len(HEATER) + len(KETTLE))
    assert summary["files_missing"] == summary["files_damaged"] == []
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["files"]["count"] == 2
    index = (tmp_path / "b" / "files" / "index.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)[0] for line in index) == stored

    await resources.engine.dispose()
    _wipe(pg_server, settings)
    _empty_bucket(store)
    restored = _tether("restore", str(tmp_path / "b"), settings=settings, s3_url=url)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    report = json.loads(restored.stdout)
    assert report["verified"] is True, report
    assert (report["files_restored"], report["files_already_there"]) == (2, 0)
    assert "files restored" in restored.stderr
    assert _keys(store) == stored

    assert await _answers(client, base_id, tenant.admin) == before
    for document in documents:  # indexed again from the restored objects
        path = f"{BASES}/{base_id}/documents/{document['id']}/reindex"
        response = await client.post(path, headers=tenant.admin)
        assert response.status_code in (200, 202), response.text
        again = await settled(client, base_id, document["id"], tenant.admin)
        assert again["status"] == "ready", again
    assert await _answers(client, base_id, tenant.admin) == before

    # The same backup again over itself: the store already holds those bytes.
    await resources.engine.dispose()
    args = ("restore", "--force", "--no-reindex", str(tmp_path / "b"))
    same = _tether(*args, settings=settings, s3_url=url)
    assert same.returncode == 0, same.stdout + same.stderr
    assert json.loads(same.stdout)["files_already_there"] == 2

    # Other bytes at a key the backup restores: refused before anything changes.
    store.put_object(Bucket=BUCKET, Key=stored[0], Body=b"someone else's bytes")
    refused = _tether("restore", "--no-reindex", str(tmp_path / "b"), settings=settings, s3_url=url)
    assert refused.returncode == 1
    assert "other bytes at 1 of the 2 keys" in refused.stderr
    assert "--force" in refused.stderr
    kept = store.get_object(Bucket=BUCKET, Key=stored[0])["Body"].read()
    assert kept == b"someone else's bytes"
    forced = _tether(*args, settings=settings, s3_url=url)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    report = json.loads(forced.stdout)
    assert (report["files_restored"], report["files_already_there"]) == (1, 1)
    back = {store.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in stored}
    assert back == {HEATER, KETTLE}
