"""The Python SDK against a live Tether: typed resources, errors, pagination, streams,
uploads and arguments checked before anything is sent (Chinese and English)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from tether_client import (
    AsyncTether,
    Forbidden,
    NotFound,
    PreconditionFailed,
    Tether,
    Unauthenticated,
    ValidationError,
    models,
)

from tests.sdk.live import LiveServer

pytestmark = pytest.mark.integration

LUNA = {"external_id": "luna", "creator_external_id": "studio-7"}


@pytest.fixture(scope="module")
def admin(live: LiveServer, admin_key: str):
    with Tether(admin_key, base_url=live.url) as client:
        yield client


@pytest.fixture(scope="module")
def gateway(live: LiveServer, admin: Tether):
    key = admin.api_keys.create(role="gateway", name="sdk test")
    with Tether(key.token, base_url=live.url) as client:
        yield client


def test_resolve_memories_and_pages_walk_every_item(gateway: Tether) -> None:
    resolved = gateway.relationships.resolve(user={"external_id": "u-1"}, persona=LUNA)
    assert isinstance(resolved, models.ResolveResponse)
    rid = resolved.relationship_id
    again = gateway.relationships.resolve(user=models.UserRef(external_id="u-1"), persona=LUNA)
    assert again.relationship_id == rid
    contents = ["用户喜欢吃四川火锅", "The user plays the cello", "用户的猫叫小白"]
    created = [gateway.memories.create(rid, content=c) for c in contents]
    assert all(m.external_id and m.external_id.startswith("tc-") for m in created)
    # Pages of one: the iterator walks all three.
    walked = [m.content for m in gateway.memories.list(rid, limit=1)]
    assert walked == contents
    page = gateway.memories.list(rid, limit=2).first_page()
    assert len(page.items) == 2
    assert page.next_cursor
    edited = gateway.memories.update(rid, created[1].id, content="The user plays the viola")
    assert edited.content == "The user plays the viola"
    history = list(gateway.memories.history(rid, created[1].id))
    assert len(history) >= 2
    hits = gateway.memories.search(rid, query="火锅")
    assert hits.items[0].content == contents[0]
    ctx = gateway.context.build(relationship_id=rid, query="周末吃什么？")
    assert "火锅" in ctx.context


def test_an_external_id_makes_a_create_idempotent(gateway: Tether) -> None:
    rid = gateway.relationships.resolve(user={"external_id": "u-2"}, persona=LUNA).relationship_id
    first = gateway.memories.create(
        rid, content="The user is allergic to peanuts", external_id="m-1"
    )
    second = gateway.memories.create(
        rid, content="The user is allergic to peanuts", external_id="m-1"
    )
    assert first.id == second.id
    assert len(list(gateway.memories.list(rid))) == 1


def test_forget_is_a_preview_then_a_confirmation(gateway: Tether) -> None:
    rid = gateway.relationships.resolve(user={"external_id": "u-3"}, persona=LUNA).relationship_id
    gateway.memories.create(rid, content="用户住在上海")
    gateway.memories.create(rid, content="The user likes jazz")
    preview = gateway.memories.forget_preview(rid, query="上海")
    assert [m.content for m in preview.memories] == ["用户住在上海"]
    done = gateway.memories.forget_confirm(rid, token=preview.token)
    assert done.forgotten == 1
    assert [m.content for m in gateway.memories.list(rid)] == ["The user likes jazz"]


def test_problems_become_typed_errors(live: LiveServer, admin: Tether, gateway: Tether) -> None:
    with pytest.raises(NotFound) as missing:
        gateway.memories.list(str(uuid.uuid4())).first_page()
    assert missing.value.status == 404
    assert missing.value.code == "relationship_not_found"
    assert missing.value.request_id
    with pytest.raises(Forbidden):
        gateway.api_keys.list().first_page()
    with Tether("tth_not-a-key", base_url=live.url) as stranger, pytest.raises(Unauthenticated):
        stranger.relationships.list().first_page()
    rid = gateway.relationships.resolve(user={"external_id": "u-4"}, persona=LUNA).relationship_id
    with pytest.raises(ValidationError) as invalid:
        gateway.memories.list(rid, cursor="not-one-we-issued").first_page()
    assert invalid.value.errors == [{"field": "cursor", "message": "invalid"}]


def test_a_stale_profile_edit_says_where_the_profile_is_now(admin: Tether, gateway: Tether) -> None:
    persona_id = gateway.relationships.resolve(
        user={"external_id": "u-5"}, persona=LUNA
    ).creator_persona_id
    current = admin.personas.get_profile(persona_id)
    etag = f'"{current.version}"'
    admin.personas.put_profile(persona_id, if_match=etag, tone="温柔")
    with pytest.raises(PreconditionFailed) as stale:
        admin.personas.put_profile(persona_id, if_match=etag, tone="冷淡")
    assert stale.value.code == "profile_changed"
    assert stale.value.current_version == current.version + 1
    assert stale.value.current_etag == f'"{current.version + 1}"'


def test_bad_arguments_are_refused_before_sending(gateway: Tether) -> None:
    with pytest.raises(ValueError, match="relationship_id"):
        gateway.memories.list("not-a-uuid").first_page()
    with pytest.raises(TypeError, match="content"):
        gateway.memories.create(str(uuid.uuid4()), content=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="role"):
        gateway.turns.ingest(
            str(uuid.uuid4()), turns=[{"session_id": "s", "role": "bot", "text": "hi"}]
        )
    with pytest.raises(ValueError, match="query"):
        gateway.context.build(relationship_id=str(uuid.uuid4()), query="")


def test_audit_exports_stream_to_a_file(tmp_path: Path, live: LiveServer, admin: Tether) -> None:
    key = admin.api_keys.create(role="compliance", name="auditor")
    with Tether(key.token, base_url=live.url) as auditor:
        written = auditor.audit.export(tmp_path / "audit.jsonl")
        assert auditor.audit.verify().ok
        assert list(auditor.audit.list(limit=1))
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    assert written == (tmp_path / "audit.jsonl").stat().st_size
    assert lines
    assert all(json.loads(line) for line in lines)


def test_a_document_uploads_from_a_path(tmp_path: Path, admin: Tether) -> None:
    base = admin.knowledge.create_base(name="Kettle manuals")
    manual = tmp_path / "manual.md"
    manual.write_text("# Kettle\n\nWarranty: two years. 保修两年。\n", encoding="utf-8")
    document = admin.knowledge.upload(base.id, manual)
    assert document.filename == "manual.md"
    assert [d.id for d in admin.knowledge.list_documents(base.id)] == [document.id]


async def test_the_async_client_does_the_same(live: LiveServer, admin: Tether) -> None:
    key = admin.api_keys.create(role="gateway", name="async")
    async with AsyncTether(key.token, base_url=live.url) as client:
        rid = (
            await client.relationships.resolve(user={"external_id": "u-6"}, persona=LUNA)
        ).relationship_id
        for text in ("用户喜欢猫", "The user likes dogs", "用户会弹吉他"):
            await client.memories.create(rid, content=text)
        walked = [m.content async for m in client.memories.list(rid, limit=2)]
        assert walked == ["用户喜欢猫", "The user likes dogs", "用户会弹吉他"]
        with pytest.raises(NotFound):
            await client.memories.get(rid, str(uuid.uuid4()))


EXIT_SCRIPT = """
import atexit, sys
from tether_client import Tether

# Registered first, so it runs last: after the client's own exit hook flushed the queue.
atexit.register(lambda: print("stats", client.capture_stats()))
client = Tether(sys.argv[1], base_url=sys.argv[2])
rid = client.relationships.resolve(
    user={"external_id": "u-exit"}, persona={"external_id": "luna", "creator_external_id": "c"}
).relationship_id
for i in range(30):
    client.capture(rid, f"turn {i} 第{i}轮", session_id="exit")
# no close(): the interpreter exits with the turns still queued
"""


def test_the_queue_is_flushed_when_the_interpreter_exits(
    tmp_path: Path, live: LiveServer, gateway: Tether, admin: Tether
) -> None:
    key = admin.api_keys.create(role="gateway", name="exit").token
    script = tmp_path / "exit.py"
    script.write_text(EXIT_SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), key, live.url],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "queued=30, sent=30, dropped=0, failed=0, pending=0" in done.stdout, done.stderr
