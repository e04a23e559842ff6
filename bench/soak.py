"""Soak: a bounded mixed load against a local deployment for a fixed time.

    cd bench && ../.venv/bin/python soak.py --seconds 600 --rate 100
    cd bench && ../.venv/bin/python soak.py --seconds 60          # a quick look

One embedded Postgres + Redis (migrated), the production ASGI app under uvicorn and a
real Celery worker, both with ``TETHER_DB__ROLE=tether_app`` as in production. Before
the clock starts, ``--relationships`` relationships are seeded and ``--active`` of them
get ``--memories`` memories each through ``POST .../memories/batch``.

The load is open loop: requests are scheduled at ``--rate`` per second whether or not
earlier ones have answered, in fixed proportions (``--mix``, default 10 % resolve,
30 % turn batches of 5, 40 % /v1/context, 20 % /search) over the active relationships
(resolves over all users), and sent over ``--concurrency`` keep-alive connections. A
request that finds every connection busy waits in a bounded backlog; when the backlog
is full it is shed and counted (the server did not keep up with the rate). Latency is
measured from the moment a request was scheduled, so client-side queueing is included.

Every ``--sample-seconds`` the resident set size (RSS) of every API process (the uvicorn
supervisor and its workers) and the Celery queue depth are sampled. Reported at the end:
per-operation throughput and p50/p95/p99, non-2xx answers by status, ``degraded``
reasons, whether every accepted turn became durable, the CPU seconds the API, the
Celery worker, PostgreSQL and Redis used during the load (and per request), the size
per row of the partitioned tables, RSS at start and end, the least-squares RSS slope
(MB/min) after ``--warmup`` seconds, and a PASS/FAIL line against the bar: 0 errors,
nothing shed, every turn durable, and an RSS slope of the API processes together below
``--max-slope`` MB/min (default 1.0: at 100 req/s about 175 bytes kept per request, so
a leak of even one small object per request fails the run). The first minutes are
warm-up because each API process fills its partition cache (512 partitions) then.

The machine is shared with the load generator (and, on a developer box, with whatever
else runs): CPU time per request is the robust figure; tail latencies are not.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
from _harness import _LENGTH, _TIMING, APP_ROLE_ENV, Run, free_port, load, post, seed, services
from ingest import batch, durable_count, relationship_ids, start_worker
from redis import Redis
from resolve import body as resolve_body
from sqlalchemy import text

from tether.core import task_queues
from tether.core.database import create_engine
from tether.core.settings import Settings

OPERATIONS = ("resolve", "turns", "context", "search")
EXPECTED = {"resolve": 200, "turns": 202, "context": 200, "search": 200}
TURNS_PER_BATCH = 5

PEOPLE = ["Alice", "Bob", "小明", "李雷", "Mia", "韩梅梅"]
PLACES = ["Hangzhou", "Kyoto", "西湖", "黄山", "Lisbon", "the seaside"]
FOODS = ["spicy hotpot", "sushi", "饺子", "火锅", "dark chocolate", "noodles"]
HOBBIES = ["hiking", "piano", "摄影", "跑步", "chess", "painting"]
TEMPLATES = [
    "User loves {food} and orders it every Friday",
    "用户喜欢{food}，不吃香菜",
    "User went hiking near {place} with {person} last spring",
    "用户周末常去{place}",
    "{person} is the user's best friend since school",
    "用户最近在学{hobby}",
    "User practises {hobby} every morning before work",
    "用户的生日在十月，想去{place}过",
]
QUERIES = [
    "what food does the user like",
    "用户喜欢吃什么",
    "where did we go hiking",
    "周末去哪里玩",
    "who is the user's best friend",
    "最近在学什么",
    "birthday plans",
    "推荐个餐厅吧",
]


@dataclass
class Sample:
    at: float
    rss_mb: dict[str, float]
    queue: int

    @property
    def total_mb(self) -> float:
        return sum(self.rss_mb.values())


@dataclass
class Tally:
    runs: dict[str, Run] = field(default_factory=lambda: {op: Run() for op in OPERATIONS})
    degraded: Counter[str] = field(default_factory=Counter)
    shed: int = 0
    accepted_turns: int = 0


class Traffic:
    """Builds the next request of each operation over the seeded users and relationships."""

    def __init__(self, token: str, users: int, creators: int, rids: list[str], seed: int) -> None:
        self._token, self._users, self._creators, self._rids = token, users, creators, rids
        self._rng = random.Random(seed)

    def request(self, op: str) -> bytes:
        rid = self._rng.choice(self._rids)
        if op == "resolve":
            user = self._rng.randint(1, self._users)
            return post("/v1/resolve", self._token, resolve_body(user, self._creators))
        if op == "turns":
            return batch(rid, self._token, TURNS_PER_BATCH)
        query = self._rng.choice(QUERIES)
        if op == "context":
            payload = {"relationship_id": rid, "query": query}
            return post("/v1/context", self._token, json.dumps(payload).encode())
        return self.search(rid, query)

    def search(self, rid: str, query: str) -> bytes:
        path = f"/v1/relationships/{rid}/search"
        return post(path, self._token, json.dumps({"query": query, "k": 5}).encode())


def deck(mix: dict[str, int], rng: random.Random) -> Iterator[str]:
    """Operations in exact proportions: a shuffled deck of ``sum(mix)`` cards, repeated."""
    cards = [op for op, weight in mix.items() for _ in range(weight)]
    while True:
        rng.shuffle(cards)
        yield from cards


def memories_for(rng: random.Random, count: int) -> bytes:
    rows = []
    for i in range(count):
        template = rng.choice(TEMPLATES)
        content = template.format(
            food=rng.choice(FOODS),
            place=rng.choice(PLACES),
            person=rng.choice(PEOPLE),
            hobby=rng.choice(HOBBIES),
        )
        rows.append({"content": f"{content} ({i})", "session_id": f"import-{i // 5}"})
    return json.dumps({"memories": rows}).encode()


@contextmanager
def environment(extra: dict[str, str]) -> Iterator[None]:
    """``extra`` in os.environ while a child process is started (it copies the env)."""
    saved = {key: os.environ.get(key) for key in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def api_process(database_url: str, redis_url: str, workers: int) -> Iterator[tuple[int, int]]:
    """The API under ``uvicorn --workers``, with the application role; yields the port
    and the supervisor's pid, whose process tree is sampled for RSS. Unlike
    ``_harness.api_server`` (one socket per process, decision 0029) the workers share
    one accept queue: the load recycles its connections to spread them (``connection``),
    as the soak's earlier runs did."""
    port = free_port()
    env = os.environ | APP_ROLE_ENV
    env |= {"TETHER_DATABASE_URL": database_url, "TETHER_REDIS_URL": redis_url}
    env |= {"TETHER_LOG_LEVEL": "WARNING"}
    command = [sys.executable, "-m", "uvicorn", "--factory", "tether.asgi:create"]
    command += ["--port", str(port), "--workers", str(workers), "--no-access-log"]
    command += ["--log-level", "warning"]
    server = subprocess.Popen(command, env=env)
    try:
        wait_healthy(port, server)
        yield port, server.pid
    finally:
        server.terminate()
        server.wait(30)


def wait_healthy(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the API exited with {server.returncode} before it was healthy")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("the API did not become healthy within 90 s")


def api_rss(supervisor: int) -> dict[str, float]:
    """RSS in MB of the uvicorn supervisor and each of its child processes, by role."""
    root = psutil.Process(supervisor)
    found: dict[str, float] = {}
    for process in [root, *root.children(recursive=True)]:
        try:
            rss = process.memory_info().rss / 2**20
            helper = "resource_tracker" in " ".join(process.cmdline())
        except psutil.NoSuchProcess:
            continue
        role = "supervisor" if process.pid == supervisor else "helper" if helper else "worker"
        found[f"{role} {process.pid}"] = rss
    return found


def tree_cpu(pid: int | None) -> dict[int, float]:
    """CPU seconds (user + system, with reaped children) of a process and its children."""
    if pid is None:
        return {}
    used: dict[int, float] = {}
    root = psutil.Process(pid)
    for process in [root, *root.children(recursive=True)]:
        try:
            t = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        used[process.pid] = t.user + t.system + t.children_user + t.children_system
    return used


@dataclass(frozen=True)
class Components:
    """The processes whose CPU time the soak accounts for (the client's is not)."""

    api: int
    celery: int
    redis: int | None
    postgres: int | None

    def cpu(self) -> dict[str, float]:
        api = tree_cpu(self.api)
        found = {f"api {pid}": seconds for pid, seconds in api.items() if pid != self.api}
        found["api"] = sum(api.values())
        for name in ("celery", "redis", "postgres"):
            found[name] = sum(tree_cpu(getattr(self, name)).values())
        return found


def redis_server() -> int | None:
    """The embedded redis-server, a child of this process."""
    for process in psutil.Process().children(recursive=True):
        if process.name() == "redis-server":
            return int(process.pid)
    return None


STORAGE = text(
    """
    SELECT parent.relname, sum(pg_total_relation_size(child.oid))::bigint
    FROM pg_inherits i
    JOIN pg_class parent ON parent.oid = i.inhparent
    JOIN pg_class child ON child.oid = i.inhrelid
    WHERE parent.relname IN ('turns', 'memories', 'memory_versions')
    GROUP BY parent.relname
    """
)


async def storage(settings: Settings) -> dict[str, tuple[int, int]]:
    """Bytes (all partitions, with indexes and TOAST) and rows of the partitioned tables."""
    engine = create_engine(settings)
    async with engine.connect() as conn:
        sizes = {str(name): int(size) for name, size in await conn.execute(STORAGE)}
        found = {}
        for table, size in sizes.items():
            rows = await conn.scalar(text(f"SELECT count(*) FROM {table}"))  # noqa: S608
            found[table] = (size, int(rows or 0))
    await engine.dispose()
    return found


async def postmaster(settings: Settings) -> int | None:
    engine = create_engine(settings)
    async with engine.connect() as conn:
        directory = await conn.scalar(text("SHOW data_directory"))
    await engine.dispose()
    pid_file = Path(str(directory)) / "postmaster.pid"
    return int(pid_file.read_text().split()[0]) if pid_file.exists() else None


def slope_mb_per_min(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) points, in MB per minute."""
    if len(points) < 2:
        return float("nan")
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_m = sum(m for _, m in points) / n
    num = sum((t - mean_t) * (m - mean_m) for t, m in points)
    den = sum((t - mean_t) ** 2 for t, _ in points)
    return float("nan") if den == 0 else 60 * num / den


def read_degraded(op: str, body: bytes, tally: Tally) -> None:
    try:
        answer = json.loads(body)
    except ValueError:
        tally.degraded[f"{op}:unparsable"] += 1
        return
    for reason in answer.get("degraded") or []:
        tally.degraded[f"{op}:{reason}"] += 1
    if op == "turns":
        results = answer.get("results") or []
        tally.accepted_turns += sum(1 for r in results if r.get("status") == "accepted")


async def exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bytes, float | None]:
    """One request on a keep-alive connection: status, body and the server's own time."""
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    length, timing = _LENGTH.search(head), _TIMING.search(head)
    body = await reader.readexactly(int(length.group(1)) if length else 0)
    return int(head[9:12]), body, float(timing.group(1)) if timing else None


async def connection(
    port: int, backlog: asyncio.Queue[tuple[str, bytes, float] | None], tally: Tally, recycle: int
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    sent = 0
    while (item := await backlog.get()) is not None:
        op, request, scheduled = item
        sent += 1
        try:
            answer = await exchange(reader, writer, request)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            answer = None
        record(tally, op, scheduled, answer)
        if answer is None or sent % recycle == 0:
            # A new connection now and then: uvicorn's workers share one listening
            # socket, and connections opened together can all land on one worker.
            writer.close()
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.close()


def record(
    tally: Tally, op: str, scheduled: float, answer: tuple[int, bytes, float | None] | None
) -> None:
    run = tally.runs[op]
    if answer is None:
        run.statuses[0] = run.statuses.get(0, 0) + 1  # 0: the connection failed
        return
    status, body, server_ms = answer
    run.latencies_ms.append((time.perf_counter() - scheduled) * 1000)
    run.statuses[status] = run.statuses.get(status, 0) + 1
    if server_ms is not None:
        run.server_ms.append(server_ms)
    if 200 <= status < 300:
        read_degraded(op, body, tally)


async def schedule(
    traffic: Traffic,
    ops: Iterator[str],
    rate: float,
    seconds: float,
    backlog: asyncio.Queue[tuple[str, bytes, float] | None],
    tally: Tally,
) -> None:
    started = time.perf_counter()
    for n in itertools.count():
        due = started + n / rate
        if due - started >= seconds:
            return
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        op = next(ops)
        try:
            backlog.put_nowait((op, traffic.request(op), due))
        except asyncio.QueueFull:
            tally.shed += 1


async def pause(stop: asyncio.Event, seconds: float) -> None:
    """Sleeps ``seconds`` or until ``stop`` is set, whichever comes first."""
    with suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


async def sample(
    supervisor: int, broker: Redis, every: float, samples: list[Sample], stop: asyncio.Event
) -> None:
    started = time.monotonic()
    while not stop.is_set():
        rss = await asyncio.to_thread(api_rss, supervisor)
        queue = sum([int(await asyncio.to_thread(broker.llen, q)) for q in task_queues.ALL])
        samples.append(Sample(time.monotonic() - started, rss, queue))
        await pause(stop, every)


async def progress(tally: Tally, samples: list[Sample], every: float, stop: asyncio.Event) -> None:
    started, done_before = time.monotonic(), 0
    while True:
        await pause(stop, every)
        if stop.is_set():
            return  # the last, partial interval is in the final report
        done = sum(len(r.latencies_ms) for r in tally.runs.values())
        errors = sum(n for r in tally.runs.values() for s, n in r.statuses.items() if s >= 300)
        errors += sum(r.statuses.get(0, 0) for r in tally.runs.values())
        last = samples[-1] if samples else None
        print(
            f"  t={time.monotonic() - started:5.0f} s  {(done - done_before) / every:6.1f} req/s"
            f"  errors={errors}  shed={tally.shed}"
            f"  api rss={last.total_mb if last else float('nan'):7.1f} MB"
            f"  queue={last.queue if last else -1}",
            flush=True,
        )
        done_before = done


async def drive(
    args: argparse.Namespace, port: int, supervisor: int, traffic: Traffic, broker: Redis
) -> tuple[Tally, list[Sample], float]:
    tally, stop = Tally(), asyncio.Event()
    samples: list[Sample] = []
    backlog: asyncio.Queue[tuple[str, bytes, float] | None] = asyncio.Queue(args.backlog)
    connections = [
        asyncio.create_task(connection(port, backlog, tally, args.recycle))
        for _ in range(args.concurrency)
    ]
    sampler = asyncio.create_task(sample(supervisor, broker, args.sample_seconds, samples, stop))
    report_every = min(60.0, max(10.0, args.seconds / 10))
    reporter = asyncio.create_task(progress(tally, samples, report_every, stop))
    started = time.perf_counter()
    ops = deck(args.mix, random.Random(11))
    await schedule(traffic, ops, args.rate, args.seconds, backlog, tally)
    for _ in connections:
        await backlog.put(None)
    await asyncio.gather(*connections)
    elapsed = time.perf_counter() - started
    stop.set()
    await asyncio.gather(sampler, reporter)
    return tally, samples, elapsed


def preload(port: int, token: str, rids: list[str], per: int) -> float:
    """Gives every active relationship ``per`` memories through the batch API."""
    rng = random.Random(5)
    requests = [
        post(f"/v1/relationships/{rid}/memories/batch", token, memories_for(rng, per))
        for rid in rids
    ]
    run = load(port, requests, 4)
    if set(run.statuses) != {200}:
        raise SystemExit(f"memory import failed: {run.statuses}")
    return run.seconds


def wait_for_turns(settings: Settings, expected: int, timeout: float) -> tuple[int, float]:
    """How many accepted turns are durable, and how long after the load that took."""
    started = time.monotonic()
    while (durable := asyncio.run(durable_count(settings))) < expected:
        if time.monotonic() - started > timeout:
            break
        time.sleep(0.5)
    return durable, time.monotonic() - started


def latency_lines(args: argparse.Namespace, tally: Tally, elapsed: float) -> int:
    """Prints one line per operation; returns the number of errors (non-2xx, failures)."""
    errors, weights = 0, sum(args.mix.values())
    for op in OPERATIONS:
        run = tally.runs[op]
        if op not in args.mix:
            continue
        run.seconds = elapsed
        print(run.summary(f"{op} ({100 * args.mix[op] / weights:.0f} %)"))
        errors += sum(n for s, n in run.statuses.items() if not 200 <= s < 300)
        wrong = {s: n for s, n in run.statuses.items() if 200 <= s < 300 and s != EXPECTED[op]}
        if wrong:
            print(f"  {op}: unexpected 2xx statuses {wrong}")
    by_status = Counter[int]()
    for run in tally.runs.values():
        by_status.update({s: n for s, n in run.statuses.items() if not 200 <= s < 300})
    total = sum(len(r.latencies_ms) for r in tally.runs.values()) + by_status.get(0, 0)
    rate = errors / total if total else float("nan")
    print(
        f"requests {total} in {elapsed:.0f} s ({total / elapsed:.1f}/s of {args.rate:g} scheduled)"
        f"; errors {errors} ({100 * rate:.3f} %) by status {dict(sorted(by_status.items()))}"
        f"; shed {tally.shed}; degraded {dict(sorted(tally.degraded.items())) or 'none'}"
    )
    return errors


def cpu_lines(before: dict[str, float], after: dict[str, float], tally: Tally) -> None:
    """CPU seconds each component used during the load, and per request of the mix."""
    used = {name: after[name] - before.get(name, 0.0) for name in after}
    requests = sum(len(r.latencies_ms) for r in tally.runs.values())
    groups = ("api", "celery", "postgres", "redis")
    workers = ", ".join(f"{k} {v:.1f}" for k, v in sorted(used.items()) if k.startswith("api "))
    print(
        "cpu seconds during the load: "
        + ", ".join(f"{g} {used[g]:.1f}" for g in groups)
        + f" (api processes: {workers})"
    )
    per = {g: 1000 * used[g] / requests for g in groups} if requests else {}
    total = sum(per.values())
    print(
        "cpu ms per request of the mix: "
        + ", ".join(f"{g} {ms:.2f}" for g, ms in per.items())
        + f"; all {total:.2f} ms -> {1000 / total if total else float('nan'):.0f} requests"
        " per core-second of this mix (client excluded)"
    )


def memory_lines(samples: list[Sample], warmup: float) -> float:
    """Prints RSS per API process and in total; returns the total's slope after warm-up."""
    first, last = samples[0], samples[-1]
    settled = [s for s in samples if s.at >= warmup] or samples[-2:]
    for pid in sorted(last.rss_mb):
        series = [(s.at, s.rss_mb[pid]) for s in settled if pid in s.rss_mb]
        print(
            f"api {pid:>17}: rss start {first.rss_mb.get(pid, float('nan')):7.1f} MB,"
            f" after warm-up {series[0][1]:7.1f} MB, end {last.rss_mb[pid]:7.1f} MB,"
            f" slope after warm-up {slope_mb_per_min(series):+.3f} MB/min"
        )
    slope = slope_mb_per_min([(s.at, s.total_mb) for s in settled])
    print(
        f"api total: rss start {first.total_mb:.1f} MB, after warm-up ({warmup:.0f} s)"
        f" {settled[0].total_mb:.1f} MB, end {last.total_mb:.1f} MB;"
        f" slope {slope:+.3f} MB/min over {len(settled)} of {len(samples)} samples"
    )
    queues = [s.queue for s in samples]
    print(f"celery queue depth (all queues): max {max(queues)}, end {queues[-1]}")
    return slope


def verdict(
    args: argparse.Namespace, errors: int, shed: int, slope: float, lost: int, crashed: list[str]
) -> bool:
    failures = list(crashed)
    if errors:
        failures.append(f"{errors} errors")
    if shed:
        failures.append(f"{shed} requests shed (rate not sustained)")
    if lost:
        failures.append(f"{lost} accepted turns not durable")
    if not slope < args.max_slope:
        failures.append(f"RSS slope {slope:+.3f} MB/min >= {args.max_slope} MB/min")
    ok = not failures
    print(
        f"{'PASS' if ok else 'FAIL'}: bar = 0 errors, nothing shed, every turn durable, API RSS"
        f" slope < {args.max_slope} MB/min after warm-up"
        + ("" if ok else f"; failed: {'; '.join(failures)}")
    )
    return ok


def parse_mix(text: str) -> dict[str, int]:
    mix = {}
    for part in text.split(","):
        op, _, weight = part.partition("=")
        if op not in OPERATIONS or not weight.isdigit():
            raise argparse.ArgumentTypeError(f"bad mix entry {part!r}")
        mix[op] = int(weight)
    return mix


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--rate", type=float, default=100, help="requests per second")
    parser.add_argument("--mix", type=parse_mix, default="resolve=10,turns=30,context=40,search=20")
    parser.add_argument("--relationships", type=int, default=20_000)
    parser.add_argument("--creators", type=int, default=200)
    parser.add_argument("--active", type=int, default=1_000, help="relationships with memories")
    parser.add_argument("--memories", type=int, default=20, help="memories per active one")
    parser.add_argument("--workers", type=int, default=2, help="uvicorn workers")
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16, help="client connections")
    parser.add_argument("--backlog", type=int, default=200, help="scheduled, not yet sent")
    parser.add_argument("--recycle", type=int, default=100, help="requests per connection")
    parser.add_argument("--sample-seconds", type=float, default=5)
    parser.add_argument("--warmup", type=float, default=None, help="default min(120, T/4)")
    parser.add_argument("--max-slope", type=float, default=1.0, help="MB/min, API total")
    args = parser.parse_args()
    if args.warmup is None:
        args.warmup = min(120.0, args.seconds / 4)
    return args


def soak(args: argparse.Namespace, database_url: str, redis_url: str) -> bool:
    token = asyncio.run(seed(database_url, redis_url, args.relationships, args.creators))
    settings = Settings(database_url=database_url, redis_url=redis_url)
    rids = asyncio.run(relationship_ids(settings, args.active))
    print(
        f"# {args.relationships} relationships ({args.active} active, {args.memories} memories"
        f" each), {args.rate:g} req/s for {args.seconds:g} s, mix {args.mix},"
        f" {args.workers} API workers, 1 Celery worker (concurrency {args.worker_concurrency}),"
        f" {args.concurrency} connections, {os.cpu_count()} CPUs, TETHER_DB__ROLE=tether_app",
        flush=True,
    )
    with environment(APP_ROLE_ENV):
        worker = start_worker(database_url, redis_url, args.worker_concurrency)
    try:
        with api_process(database_url, redis_url, args.workers) as (port, supervisor):
            traffic = Traffic(token, args.relationships, args.creators, rids, seed=3)
            took = preload(port, token, rids, args.memories)
            print(f"# imported {len(rids) * args.memories} memories in {took:.1f} s", flush=True)
            primer = [traffic.search(rid, QUERIES[0]) for rid in rids]
            primed = load(port, primer, 4)
            print(f"# primed: {len(primer)} searches in {primed.seconds:.1f} s", flush=True)
            pids_before = set(api_rss(supervisor))
            broker = Redis.from_url(redis_url)
            pg = asyncio.run(postmaster(settings))
            components = Components(supervisor, worker.pid, redis_server(), pg)
            cpu_before = components.cpu()
            tally, samples, elapsed = asyncio.run(drive(args, port, supervisor, traffic, broker))
            cpu_after = components.cpu()
            crashed = []
            if set(api_rss(supervisor)) != pids_before:
                crashed.append("the set of API processes changed (an API worker died)")
            if worker.poll() is not None:
                crashed.append(f"the Celery worker exited during the load ({worker.returncode})")
            patience = 180 if worker.poll() is None else 5  # no worker, nothing drains
            durable, drain = wait_for_turns(settings, tally.accepted_turns, patience)
            tables = asyncio.run(storage(settings))
    finally:
        worker.terminate()
        worker.wait(30)
    errors = latency_lines(args, tally, elapsed)
    print(f"turns: {tally.accepted_turns} accepted, {durable} durable {drain:.1f} s after the load")
    cpu_lines(cpu_before, cpu_after, tally)
    print(
        "postgres: "
        + "; ".join(
            f"{table} {rows} rows, {size / 2**20:.1f} MB = {size / rows:.0f} B/row"
            for table, (size, rows) in sorted(tables.items())
            if rows
        )
        + " (all partitions, indexes and TOAST)"
    )
    slope = memory_lines(samples, args.warmup)
    lost = max(0, tally.accepted_turns - durable)
    return verdict(args, errors, tally.shed, slope, lost, crashed)


def main() -> None:
    args = arguments()
    with services() as (database_url, redis_url):
        ok = soak(args, database_url, redis_url)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
