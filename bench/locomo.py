"""LoCoMo evidence recall through the HTTP API, against plain BM25 in the same run.

    cd bench && ../.venv/bin/python locomo.py [--conversations 10] [--workers 1]

One embedded Postgres + Redis, the production ASGI app under uvicorn, no Celery worker
(manual memories are written synchronously). Each conversation is one relationship
(user "locomo-<id>", one shared persona); each dialog turn one manual memory written
through ``POST /memories/batch``: memory_type "event", content "<speaker>: <text>" plus
" [shares <blip caption>]" when the turn carried an image (as bench/locomo_offline.py),
external_id = the dialog id, occurred_at = its session's date (UTC), session_id = the
session, in dialog order.
Each question of categories 1-4 is a ``/search`` query (k=10, default settings, so time
decay ranks from "now"); evidence recall@k = share of its evidence dialog ids among the
top k ``external_id``s. Evidence ids are parsed leniently ("D8:6; D9:17", "D30:05");
ids naming no turn are dropped and questions left without evidence skipped.
The baseline is the data set README's: rank-bm25 BM25Okapi over lowercase ``\\w+``
tokens of "<speaker>: <text>" (no captions), one index per conversation.
Latency: every /search call, sequential, end to end and the server's own time
(``server-timing: app;dur=<ms>``).

Output (10 conversations, 1 API worker, about 40 s):

    # 10 conversations, 5882 memories written in 19.3 s, 1536 questions, 1 API worker(s)
    | category          |    n | API @1 | API @5 | API @10 | BM25 @1 | BM25 @5 | BM25 @10 |
    | 1 multi-hop       |  282 |  0.091 |  0.285 |   0.400 |   0.040 |   0.135 |    0.219 |
    | 2 temporal        |  321 |  0.466 |  0.702 |   0.775 |   0.282 |   0.514 |    0.609 |
    | 3 open-domain     |   92 |  0.134 |  0.270 |   0.353 |   0.089 |   0.175 |    0.242 |
    | 4 single-hop      |  841 |  0.394 |  0.744 |   0.837 |   0.307 |   0.535 |    0.610 |
    | all               | 1536 |  0.338 |  0.623 |   0.715 |   0.240 |   0.436 |    0.516 |
    search latency (n=1536): e2e p50 5.95 p95 7.66 p99 13.84 ms; server p50 4.80 ...
    degraded: writes none; searches none
    runtime 37 s
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx
import numpy as np
from _harness import api_server, services
from rank_bm25 import BM25Okapi

from tenancy.access.schemas import ApiKeyCreate
from tenancy.access.services import ApiKeyService, TenantService
from tenancy.audit import keys as audit_keys
from tenancy.enums import Role
from tether.core.database import create_engine, create_session_factory, transaction
from tether.core.ids import TenantId
from tether.core.settings import Settings

DATA = Path("/work/shared/bench/locomo")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (1, 5, 10)
BATCH = 500
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_WORDS = re.compile(r"\w+")
_TIMING = re.compile(r"app;dur=([0-9.]+)")


@dataclass
class Question:
    text: str
    category: int
    evidence: set[str]


@dataclass
class Conversation:
    name: str
    memories: list[dict[str, str]]  # the batch items, in dialog order
    plain: list[str]  # "<speaker>: <text>" for the baseline
    questions: list[Question]


@dataclass
class Tally:
    shares: dict[object, list[list[float]]] = field(
        default_factory=lambda: {c: [[], [], []] for c in (*CATEGORIES, "all")}
    )

    def add(self, question: Question, top: list[str]) -> None:
        for slot, k in enumerate(KS):
            share = len(question.evidence & set(top[:k])) / len(question.evidence)
            self.shares[question.category][slot].append(share)
            self.shares["all"][slot].append(share)

    def row(self, category: object) -> list[float]:
        return [statistics.fmean(values) for values in self.shares[category]]


@dataclass
class Latency:
    e2e_ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    degraded: Counter[str] = field(default_factory=Counter)


def load(path: Path) -> Conversation:
    raw = json.loads(path.read_text())
    numbers = sorted(int(key.split("_")[1]) for key in raw if re.fullmatch(r"session_\d+", key))
    memories, plain = [], []
    for number in numbers:
        stamp = raw[f"session_{number}_date_time"] + " +0000"
        when = datetime.strptime(stamp, "%I:%M %p on %d %B, %Y %z").isoformat()
        for turn in raw[f"session_{number}"]:
            text = f"{turn['speaker']}: {turn['text']}"
            plain.append(text)
            if turn.get("blip_caption"):
                text += f" [shares {turn['blip_caption']}]"
            item = {"content": text, "memory_type": "event", "external_id": turn["dia_id"]}
            # The session id makes a session's turns neighbours in recall (as for any
            # imported conversation log).
            memories.append(item | {"occurred_at": when, "session_id": f"session_{number}"})
    known = {m["external_id"] for m in memories}
    questions = []
    for qa in raw["qa"]:
        found = {f"D{int(a)}:{int(b)}" for e in qa["evidence"] for a, b in _EVIDENCE.findall(e)}
        if qa["category"] in CATEGORIES and found & known:
            questions.append(Question(qa["question"], qa["category"], found & known))
    return Conversation(path.stem, memories, plain, questions)


async def gateway_key(database_url: str, redis_url: str) -> str:
    """A tenant and a gateway key for it, as _harness.seed makes them (without its rows)."""
    settings = Settings(database_url=database_url, redis_url=redis_url)
    audit_keys.configure(settings)  # creating a tenant and a key writes audit records
    engine = create_engine(settings)
    async with transaction(create_session_factory(engine)) as session:
        tenant = await TenantService(session).create("locomo", "local")
        key = await ApiKeyService(session, TenantId(tenant.tenant_id)).issue(
            ApiKeyCreate(role=Role.GATEWAY)
        )
    await engine.dispose()
    return key.token


def write(client: httpx.Client, conversation: Conversation) -> tuple[str, set[str]]:
    """Resolve the conversation's relationship and write its turns; returns the
    relationship id and what the batch writes reported as degraded."""
    resolved = client.post(
        "/v1/resolve",
        json={
            "user": {"external_id": f"locomo-{conversation.name}"},
            "persona": {"external_id": "locomo", "creator_external_id": "locomo"},
        },
    )
    resolved.raise_for_status()
    rid = resolved.json()["relationship_id"]
    degraded: set[str] = set()
    for start in range(0, len(conversation.memories), BATCH):
        chunk = conversation.memories[start : start + BATCH]
        response = client.post(f"/v1/relationships/{rid}/memories/batch", json={"memories": chunk})
        response.raise_for_status()
        body = response.json()
        assert all(r["status"] == "created" for r in body["results"]), body["results"][:3]
        degraded.update(body["degraded"])
    return rid, degraded


def search(client: httpx.Client, rid: str, question: Question, latency: Latency) -> list[str]:
    started = time.perf_counter()
    response = client.post(
        f"/v1/relationships/{rid}/search", json={"query": question.text, "k": 10}
    )
    latency.e2e_ms.append((time.perf_counter() - started) * 1000)
    response.raise_for_status()
    if timing := _TIMING.search(response.headers.get("server-timing", "")):
        latency.server_ms.append(float(timing.group(1)))
    body = response.json()
    latency.degraded.update(body["degraded"])
    return [hit["external_id"] for hit in body["items"]]


def baseline(conversation: Conversation, tally: Tally) -> None:
    index = BM25Okapi([_WORDS.findall(text.lower()) for text in conversation.plain])
    ids = [m["external_id"] for m in conversation.memories]
    for question in conversation.questions:
        scores = index.get_scores(_WORDS.findall(question.text.lower()))
        tally.add(question, [ids[i] for i in np.argsort(-scores, kind="stable")[:10]])


def percentiles(values: list[float]) -> str:
    p50, p95, p99 = np.percentile(values, [50, 95, 99]) if values else (float("nan"),) * 3
    return f"p50 {p50:.2f} p95 {p95:.2f} p99 {p99:.2f} ms"


def report(api: Tally, bm25: Tally, latency: Latency) -> None:
    print("| category          |    n | API @1 | API @5 | API @10 | BM25 @1 | BM25 @5 | BM25 @10 |")
    for category in (*CATEGORIES, "all"):
        label = f"{category} {CATEGORIES[category]}" if category in CATEGORIES else "all"
        ours, theirs = api.row(category), bm25.row(category)
        count = len(api.shares[category][0])
        print(
            f"| {label:17} | {count:4d} | {ours[0]:6.3f} | {ours[1]:6.3f} | {ours[2]:7.3f} "
            f"| {theirs[0]:7.3f} | {theirs[1]:7.3f} | {theirs[2]:8.3f} |"
        )
    print(
        f"search latency (n={len(latency.e2e_ms)}): e2e {percentiles(latency.e2e_ms)}; "
        f"server {percentiles(latency.server_ms)}"
    )


def run(port: int, token: str, conversations: list[Conversation], workers: int) -> None:
    api, bm25, latency = Tally(), Tally(), Latency()
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=120) as client:
        started = time.perf_counter()
        written = [write(client, conversation) for conversation in conversations]
        seconds = time.perf_counter() - started
        for conversation, (rid, _) in zip(conversations, written, strict=True):
            for question in conversation.questions:
                api.add(question, search(client, rid, question, latency))
            baseline(conversation, bm25)
    memories = sum(len(c.memories) for c in conversations)
    print(
        f"# {len(conversations)} conversations, {memories} memories written in {seconds:.1f} s,"
        f" {len(latency.e2e_ms)} questions, {workers} API worker(s)"
    )
    report(api, bm25, latency)
    write_degraded = set().union(*(d for _, d in written))
    searches = dict(latency.degraded) or "none"
    print(f"degraded: writes {sorted(write_degraded) or 'none'}; searches {searches}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    paths = sorted(args.data.glob("*.json"), key=lambda p: int(p.stem))[: args.conversations]
    conversations = [load(path) for path in paths]
    started = time.perf_counter()
    with services() as (database_url, redis_url):
        token = asyncio.run(gateway_key(database_url, redis_url))
        with api_server(database_url, redis_url, args.workers) as port:
            run(port, token, conversations, args.workers)
    print(f"runtime {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
