"""Tenant isolation under flood: does one tenant flooding the API at (or far above) its
rate limit slow another tenant's POST /v1/context, and does a flood of bad tokens load
Postgres?

    cd bench && ../.venv/bin/python tenant_flood.py --seconds 10 --rounds 6

Two tenants, each with relationships holding memories. Tenant B (the victim) sends
/v1/context at a steady ``--rate``. Its latency is measured alone (baseline); while
tenant A, limited to ``--limit`` requests/s, sends /v1/context from another process at
exactly its limit; while A floods at ``--flood-rate`` (the excess is answered 429); and
while an outsider floods at that rate with invented tokens of the right shape. The runs
alternate for ``--rounds`` rounds (the machine is shared: alternating makes every
condition sample the same disturbances). Prints each run with the CPU the API processes
used, then every
condition's latencies pooled over the rounds with p95 ratios to the baseline (the target
for the floods: at most 1.2), and the Postgres transactions a bad-token flood alone
caused against the same time idle (pg_stat_database). ``--flood-nice 19`` runs the
flood's client at the lowest priority, so that on a machine the client shares with the
server its own CPU weighs as little as a remote attacker's would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import re
import secrets
import time

import asyncpg
import httpx
from _harness import _API_PIDS, Run, api_server, post, services

from tenancy.access.schemas import ApiKeyCreate
from tenancy.access.services import ApiKeyService, TenantService
from tenancy.access.tokens import generate_token
from tenancy.audit import keys as audit_keys
from tenancy.enums import Role
from tether.core.database import create_engine, create_session_factory, transaction
from tether.core.ids import TenantId
from tether.core.settings import Settings

_LENGTH = re.compile(rb"content-length: (\d+)", re.IGNORECASE)
_TIMING = re.compile(rb"server-timing: app;dur=([0-9.]+)", re.IGNORECASE)
# How often each API process re-reads a tenant's limits in this bench (default 30 s).
SETTINGS_TTL_SECONDS = 2
QUERIES = ["周末去哪儿玩好？", "what does the user like to eat", "上次说的那本书", "weekend plans"]
FACTS = [
    "用户喜欢吃四川火锅",
    "The user plays the cello in a quartet",
    "用户每周六去爬山",
    "The user's sister lives in Lyon",
    "用户在读《三体》",
    "The user is allergic to peanuts",
]


async def _tenant(settings: Settings, name: str) -> tuple[str, str]:
    """A tenant: its admin token and a gateway token."""
    engine = create_engine(settings)
    async with transaction(create_session_factory(engine)) as session:
        tenant = await TenantService(session).create(name, "local")
        tenant_id = TenantId(tenant.tenant_id)
        key = await ApiKeyService(session, tenant_id).issue(ApiKeyCreate(role=Role.GATEWAY))
    await engine.dispose()
    return tenant.admin_token, key.token


def _limit(port: int, admin_token: str, limit: int) -> None:
    """Limit the tenant to ``limit`` requests/s (all its keys together)."""
    headers = {"Authorization": f"Bearer {admin_token}"}
    body = {"tenant_requests_per_second": limit}
    url = f"http://127.0.0.1:{port}/v1/tenant/limits"
    httpx.put(url, json=body, headers=headers, timeout=30).raise_for_status()
    # Every API process re-reads it within TETHER_IDENTITY__TENANT_SETTINGS_TTL_SECONDS.
    time.sleep(SETTINGS_TTL_SECONDS + 1)


def _relationships(port: int, token: str, name: str, count: int, memories: int) -> list[str]:
    headers = {"Authorization": f"Bearer {token}"}
    ids = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60) as http:
        for i in range(count):
            body = {
                "user": {"external_id": f"{name}-u{i}"},
                "persona": {"external_id": "luna", "creator_external_id": f"{name}-studio"},
            }
            rid = http.post("/v1/resolve", json=body).raise_for_status().json()["relationship_id"]
            batch = [{"content": f"{FACTS[j % len(FACTS)]} ({j})"} for j in range(memories)]
            path = f"/v1/relationships/{rid}/memories/batch"
            http.post(path, json={"memories": batch}).raise_for_status()
            ids.append(rid)
    return ids


def _context_requests(token: str, ids: list[str], seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [
        post(
            "/v1/context",
            token,
            json.dumps({"relationship_id": rng.choice(ids), "query": rng.choice(QUERIES)}).encode(),
        )
        for _ in range(2000)
    ]


async def _paced(
    port: int, requests: list[bytes], rate: float, seconds: float, connections: int
) -> Run:
    """``rate`` requests/s spread over ``connections`` keep-alive connections, each on its
    own schedule (open loop: a slow answer does not slow the schedule, only its own
    connection's next send). Latency is measured from the send."""
    run = Run()
    interval = connections / rate
    started = time.perf_counter()

    async def connection(offset: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        k = 0
        try:
            while (
                due := started + offset * interval / connections + k * interval
            ) < started + seconds:
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                request = requests[(offset + k * connections) % len(requests)]
                sent = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                length = _LENGTH.search(head)
                await reader.readexactly(int(length.group(1)) if length else 0)
                run.latencies_ms.append((time.perf_counter() - sent) * 1000)
                if timing := _TIMING.search(head):
                    run.server_ms.append(float(timing.group(1)))
                status = int(head[9:12])
                run.statuses[status] = run.statuses.get(status, 0) + 1
                k += 1
        finally:
            writer.close()

    await asyncio.gather(*(connection(i) for i in range(connections)))
    run.seconds = time.perf_counter() - started
    return run


def paced(port: int, requests: list[bytes], rate: float, seconds: float, connections: int) -> Run:
    return asyncio.run(_paced(port, requests, rate, seconds, connections))


def _flood(
    port: int,
    requests: list[bytes],
    rate: float,
    seconds: float,
    out: multiprocessing.Queue[dict[int, int]],
    niceness: int,
) -> None:
    if niceness:
        # The attacker's own CPU is not ours: on this shared machine, the flood's client
        # yields the cores to the server and the victim (what a remote client does).
        os.nice(niceness)
    started = time.process_time()
    statuses = paced(port, requests, rate, seconds, 16).statuses
    # The flood's own CPU, in milliseconds (status -1): it shares the cores here.
    out.put({**statuses, -1: round((time.process_time() - started) * 1000)})


Flood = tuple[list[bytes], float]  # requests, and how many per second


def measured_with(
    port: int, victim: list[bytes], args: argparse.Namespace, flood: Flood | None
) -> tuple[Run, dict[int, int]]:
    """The victim's run, while ``flood`` (if any) is sent from another process."""
    statuses: dict[int, int] = {}
    process = None
    queue: multiprocessing.Queue[dict[int, int]] = multiprocessing.Queue()
    if flood is not None:
        process = multiprocessing.Process(
            target=_flood, args=(port, *flood, args.seconds + 1, queue, args.flood_nice)
        )
        process.start()
        time.sleep(0.5)  # the flood is running before the measurement starts
    run = paced(port, victim, args.rate, args.seconds, 4)
    if process is not None:
        statuses = queue.get(timeout=args.seconds + 60)
        process.join()
    return run, statuses


async def _transactions(database_url: str) -> int:
    connection = await asyncpg.connect(database_url)
    try:
        value = await connection.fetchval(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database"
            " WHERE datname = current_database()"
        )
    finally:
        await connection.close()
    return int(value)


def transactions_during(database_url: str, work: callable[[], object]) -> int:  # type: ignore[valid-type]
    """Transactions Postgres counted while ``work`` ran (minus the counting's own). Idle
    backends report their counts within 10 s, so each reading waits 11 s first."""
    time.sleep(11)
    before = asyncio.run(_transactions(database_url))
    work()
    time.sleep(11)
    after = asyncio.run(_transactions(database_url))
    return after - before - 1  # the first reading's own transaction


def api_cpu_ms(port: int) -> float:
    """CPU milliseconds the API processes of ``port`` have used (user + system)."""
    total = 0
    for pid in _API_PIDS.get(port, []):
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total * 1000 / os.sysconf("SC_CLK_TCK")


def line(name: str, run: Run, baseline: Run | None, flood: dict[int, int], machine: str) -> str:
    e2e, own = run.latencies_ms, run.server_ms
    ratios = ""
    if baseline is not None:
        e2e_ratio = run.pct(e2e, 0.95) / baseline.pct(baseline.latencies_ms, 0.95)
        own_ratio = run.pct(own, 0.95) / baseline.pct(baseline.server_ms, 0.95)
        ratios = f"  p95 ratio {e2e_ratio:.2f} (server {own_ratio:.2f})"
    answers = {status: n for status, n in sorted(flood.items()) if status >= 0}
    client = f", its client's CPU {flood[-1]} ms" if -1 in flood else ""
    flooded = f"  flood {answers}{client}" if flood else ""
    statuses = f"  status={dict(sorted(run.statuses.items()))}" if run.statuses else ""
    return (
        f"{name:29} n={len(e2e):5d}  e2e p50={run.pct(e2e, 0.5):6.2f} p95={run.pct(e2e, 0.95):6.2f}"
        f"  server p50={run.pct(own, 0.5):6.2f} p95={run.pct(own, 0.95):6.2f} ms"
        f"{statuses}{ratios}{flooded}  ({machine})"
    )


def rounds(
    port: int, victim: list[bytes], floods: dict[str, Flood], args: argparse.Namespace
) -> dict[str, Run]:
    """Baseline and each flood in turn, ``args.rounds`` times: the machine is shared, so
    the conditions alternate and sample the same disturbances. Returns every condition's
    latencies pooled over the rounds."""
    pooled = {name: Run() for name in ["baseline", *floods]}
    for number in range(1, args.rounds + 1):
        baseline = None
        for name, flood in [("baseline", None), *floods.items()]:
            cpu = api_cpu_ms(port)
            run, statuses = measured_with(port, victim, args, flood)
            used = api_cpu_ms(port) - cpu
            print(line(f"{number}: {name}", run, baseline, statuses, f"API CPU {used:.0f} ms"))
            baseline = baseline or run
            pooled[name].latencies_ms += run.latencies_ms
            pooled[name].server_ms += run.server_ms
            pooled[name].seconds += used / 1000  # here: the API's CPU seconds
    return pooled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=float, default=40, help="tenant B's context requests/s")
    parser.add_argument("--limit", type=int, default=20, help="tenant A's requests/s limit")
    parser.add_argument("--flood-rate", type=float, default=400, help="each flood's requests/s")
    parser.add_argument(
        "--flood-nice",
        type=int,
        default=0,
        help="run the flood's client at this niceness (19: as if from another machine)",
    )
    parser.add_argument("--relationships", type=int, default=20)
    parser.add_argument("--memories", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with services() as (database_url, redis_url):
        settings = Settings(database_url=database_url, redis_url=redis_url)
        audit_keys.configure(settings)  # creating a tenant and a key writes audit records
        _, victim_token = asyncio.run(_tenant(settings, "victim"))
        flooder_admin, flooder_token = asyncio.run(_tenant(settings, "flooder"))
        os.environ["TETHER_IDENTITY__TENANT_SETTINGS_TTL_SECONDS"] = str(SETTINGS_TTL_SECONDS)
        with api_server(database_url, redis_url, args.workers, app_role=True) as port:
            victims = _relationships(port, victim_token, "b", args.relationships, args.memories)
            flooders = _relationships(port, flooder_token, "a", 4, args.memories)
            _limit(port, flooder_admin, args.limit)
            victim = _context_requests(victim_token, victims, 1)
            invented = [
                post("/v1/context", generate_token(secrets.token_bytes(32)), b"{}")
                for _ in range(2000)
            ]
            flooder = _context_requests(flooder_token, flooders, 2)
            floods = {
                "tenant A at its limit": (flooder, float(args.limit)),
                "tenant A flooding": (flooder, args.flood_rate),
                "bad tokens flooding": (invented, args.flood_rate),
            }
            paced(port, victim, args.rate, 5, 4)  # warm: hot tier, caches, connections
            paced(port, flooder, args.limit, 3, 4)
            print(
                f"# B: {args.relationships} relationships x {args.memories} memories, "
                f"{args.rate:.0f} context requests/s over 4 connections; A: limit "
                f"{args.limit}/s, sending /v1/context at its limit, then flooding at "
                f"{args.flood_rate:.0f}/s, over 16 connections from another process; the "
                f"bad-token flood likewise (client niceness {args.flood_nice}); "
                f"{args.workers} API processes, "
                f"{args.seconds:.0f} s per run"
            )
            pooled = rounds(port, victim, floods, args)
            base = pooled["baseline"]
            for name, run in pooled.items():
                cpu = run.seconds / (args.rounds * args.seconds)
                print(line(f"all rounds: {name}", run, base, {}, f"API CPU {cpu:.2f} s/s"))
            quiet = transactions_during(database_url, lambda: time.sleep(args.seconds))
            flooded: dict[int, int] = {}

            def bad_tokens() -> None:
                flooded.update(paced(port, invented, args.flood_rate, args.seconds, 16).statuses)

            loud = transactions_during(database_url, bad_tokens)
            statuses = dict(sorted(flooded.items()))
            print(
                f"Postgres transactions in {args.seconds:.0f} s: {quiet} idle, {loud} during "
                f"{sum(flooded.values())} bad-token requests (statuses {statuses})"
            )


if __name__ == "__main__":
    main()
