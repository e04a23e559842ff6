"""What one API process and one worker use under a representative load: the figures the
chart's resource requests and limits come from (charts/tether/values.yaml).

    .venv/bin/python bench/resources.py --seconds 60

One embedded Postgres + Redis, the production ASGI app under uvicorn (one process, as
one API pod runs it) and the Celery worker as `tether worker` runs it (beat, and the
chart's default concurrency of 2), both as the application role. For --seconds, a few
keep-alive clients send a mix per relationship: context and search reads, turn batches,
and session ends (so the worker persists turns and extracts memories). Every 0.5 s the
RSS, PSS (prefork children share pages, so their RSS double-counts) and CPU of each
process tree (the worker with its pool) are sampled with psutil; printed as p50/p95/max.
The whole run takes about two minutes; the machine is shared, so CPU figures are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from _harness import (
    api_pids,
    api_server,
    load,
    post,
    postmaster_pid,
    seed,
    services,
    settled,
    worker,
)
from ingest import relationship_ids

from tether.core.settings import Settings

SAMPLE_SECONDS = 0.5
_session = itertools.count()


@dataclass
class Samples:
    rss_mb: list[float] = field(default_factory=list)
    pss_mb: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # cores


def _tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def _memory(processes: list[psutil.Process]) -> tuple[float, float]:
    rss = pss = 0
    for process in processes:
        try:
            info = process.memory_full_info()
        except psutil.Error:  # gone between the listing and the read
            continue
        rss, pss = rss + info.rss, pss + info.pss
    return rss / 2**20, pss / 2**20


def _cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def sample(pids: dict[str, int], seconds: float) -> dict[str, Samples]:
    """Memory and CPU of each named process tree every SAMPLE_SECONDS for ``seconds``."""
    found = {name: Samples() for name in pids}
    before = {name: (time.monotonic(), _cpu_seconds(_tree(pid))) for name, pid in pids.items()}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(SAMPLE_SECONDS)
        for name, pid in pids.items():
            processes = _tree(pid)
            rss, pss = _memory(processes)
            now, used = time.monotonic(), _cpu_seconds(processes)
            then, used_before = before[name]
            found[name].rss_mb.append(rss)
            found[name].pss_mb.append(pss)
            found[name].cpu.append((used - used_before) / (now - then))
            before[name] = (now, used)
    return found


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(name: str, samples: Samples) -> str:
    def row(label: str, values: list[float], unit: str, fmt: str) -> str:
        p50, p95 = _pct(values, 0.5), _pct(values, 0.95)
        return f"{label} p50={p50:{fmt}} p95={p95:{fmt}} max={max(values):{fmt}} {unit}"

    return (
        f"{name:7} {row('rss', samples.rss_mb, 'MiB', '.0f')}  "
        f"{row('pss', samples.pss_mb, 'MiB', '.0f')}  {row('cpu', samples.cpu, 'cores', '.2f')}"
        f"  (mean cpu {statistics.fmean(samples.cpu):.2f})"
    )


def _end(rid: str, session: str, token: str) -> bytes:
    return (
        f"POST /v1/relationships/{rid}/sessions/{session}/end HTTP/1.1\r\nHost: bench\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: 0\r\n\r\n"
    ).encode()


def _round(rid: str, token: str) -> list[bytes]:
    """One relationship's share of the mix: a session of two turn batches that ends,
    and reads of the context and search around it."""
    session = f"s-{next(_session)}"
    turns = [
        {
            "session_id": session,
            "role": "user",
            "text": "我周末喜欢去爬山, and I love spicy hotpot",
        },
        {"session_id": session, "role": "assistant", "text": "Hiking and hotpot, noted!"},
    ]
    batch = post(f"/v1/relationships/{rid}/turns", token, json.dumps({"turns": turns}).encode())
    context = {"relationship_id": rid, "query": "what does the user like to do?"}
    search = {"query": "weekend hobbies"}
    return [
        batch,
        post("/v1/context", token, json.dumps(context).encode()),
        post(f"/v1/relationships/{rid}/search", token, json.dumps(search).encode()),
        batch,
        post("/v1/context", token, json.dumps(context).encode()),
        _end(rid, session, token),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60, help="length of the measured load")
    parser.add_argument("--concurrency", type=int, default=4, help="keep-alive clients")
    parser.add_argument("--relationships", type=int, default=200)
    args = parser.parse_args()
    os.environ.setdefault("TETHER_WORKER__CONCURRENCY", "2")  # the chart's default
    os.environ.setdefault("TETHER_LOG_LEVEL", "WARNING")
    os.environ.setdefault("TETHER_AUDIT__SECRET", "bench-audit-secret")  # one for every process
    with services() as (database_url, redis_url), tempfile.TemporaryDirectory() as tmp:
        token = asyncio.run(seed(database_url, redis_url, args.relationships, 10))
        settings = Settings(database_url=database_url, redis_url=redis_url)
        rids = asyncio.run(relationship_ids(settings, args.relationships))
        requests = [r for _ in range(20) for rid in rids for r in _round(rid, token)]
        with (
            api_server(database_url, redis_url, 1, app_role=True) as port,
            worker(database_url, redis_url, Path(tmp), app_role=True) as worker_pid,
        ):
            # Postgres for where the time goes; the chart does not run it.
            pids = {
                "api": api_pids(port)[0],
                "worker": worker_pid,
                "postgres": postmaster_pid(database_url),
            }
            load(port, requests[: len(rids) * 6], args.concurrency)  # warm: one round each
            settled(list(pids.values()))
            idle = sample(pids, 5)
            runs = []
            loader = threading.Thread(
                target=lambda: runs.append(load(port, requests, args.concurrency, args.seconds))
            )
            loader.start()
            busy = sample(pids, args.seconds)
            loader.join()
        print(f"load: {runs[0].summary('mixed (turns, ends, context, search)')}")
        for name in pids:
            print(f"idle   {report(name, idle[name])}")
        for name in pids:
            print(f"loaded {report(name, busy[name])}")


if __name__ == "__main__":
    main()
