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
import threading
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from math import inf
from pathlib import Path

import httpx
from sqlalchemy import text

from tenancy.access.schemas import ApiKeyCreate
from tenancy.access.services import ApiKeyService, TenantService
from tenancy.enums import Role
from tether.core import migrations
from tether.core.database import create_engine, create_session_factory, transaction
from tether.core.ids import TenantId
from tether.core.settings import Settings
from tether.runtime.embedded_postgres import EmbeddedPostgres, default_shared_buffers_mb
from tether.runtime.embedded_redis import EmbeddedRedis

HOT_REDIS_VARIABLE = "TETHER_HOT_REDIS_URL"
# The role production connects as (docs/security.md): row-level security applies, and
# so do the plans Postgres makes under it.
APP_ROLE_ENV = {"TETHER_DB__ROLE": "tether_app"}
_TIMING = re.compile(rb"server-timing: app;dur=([0-9.]+)", re.IGNORECASE)
_LENGTH = re.compile(rb"content-length: (\d+)", re.IGNORECASE)


@contextmanager
def services(shared_buffers_mb: int | None = None) -> Iterator[tuple[str, str]]:
    """Fresh embedded Postgres + Redis in a temp dir, migrated; yields their URLs.

    As the embedded runtime does, a second Redis (a cache, without persistence) holds the
    hot tier: its URL is ``TETHER_HOT_REDIS_URL`` in this process's environment while the
    block runs, so the API and worker processes a bench starts use it (``hot_redis_url``).
    Postgres's buffer pool is the embedded runtime's (``default_shared_buffers_mb``)
    unless ``shared_buffers_mb`` is given."""
    with tempfile.TemporaryDirectory(prefix="tb") as tmp:
        buffers = shared_buffers_mb or default_shared_buffers_mb()
        postgres = EmbeddedPostgres(Path(tmp), shared_buffers_mb=buffers)
        redis, hot = EmbeddedRedis(Path(tmp)), EmbeddedRedis(Path(tmp), cache=True)
        try:
            database_url = postgres.start()
            redis_url = redis.start()
            os.environ[HOT_REDIS_VARIABLE] = hot.start()
            migrations.upgrade(database_url)
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
    env |= {
        "TETHER_DATABASE_URL": database_url,
        "TETHER_REDIS_URL": redis_url,
        "TETHER_LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, str(Path(__file__).with_name("_api_process.py")), str(port)]
    servers: list[subprocess.Popen[bytes]] = []
    try:
        servers += [subprocess.Popen(command, env=env) for _ in range(workers)]
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


def _pressure_waits(resource: str) -> float:
    """Microseconds some task waited for ``resource`` ("cpu", "io") since boot, from the
    kernel's pressure stall information; 0 where it is not there."""
    try:
        with open(f"/proc/pressure/{resource}") as pressure:
            some = pressure.readline()
    except OSError:
        return 0.0
    return float(some.rsplit("total=", 1)[1]) if "total=" in some else 0.0


# Kernel threads that reclaim memory (kswapd, DAMON's kdamond): their CPU time is
# taken from the two CPUs the run has, and their work unmaps pages others then fault in.
_RECLAIMERS = ("kswapd", "kdamond")


def _reclaimer_ids() -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as comm:
                if comm.read().startswith(_RECLAIMERS):
                    found.append(pid)
        except OSError:
            continue
    return found


def _ran_ms(pids: list[str]) -> float:
    """CPU milliseconds ``pids`` have run since they started (schedstat)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/schedstat") as schedstat:
                total += int(schedstat.read().split()[0])
        except OSError:
            continue
    return total / 1e6


class MachineWaits:
    """Samples, every 50 ms in a thread, the CPU time the hypervisor gave other guests
    (``steal`` in /proc/stat), how long tasks here waited for a CPU or for I/O
    (/proc/pressure), and the CPU time of the kernel's memory reclaimers, so a run can
    say what the machine was doing around a slow answer. A figure the kernel does not
    report stays 0."""

    def __init__(self, every_seconds: float = 0.05) -> None:
        # (time.time(), stolen, CPU waits, I/O waits, reclaimers' CPU), ms since boot
        self._samples: list[tuple[float, float, float, float, float]] = []
        self._reclaimers = _reclaimer_ids()
        self._tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
        self._every = every_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(self._every):
            with open("/proc/stat") as stat:
                fields = stat.readline().split()
            stolen = int(fields[8]) * self._tick_ms if len(fields) > 8 else 0.0
            cpu, io = _pressure_waits("cpu") / 1000, _pressure_waits("io") / 1000
            reclaim = _ran_ms(self._reclaimers)
            self._samples.append((time.time(), stolen, cpu, io, reclaim))

    def during(self, since: float, until: float) -> str:
        """What the machine waited for between two ``time.time()``s (stolen CPU summed
        over CPUs; waits: wall time during which at least one task waited)."""
        samples = list(self._samples)
        times = [sample[0] for sample in samples]
        first, last = bisect_left(times, since), min(bisect_left(times, until), len(times) - 1)
        if first >= last:
            return "machine not sampled"
        stolen, cpu, io, reclaim = (samples[last][i] - samples[first][i] for i in (1, 2, 3, 4))
        return (
            f"in {until - since:.1f} s: stolen CPU {stolen:.0f} ms, waits for CPU "
            f"{cpu:.0f} ms, for I/O {io:.0f} ms, reclaim {reclaim:.0f} ms"
        )

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# What MachineSpeed's process runs: a fixed piece of interpreter work (≈ 0.5 ms here)
# every 50 ms, each time with how long it took, until its stdin closes.
_SPEED_PROBE = """
import select, sys, time
while not select.select([sys.stdin], [], [], 0.05)[0]:
    started = time.perf_counter()
    total = 0
    for i in range(20_000):
        total += i
    print(time.time(), time.perf_counter() - started, flush=True)
"""


class MachineSpeed:
    """How long a fixed piece of work takes over time, in a process of its own: a slow
    answer that came while the same work took twice as long came on a slower machine
    (another guest on the host, a shared core), which ``steal`` does not always show.
    It costs about 1% of one CPU."""

    def __init__(self) -> None:
        descriptor, self._path = tempfile.mkstemp(prefix="tether-speed-", suffix=".log")
        with os.fdopen(descriptor, "w") as output:  # the process keeps its own copy
            self._process = subprocess.Popen(
                [sys.executable, "-c", _SPEED_PROBE], stdin=subprocess.PIPE, stdout=output
            )
        # Read as it grows: each call parses only the lines written since the last one.
        self._log = open(self._path)  # noqa: SIM115 - open until stop()
        self._unfinished = ""
        self._runs: list[tuple[float, float]] = []  # (time(), seconds), in time order

    def _samples(self) -> list[tuple[float, float]]:
        *lines, self._unfinished = (self._unfinished + self._log.read()).split("\n")
        pairs = (line.split() for line in lines)
        self._runs += [(float(p[0]), float(p[1])) for p in pairs if len(p) == 2]
        return self._runs

    def slowdown(self, since: float, until: float) -> str:
        """How long the work took between two ``time.time()``s against the median of all
        its runs so far: the median and the slowest run in between."""
        samples = self._samples()
        window = samples[bisect_left(samples, (since,)) : bisect_right(samples, (until, inf))]
        inside = sorted(d for _, d in window)
        if not inside:
            return "fixed work not run"
        usual = sorted(d for _, d in samples)[len(samples) // 2]
        middle = inside[len(inside) // 2]
        return f"fixed work x{middle / usual:.1f} (slowest x{inside[-1] / usual:.1f})"

    def stop(self) -> None:
        try:
            if self._process.stdin is not None:
                self._process.stdin.close()
            self._process.wait(timeout=5)
        finally:
            self._process.kill()  # a no-op once it exited
            self._log.close()
            os.unlink(self._path)


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
    engine = create_engine(Settings(database_url=database_url, redis_url=redis_url))
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
