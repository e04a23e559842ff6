"""Shared pieces of the HTTP benchmarks: embedded services, a server process, and a
lean keep-alive HTTP/1.1 load generator (so the client costs less than the server)."""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy import text

from tenancy.access.schemas import ApiKeyCreate
from tenancy.access.services import ApiKeyService, TenantService
from tenancy.audit import keys as audit_keys
from tenancy.enums import Role
from tether.core import migrations
from tether.core.database import create_engine, create_session_factory, transaction
from tether.core.ids import TenantId
from tether.core.settings import Settings
from tether.runtime.embedded_postgres import EmbeddedPostgres, default_shared_buffers_mb
from tether.runtime.embedded_redis import EmbeddedRedis
from tether.runtime.serve import stop_worker, worker_command, worker_env

HOT_REDIS_VARIABLE = "TETHER_HOT_REDIS_URL"
# The role production connects as (docs/security.md): row-level security applies, and
# so do the plans Postgres makes under it.
APP_ROLE_ENV = {"TETHER_DB__ROLE": "tether_app"}
_TIMING = re.compile(rb"server-timing: app;dur=([0-9.]+)", re.IGNORECASE)
_LENGTH = re.compile(rb"content-length: (\d+)", re.IGNORECASE)


@contextmanager
def services(
    shared_buffers_mb: int | None = None, *, migrate: bool = True
) -> Iterator[tuple[str, str]]:
    """Fresh embedded Postgres + Redis in a temp dir, migrated; yields their URLs.

    As the embedded runtime does, a second Redis (a cache, without persistence) holds the
    hot tier: its URL is ``TETHER_HOT_REDIS_URL`` in this process's environment while the
    block runs, so the API and worker processes a bench starts use it (``hot_redis_url``).
    Postgres's buffer pool is the embedded runtime's (``default_shared_buffers_mb``)
    unless ``shared_buffers_mb`` is given. ``migrate``: upgrade the schema (this tree's)."""
    with tempfile.TemporaryDirectory(prefix="tb") as tmp:
        buffers = shared_buffers_mb or default_shared_buffers_mb()
        postgres = EmbeddedPostgres(Path(tmp), shared_buffers_mb=buffers)
        redis, hot = EmbeddedRedis(Path(tmp)), EmbeddedRedis(Path(tmp), cache=True)
        try:
            database_url = postgres.start()
            redis_url = redis.start()
            os.environ[HOT_REDIS_VARIABLE] = hot.start()
            if migrate:
                migrations.upgrade(database_url)
            # A tenant a bench creates in this process appends to its audit chain, keyed
            # from the secret the API and worker processes read too.
            audit_keys.configure(Settings(database_url=database_url, redis_url=redis_url))
            yield database_url, redis_url
        finally:
            os.environ.pop(HOT_REDIS_VARIABLE, None)
            hot.stop()
            redis.stop()
            postgres.stop()


def hot_redis_url() -> str:
    """The hot tier's Redis of the running ``services`` block."""
    return os.environ[HOT_REDIS_VARIABLE]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def api_server(
    database_url: str, redis_url: str, workers: int, *, app_role: bool = False
) -> Iterator[int]:
    """``workers`` API processes (``_api_process.py``: the production ASGI app under
    uvicorn) on one loopback port, each with its own ``SO_REUSEPORT`` socket, so that
    connections spread over them as over containers behind a load balancer (decision
    0029); connecting as the application role if ``app_role`` (else as the database
    owner, without row-level security). Yields the port once every process listens.
    Linux only: readiness and the spread are read from ``/proc``."""
    if not os.path.exists(_TCP_TABLES[0]):
        raise RuntimeError(f"the benches read {_TCP_TABLES[0]} (Linux) to see the API listen")
    port = free_port()
    env = os.environ | (APP_ROLE_ENV if app_role else {})
    env |= {"TETHER_DATABASE_URL": database_url, "TETHER_REDIS_URL": redis_url}
    command = [sys.executable, str(Path(__file__).with_name("_api_process.py")), str(port)]
    servers: list[subprocess.Popen[bytes]] = []
    # Logging as `tether serve` logs (INFO, a line per request), into a file.
    log = open(Path(tempfile.gettempdir()) / f"tether-bench-api-{port}.log", "wb")  # noqa: SIM115
    try:
        servers += [
            subprocess.Popen(command, env=env, stdout=log, stderr=log) for _ in range(workers)
        ]
        deadline = time.monotonic() + 60
        while len(_sockets(port, _LISTEN)) < workers:
            if time.monotonic() > deadline or any(s.poll() is not None for s in servers):
                raise RuntimeError(f"the API processes did not all listen on port {port}")
            time.sleep(0.2)
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).raise_for_status()
        _API_PIDS[port] = [server.pid for server in servers]
        yield port
    finally:
        _API_PIDS.pop(port, None)
        for server in servers:
            server.terminate()
        for server in servers:
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        log.close()


@contextmanager
def served(database_url: str, redis_url: str, data_dir: Path) -> Iterator[tuple[int, int]]:
    """``tether serve`` itself, as ``make run`` starts it (one API process, the Celery
    worker with beat, INFO logs) on these services; yields its port once it answers, and
    its pid."""
    port = free_port()
    env = os.environ | {
        "TETHER_DATABASE_URL": database_url,
        "TETHER_REDIS_URL": redis_url,
        "TETHER_PORT": str(port),
        "TETHER_DATA_DIR": str(data_dir),
    }
    with open(data_dir / "serve.log", "wb") as log:
        command = [sys.executable, "-m", "tether.cli", "serve"]
        process = subprocess.Popen(command, env=env, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 90
            while True:
                try:
                    httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).raise_for_status()
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise
                    time.sleep(0.5)
            settled([process.pid])  # its worker loading its models, its API warming up
            yield port, process.pid
        finally:
            process.terminate()
            process.wait(60)


@contextmanager
def worker(
    database_url: str, redis_url: str, data_dir: Path, *, app_role: bool = False
) -> Iterator[int]:
    """The Celery worker with beat, started as ``tether serve`` starts it (its command,
    environment and concurrency), logging into a file of ``data_dir``; connecting as the
    application role if ``app_role``."""
    db = {"role": APP_ROLE_ENV["TETHER_DB__ROLE"]} if app_role else {}
    settings = Settings(database_url=database_url, redis_url=redis_url, data_dir=data_dir, db=db)
    env = worker_env(settings) | {"TETHER_HOT_REDIS_URL": hot_redis_url()}
    with open(data_dir / "worker.log", "wb") as log:
        process = subprocess.Popen(
            worker_command(settings, with_beat=True), env=env, stdout=log, stderr=log
        )
        try:
            settled([process.pid])
            yield process.pid
        finally:
            stop_worker(process)


_TCP_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
_LISTEN, _ESTABLISHED = "0A", "01"  # socket states in those tables
_API_PIDS: dict[int, list[int]] = {}  # port -> the API processes api_server started


def _sockets(port: int, state: str) -> set[str]:
    """Inodes of this machine's TCP sockets on local ``port`` in ``state``."""
    inodes = set()
    for table in filter(os.path.exists, _TCP_TABLES):  # no tcp6 without IPv6
        with open(table) as sockets:
            for line in itertools.islice(sockets, 1, None):
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == state:
                    inodes.add(fields[9])
    return inodes


def api_pids(port: int) -> list[int]:
    """The API processes ``api_server`` started on ``port``."""
    return list(_API_PIDS.get(port, []))


def postmaster_pid(database_url: str) -> int:
    """The embedded Postgres's postmaster: the first line of ``postmaster.pid`` in its data
    directory, which is its socket directory (``host=`` of the URL)."""
    socket_dir = database_url.split("host=", 1)[1].split("&", 1)[0]
    return int((Path(socket_dir) / "postmaster.pid").read_text().split()[0])


_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def cpu_ms(roots: list[int]) -> float:
    """CPU milliseconds (user + system) used so far by ``roots`` and every live process
    descending from them (an API process, the worker's pool, Postgres's backends)."""
    stats: dict[int, tuple[int, float]] = {}  # pid -> (parent, ms)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(pid)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) * _TICK_MS)
    wanted = {pid for pid in roots if pid in stats}
    while more := {pid for pid, (parent, _) in stats.items() if parent in wanted} - wanted:
        wanted |= more
    return sum(stats[pid][1] for pid in wanted)


def settled(roots: list[int], seconds: float = 60) -> None:
    """Wait until ``roots`` (and their descendants) use under a tenth of a CPU over a
    second: a worker that just started loads the tokenizer's dictionary and the embedding
    model in each of its processes, seconds of CPU that must not land in a measurement."""
    deadline = time.monotonic() + seconds
    used = cpu_ms(roots)
    while time.monotonic() < deadline:
        time.sleep(1)
        now = cpu_ms(roots)
        if now - used < 100:
            return
        used = now


def connections_per_process(port: int) -> list[int]:
    """How many connections each API process of ``api_server`` on ``port`` holds, most
    first (empty for a server the harness did not start)."""
    established = _sockets(port, _ESTABLISHED)
    counts = []
    for pid in _API_PIDS.get(port, []):
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:  # gone
            continue
        sockets = (link[8:-1] for link in links if link.startswith("socket:["))
        counts.append(sum(inode in established for inode in sockets))
    return sorted(counts, reverse=True)


@dataclass
class Run:
    latencies_ms: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0
    # Connections per API process a moment into a timed run (see spread_of).
    spread: list[int] = field(default_factory=list)

    def pct(self, values: list[float], q: float) -> float:
        if not values:
            return float("nan")
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def summary(self, name: str) -> str:
        n = len(self.latencies_ms)
        e2e, own = self.latencies_ms, self.server_ms
        spread = "/".join(map(str, self.spread))
        return (
            f"{name:42} n={n:6d}  {n / self.seconds:8.0f} req/s  "
            f"e2e p50={self.pct(e2e, 0.5):6.2f} p95={self.pct(e2e, 0.95):6.2f}"
            f" p99={self.pct(e2e, 0.99):6.2f} ms  "
            f"server p50={self.pct(own, 0.5):5.2f} p95={self.pct(own, 0.95):5.2f} ms"
            f"  status={dict(sorted(self.statuses.items()))}"
            + (f"  connections per process {spread}" if spread else "")
        )


async def spread_of(port: int, run: Run) -> None:
    """Note in ``run`` how the connections of a timed run spread over the API processes,
    once they are all open (a run starts them at once)."""
    await asyncio.sleep(0.5)
    # In a thread: the client's event loop keeps serving its connections meanwhile.
    run.spread = await asyncio.to_thread(connections_per_process, port)


async def _connection(port: int, requests: Callable[[], bytes | None], run: Run) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while (request := requests()) is not None:
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = _LENGTH.search(head)
            await reader.readexactly(int(length.group(1)) if length else 0)
            run.latencies_ms.append((time.perf_counter() - started) * 1000)
            status = int(head[9:12])
            run.statuses[status] = run.statuses.get(status, 0) + 1
            if timing := _TIMING.search(head):
                run.server_ms.append(float(timing.group(1)))
    finally:
        writer.close()


def post(path: str, token: str, body: bytes) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def load(port: int, requests: list[bytes], concurrency: int, seconds: float | None = None) -> Run:
    """Send ``requests`` (cycled for ``seconds`` when given, else once) over keep-alive
    connections; returns latencies and the server's own timing."""
    run = Run()
    index = 0
    deadline = None if seconds is None else time.monotonic() + seconds

    def next_request() -> bytes | None:
        nonlocal index
        if deadline is None and index >= len(requests):
            return None
        if deadline is not None and time.monotonic() >= deadline:
            return None
        request = requests[index % len(requests)]
        index += 1
        return request

    async def main() -> None:
        clients = (_connection(port, next_request, run) for _ in range(concurrency))
        timed = [spread_of(port, run)] if seconds else []
        await asyncio.gather(*clients, *timed)

    started = time.perf_counter()
    asyncio.run(main())
    run.seconds = time.perf_counter() - started
    return run


SEED = """
INSERT INTO global_users (id, tenant_id, external_id)
  SELECT gen_random_uuid(), :t, 'u-' || g FROM generate_series(1, :n) g;
INSERT INTO user_facets (id, tenant_id, global_user_id, name)
  SELECT gen_random_uuid(), :t, id, 'default' FROM global_users WHERE tenant_id = :t;
INSERT INTO creators (id, tenant_id, external_id, display_name)
  SELECT gen_random_uuid(), :t, 'c-' || g, '' FROM generate_series(1, :creators) g;
INSERT INTO creator_personas (id, tenant_id, creator_id, external_id, display_name)
  SELECT gen_random_uuid(), :t, id, 'p-' || substr(external_id, 3), '' FROM creators
  WHERE tenant_id = :t;
INSERT INTO relationships (id, tenant_id, user_facet_id, creator_persona_id, global_user_id,
                           creator_id, operator_kind, operator_id, privacy_mode)
  SELECT gen_random_uuid(), :t, f.id, p.id, u.id, p.creator_id, 'creator', c.external_id, 'normal'
  FROM global_users u
  JOIN user_facets f ON f.global_user_id = u.id
  JOIN creators c ON c.tenant_id = :t
       AND c.external_id = 'c-' || (1 + substr(u.external_id, 3)::int % :creators)
  JOIN creator_personas p ON p.creator_id = c.id
  WHERE u.tenant_id = :t;
ANALYZE;
"""


async def seed(database_url: str, redis_url: str, n: int, creators: int) -> str:
    """A tenant with ``n`` users, ``creators`` creators (one persona each) and one
    relationship per user; returns a gateway key."""
    settings = Settings(database_url=database_url, redis_url=redis_url)
    # Creating a tenant appends to its audit chain, keyed from the secret the API and
    # worker processes read too (TETHER_AUDIT__SECRET, else the data dir's key file).
    audit_keys.configure(settings)
    engine = create_engine(settings)
    factory = create_session_factory(engine)
    async with transaction(factory) as session:
        tenant = await TenantService(session).create("bench", "local")
        key = await ApiKeyService(session, TenantId(tenant.tenant_id)).issue(
            ApiKeyCreate(role=Role.GATEWAY)
        )
        for statement in SEED.strip().split(";\n"):
            params = {"t": tenant.tenant_id, "n": n, "creators": creators}
            await session.execute(text(statement), params if ":" in statement else {})
    await engine.dispose()
    return key.token
