"""What reading the tenant's settings adds to each POST /v1/context: one hit in the
process's settings cache (no query) and picking the section caps, measured in-process
for a tenant with defaults and one with every context setting given.

    cd bench && ../.venv/bin/python tenant_settings.py --calls 200000
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from typing import Any

from tenancy.settings.cache import TenantSettingsCache, _Entry
from tenancy.settings.schemas import parse_document
from tether.context.services import section_caps
from tether.core.ids import TenantId
from tether.core.settings import ContextSettings

CUSTOM = {
    "context": {
        "default_max_tokens": 1200,
        "section_tokens": {"memory": 500, "recent": 300, "knowledge": 600},
    },
    "knowledge": {"query_timeout_ms": 400},
}


async def _per_call(document: dict[str, Any], calls: int) -> float:
    """Microseconds per request of the added work, the cache already warm."""
    cache = TenantSettingsCache(None, ttl=3600)  # type: ignore[arg-type]  # never reads
    tenant = TenantId(uuid.uuid4())
    cache._entries[tenant] = _Entry(parse_document(document), time.monotonic() + 3600)
    budgets = ContextSettings()
    started = time.perf_counter()
    for _ in range(calls):
        settings = await cache.get(tenant)
        section_caps(budgets, settings.context)
        _ = settings.context.default_max_tokens or budgets.default_max_tokens
        _ = settings.knowledge.query_timeout_ms or 700
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200_000)
    args = parser.parse_args()
    for name, document in (("defaults", {}), ("custom", CUSTOM)):
        best = min(asyncio.run(_per_call(document, args.calls)) for _ in range(3))
        print(f"{name}: {best:.2f} µs per /v1/context request")


if __name__ == "__main__":
    main()
