"""PII planted through every write path (turns, manual memories single and batch, memory
edits and deactivation, global profile values, a knowledge-base document of a tenant
that filters documents) is nowhere afterwards: not in any Postgres table, not in either
Redis, not in a log record, not in an exported span. And a 100 kB Markdown heading
indexes promptly."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from redis import Redis as SyncRedis
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.conftest import start_worker, stop_worker
from tests.support import app_client, resolve_body
from tether.core.background import drain
from tether.core.settings import Settings
from tether.core.telemetry import setup_telemetry

pytestmark = [pytest.mark.integration, pytest.mark.worker]

PHONE = "13987654321"
EMAIL = "wang.xiaohong.pii@example.org"
CARD = "4539 1488 0343 6467"  # passes Luhn
ID_NUMBER = "11010519491231002X"
RAW = [PHONE, EMAIL, CARD, CARD.replace(" ", ""), ID_NUMBER]
SENTENCE = f"我的手机是{PHONE}，邮箱 {EMAIL}，信用卡 {CARD}，身份证{ID_NUMBER}"
ENGLISH = f"call me on {PHONE} or mail {EMAIL}; card {CARD}; id {ID_NUMBER}"
BASES = "/v1/knowledge-bases"


@pytest.fixture(scope="module")
def exporter(settings: Settings) -> Iterator[InMemorySpanExporter]:
    spans = InMemorySpanExporter()
    setup_telemetry("tether-api", settings, scrape=True, span_exporter=spans)
    yield spans
    spans.shutdown()


@pytest.fixture(scope="module")
async def traced(
    settings: Settings, exporter: InMemorySpanExporter, client: httpx.AsyncClient
) -> AsyncIterator[httpx.AsyncClient]:
    async with app_client(settings) as http:
        yield http


@pytest.fixture(scope="module")
def worker(settings: Settings) -> Iterator[object]:
    process = start_worker(settings, {"TETHER_DATA_DIR": str(settings.data_dir)})
    yield process
    stop_worker(process)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(f"{record.name} {self.format(record)} {record.exc_text or ''}")


@pytest.fixture
def records() -> Iterator[_Records]:
    """Every record of this process, SQL statements included (as an operator who turns
    on SQL logging would see them)."""
    handler, root, sql = _Records(), logging.getLogger(), logging.getLogger("sqlalchemy.engine")
    levels = root.level, sql.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    sql.setLevel(logging.INFO)
    yield handler
    root.removeHandler(handler)
    root.setLevel(levels[0])
    sql.setLevel(levels[1])


async def _settled(client: httpx.AsyncClient, url: str, headers: Any, seconds: float) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        document = dict((await client.get(url, headers=headers)).json())
        if document["status"] in ("ready", "failed"):
            return document
        assert time.monotonic() < deadline, f"still {document['status']} after {seconds} s"
        await asyncio.sleep(0.2)


async def _write_everywhere(http: httpx.AsyncClient, tenant: Any) -> None:
    gateway = await tenant.key("gateway")
    settings = {"patterns": [], "filter_documents": True}
    put = await http.put("/v1/tenant/privacy-patterns", json=settings, headers=tenant.admin)
    assert put.status_code == 200, put.text
    resolved = (await http.post("/v1/resolve", json=resolve_body("pii"), headers=gateway)).json()
    rid, user_id = resolved["relationship_id"], resolved["global_user_id"]
    memories = f"/v1/relationships/{rid}/memories"
    turns = {
        "turns": [{"session_id": "s-pii", "role": "user", "text": t} for t in (SENTENCE, ENGLISH)]
    }
    assert (
        await http.post(f"/v1/relationships/{rid}/turns", json=turns, headers=gateway)
    ).status_code == 202
    one = {"content": SENTENCE, "subject": PHONE, "object": EMAIL}
    created = await http.post(memories, json=one, headers=gateway)
    assert created.status_code in (200, 201), created.text
    assert PHONE not in created.text
    assert "[PHONE]" in created.text
    batch = {"memories": [{"content": ENGLISH, "external_id": "pii-1"}, {"content": SENTENCE}]}
    assert (await http.post(f"{memories}/batch", json=batch, headers=gateway)).status_code == 200
    memory_id = created.json()["id"]
    edit = {"content": f"new number {PHONE}", "reason": f"user said {EMAIL}"}
    edited = await http.patch(f"{memories}/{memory_id}", json=edit, headers=gateway)
    assert edited.status_code == 200, edited.text
    gone = await http.post(
        f"{memories}/{memory_id}/deactivate", json={"reason": f"card {CARD}"}, headers=gateway
    )
    assert gone.status_code == 200, gone.text
    field = {"value": f"{EMAIL} / {PHONE}", "scope": "profile"}
    put_field = await http.put(
        f"/v1/users/{user_id}/profile/fields/contact", json=field, headers=tenant.admin
    )
    assert put_field.status_code == 200, put_field.text
    base = await http.post(BASES, json={"name": "pii docs"}, headers=tenant.admin)
    base_id = base.json()["id"]
    document = (
        f"# Contacts {PHONE}\n\nWrite to {EMAIL}.\n\n## Cards\n\nCard {CARD}, ID {ID_NUMBER}.\n"
    )
    uploaded = await http.post(
        f"{BASES}/{base_id}/documents",
        files={"file": ("contacts.md", document.encode())},
        headers=tenant.admin,
    )
    assert uploaded.status_code == 202, uploaded.text
    url = f"{BASES}/{base_id}/documents/{uploaded.json()['id']}"
    assert (await _settled(http, url, tenant.admin, 60))["status"] == "ready"
    ended = await http.post(f"/v1/relationships/{rid}/sessions/s-pii/end", headers=gateway)
    assert ended.status_code in (200, 202, 404), ended.text
    await drain()


async def _postgres_rows(superuser: AsyncEngine) -> list[str]:
    async with superuser.connect() as conn:
        tables = (
            await conn.execute(
                text("SELECT schemaname, tablename FROM pg_tables WHERE schemaname = 'public'")
            )
        ).all()
        rows = []
        for schema, table in tables:
            found = await conn.execute(text(f'SELECT t::text FROM "{schema}"."{table}" t'))  # noqa: S608 - catalog names
            rows += [f"{table}: {row[0]}" for row in found]
    return rows


def _redis_values(url: str) -> list[str]:
    redis = SyncRedis.from_url(url)
    values = []
    for key in redis.scan_iter(count=500):
        kind = redis.type(key).decode()
        content: Any = {
            "string": lambda k: redis.get(k),
            "hash": lambda k: redis.hgetall(k),
            "list": lambda k: redis.lrange(k, 0, -1),
            "set": lambda k: redis.smembers(k),
            "zset": lambda k: redis.zrange(k, 0, -1),
            "stream": lambda k: redis.xrange(k),
        }.get(kind, lambda k: b"")(key)
        values.append(f"{key!r} {content!r}")
    return values


def _leaks(texts: list[str]) -> list[str]:
    return [t[:300] for t in texts if any(raw in t for raw in RAW)]


async def test_pii_written_through_every_path_is_stored_nowhere(
    traced: httpx.AsyncClient,
    make_tenant: Any,
    worker: object,
    exporter: InMemorySpanExporter,
    records: _Records,
    superuser: AsyncEngine,
    settings: Settings,
) -> None:
    tenant = await make_tenant()
    exporter.clear()
    await _write_everywhere(traced, tenant)
    await asyncio.sleep(1.0)  # the worker's writes of the session end
    rows = await _postgres_rows(superuser)
    assert any("[PHONE]" in row for row in rows)  # the searched tables hold the writes
    assert _leaks(rows) == []
    for url in (settings.require_redis_url(), settings.hot_redis_url or ""):
        if url:
            assert _leaks(_redis_values(url)) == [], url
    assert any("parameters hidden" in t for t in records.texts), "SQL logging was captured"
    assert _leaks(records.texts) == []
    spans = exporter.get_finished_spans()
    assert spans
    attributes = [
        f"{s.name} {dict(s.attributes or {})} {[dict(e.attributes or {}) for e in s.events]}"
        for s in spans
    ]
    assert _leaks(attributes) == []


async def test_a_100_kb_markdown_heading_indexes_promptly(
    traced: httpx.AsyncClient, make_tenant: Any, worker: object
) -> None:
    tenant = await make_tenant()
    base = await traced.post(BASES, json={"name": "long heading"}, headers=tenant.admin)
    heading = "# a" + " " * 100_000 + "b\n\nbody text\n"
    uploaded = await traced.post(
        f"{BASES}/{base.json()['id']}/documents",
        files={"file": ("long.md", heading.encode())},
        headers=tenant.admin,
    )
    assert uploaded.status_code == 202, uploaded.text
    url = f"{BASES}/{base.json()['id']}/documents/{uploaded.json()['id']}"
    # Generous: it indexes in well under a second; the backtracking heading took minutes.
    assert (await _settled(traced, url, tenant.admin, 30))["status"] == "ready"
