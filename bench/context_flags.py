"""What the session flags cost /v1/context: the same requests with both flags given (no
lookup, as before decision 0051) and with both omitted (one statement reads the
session's, persona's and tenant's flags), in alternating rounds on one server.

    cd bench && ../.venv/bin/python context_flags.py --rounds 4 --seconds 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
from pathlib import Path

from _harness import load, post, seed, served, services
from ingest import relationship_ids

from tether.core.settings import Settings


def _requests(token: str, rids: list[str], flags: dict[str, object]) -> list[bytes]:
    return [
        post(
            "/v1/context",
            token,
            json.dumps({"relationship_id": rid, "query": "green tea 绿茶", **flags}).encode(),
        )
        for rid in rids
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--relationships", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    with services() as (database_url, redis_url), tempfile.TemporaryDirectory() as data:
        token = asyncio.run(seed(database_url, redis_url, args.relationships, 10))
        settings = Settings(database_url=database_url, redis_url=redis_url)
        rids = asyncio.run(relationship_ids(settings, args.relationships))
        variants = {
            "flags given": _requests(
                token, rids, {"memory_enabled": True, "knowledge_enabled": False}
            ),
            "flags omitted": _requests(token, rids, {}),
            "flags omitted + session_id": _requests(token, rids, {"session_id": "s-1"}),
        }
        with served(database_url, redis_url, Path(data)) as (port, _):
            for requests in variants.values():
                load(port, requests, 1)  # warm the hot tier and the caches
            p50: dict[str, list[float]] = {name: [] for name in variants}
            p95: dict[str, list[float]] = {name: [] for name in variants}
            for round_ in range(args.rounds):
                names = list(variants) if round_ % 2 == 0 else list(reversed(variants))
                for name in names:
                    run = load(port, variants[name], 1, args.seconds)
                    print(run.summary(f"round {round_} {name}"), flush=True)
                    p50[name].append(run.pct(run.server_ms, 0.5))
                    p95[name].append(run.pct(run.server_ms, 0.95))
    print("| variant | server p50 ms | server p95 ms |\n| --- | --- | --- |")
    for name in variants:
        print(
            f"| {name} | {statistics.median(p50[name]):.2f} | {statistics.median(p95[name]):.2f} |"
        )


if __name__ == "__main__":
    main()
