"""Knowledge bases: how fast the real worker indexes a 100-page PDF, and query latency
over HTTP with 10,000 chunks in the base.

    cd bench && ../.venv/bin/python knowledge.py
    cd bench && ../.venv/bin/python knowledge.py --pdf-runs 3 --chunks 10000 --seconds 20

One embedded Postgres + Redis in a temp dir, the production ASGI app under uvicorn
(``--workers`` processes), one real Celery worker (``--worker-concurrency``), all sharing
a data dir for the uploaded files. Phases:

1. index: ``--pdf-runs`` different 100-page PDFs (English with a Chinese line per page,
   made with pypdf's writer, ~3 KB of text per page) uploaded one at a time; the time from
   the 202 until the document reads ``ready`` (polled every 50 ms), as pages/s.
2. fill: plain-text documents of synthetic manual prose (English and Chinese sentences
   over a shared vocabulary) uploaded until the base holds ``--chunks`` chunks, all
   indexed by the worker (so the figures include real tokens and real vectors).
3. query: POST /v1/knowledge-bases/{id}/query with queries from the same vocabulary;
   first the cold query of each API process (it builds the base's view from Postgres),
   then ``--seconds`` at concurrency 1 and ``--concurrency``, p50/p95/p99 end to end and
   the server's own time (Server-Timing).
4. change: one more small document is indexed, and the first query after it (the view is
   rebuilt from cached parts plus the new document) is timed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _harness import api_server, load, post, services

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tenancy.access.schemas import ApiKeyCreate
from tenancy.access.services import ApiKeyService, TenantService
from tenancy.enums import Role
from tests.unit.test_knowledge_pdfs import build_pdf, manual_pages
from tether.core.database import create_engine, create_session_factory, transaction
from tether.core.ids import TenantId
from tether.core.settings import Settings

PARTS = ["kettle", "lid", "filter", "base", "switch", "cable", "handle", "spout", "gauge"]
ACTIONS = ["descale", "rinse", "replace", "check", "clean", "tighten", "dry", "inspect"]
WHEN = ["every week", "every month", "after each use", "before travel", "in winter"]
ZH_PARTS = ["水壶", "壶盖", "滤网", "底座", "开关", "电源线", "把手", "壶嘴"]
ZH_ACTIONS = ["除垢", "冲洗", "更换", "检查", "清洁", "拧紧", "晾干"]


def sentence(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return f"{rng.choice(ZH_PARTS)}需要{rng.choice(ZH_ACTIONS)}，型号{rng.randint(1, 500)}。"
    return (
        f"{rng.choice(ACTIONS).capitalize()} the {rng.choice(PARTS)} of model "
        f"K{rng.randint(1, 500)} {rng.choice(WHEN)} with code {rng.randint(1000, 99999)}. "
    )


def prose(rng: random.Random, chars: int) -> str:
    paragraphs, size = [], 0
    while size < chars:
        paragraph = "".join(sentence(rng) for _ in range(rng.randint(3, 8)))
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs)


def query_text(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return f"{rng.choice(ZH_PARTS)}怎么{rng.choice(ZH_ACTIONS)}"
    return f"how do I {rng.choice(ACTIONS)} the {rng.choice(PARTS)} of model K{rng.randint(1, 500)}"


async def tenant_keys(database_url: str, redis_url: str) -> tuple[str, str]:
    engine = create_engine(Settings(database_url=database_url, redis_url=redis_url))
    async with transaction(create_session_factory(engine)) as session:
        tenant = await TenantService(session).create("bench", "local")
        gateway = await ApiKeyService(session, TenantId(tenant.tenant_id)).issue(
            ApiKeyCreate(role=Role.GATEWAY)
        )
    await engine.dispose()
    return tenant.admin_token, gateway.token


def start_worker(concurrency: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "celery", "-A", "workers.app", "worker"]
    command += ["--loglevel", os.environ.get("BENCH_WORKER_LOG", "WARNING")]
    command += ["--concurrency", str(concurrency)]
    return subprocess.Popen(command, env=os.environ.copy())


def upload(http: httpx.Client, base_id: str, name: str, data: bytes) -> dict:
    response = http.post(f"/v1/knowledge-bases/{base_id}/documents", files={"file": (name, data)})
    assert response.status_code == 202, response.text
    return dict(response.json())


def settled(http: httpx.Client, base_id: str, document_id: str, timeout: float = 600) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        document = dict(http.get(f"/v1/knowledge-bases/{base_id}/documents/{document_id}").json())
        if document["status"] in ("ready", "failed"):
            assert document["status"] == "ready", document
            return document
        if time.monotonic() > deadline:
            raise SystemExit(f"document still {document['status']} after {timeout} s")
        time.sleep(0.05)


def index_pdfs(http: httpx.Client, base_id: str, runs: int) -> None:
    for run in range(runs):
        pages = manual_pages(100)
        pages[0][0] = f"Manual edition {run}: operating the kettle."
        data = build_pdf(pages)
        started = time.monotonic()
        document = upload(http, base_id, f"manual-{run}.pdf", data)
        accepted = time.monotonic() - started
        ready = settled(http, base_id, document["id"])
        elapsed = time.monotonic() - started
        print(
            f"index 100-page PDF ({len(data) / 1e6:.2f} MB, {ready['chunk_count']} chunks):"
            f" ready in {elapsed:5.2f} s = {100 / elapsed:5.1f} pages/s"
            f" (upload answered in {accepted * 1000:.0f} ms)"
        )


def fill(http: httpx.Client, base_id: str, target: int, rng: random.Random) -> int:
    chunks = sum(
        d["chunk_count"]
        for d in http.get(f"/v1/knowledge-bases/{base_id}/documents?limit=200").json()["items"]
    )
    started, number = time.monotonic(), 0
    while chunks < target:
        per_chunk = 640  # passages are ~700 characters, with ~100 overlap
        text = prose(rng, min(target - chunks, 2000) * per_chunk)
        document = upload(http, base_id, f"notes-{number}.txt", text.encode())
        chunks += settled(http, base_id, document["id"])["chunk_count"]
        number += 1
    print(f"fill: {chunks:,} chunks in the base after {time.monotonic() - started:.1f} s")
    return chunks


def timed_query(port: int, token: str, path: str, text: str) -> tuple[float, dict]:
    started = time.perf_counter()
    response = httpx.post(
        f"http://127.0.0.1:{port}{path}",
        json={"query": text},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    return (time.perf_counter() - started) * 1000, dict(response.json())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pdf-runs", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-concurrency", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="tk") as data_dir, services() as urls:
        database_url, redis_url = urls
        os.environ |= {
            "TETHER_DATABASE_URL": database_url,
            "TETHER_REDIS_URL": redis_url,
            "TETHER_DATA_DIR": data_dir,
            "TETHER_LOG_LEVEL": "WARNING",
        }
        admin, gateway = asyncio.run(tenant_keys(database_url, redis_url))
        print(
            f"# {os.cpu_count()} CPUs, {args.workers} API workers,"
            f" 1 Celery worker (concurrency {args.worker_concurrency})"
        )
        worker = start_worker(args.worker_concurrency)
        try:
            with api_server(database_url, redis_url, args.workers) as port:
                base_url = f"http://127.0.0.1:{port}"
                headers = {"Authorization": f"Bearer {admin}"}
                with httpx.Client(base_url=base_url, headers=headers, timeout=60) as http:
                    created = http.post("/v1/knowledge-bases", json={"name": "bench"})
                    base_id = created.json()["id"]
                    index_pdfs(http, base_id, args.pdf_runs)
                    fill(http, base_id, args.chunks, rng)
                    path = f"/v1/knowledge-bases/{base_id}/query"
                    for process in range(args.workers * 2):
                        ms, body = timed_query(port, gateway, path, query_text(rng))
                        print(f"cold/first query #{process}: {ms:7.1f} ms  {body['timings_ms']}")
                    queries = [
                        post(path, gateway, json.dumps({"query": query_text(rng)}).encode())
                        for _ in range(2000)
                    ]
                    load(port, queries[:200], 16)  # every API process builds the view
                    for concurrency in (1, args.concurrency):
                        run = load(port, queries, concurrency, seconds=args.seconds)
                        print(run.summary(f"query, 10k-chunk base (c={concurrency})"))
                    sample = [timed_query(port, gateway, path, query_text(rng)) for _ in range(8)]
                    timings = sorted(sample, key=lambda s: s[0])[4][1]["timings_ms"]
                    print(f"median request timings_ms: {timings}")
                    extra = upload(http, base_id, "late.txt", prose(rng, 3000).encode())
                    settled(http, base_id, extra["id"])
                    for process in range(args.workers * 2):
                        ms, body = timed_query(port, gateway, path, query_text(rng))
                        print(f"first query after a new document #{process}: {ms:7.1f} ms")
        finally:
            worker.terminate()
            worker.wait(30)


if __name__ == "__main__":
    main()
