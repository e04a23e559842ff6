"""The checks of ``tether doctor`` that ask the running system, not the install: pending
and unsafe migrations, live workers per queue, and the configured providers. Each says
what to do when it fails."""

from __future__ import annotations

import asyncio

from alembic.script import ScriptDirectory
from redis.asyncio import Redis

from tether.core import migrations, task_queues
from tether.core.migration_policy import check
from tether.core.settings import Settings
from tether.health.heartbeat import last_beats
from tether.providers.base import ProviderError
from tether.providers.configured import embedding_provider
from tether.runtime.doctor_providers import models
from tether.runtime.preflight import StartupError

WORK_QUEUES = (task_queues.TURNS, task_queues.MEMORIES, task_queues.KNOWLEDGE)
PROVIDER_TIMEOUT_SECONDS = 5.0


def pending_migrations(database_url: str) -> str:
    scripts = ScriptDirectory.from_config(migrations.alembic_config(database_url))
    report = check(scripts, migrations.current(database_url))
    if report.unsafe:
        named = "; ".join(f"{rev}: {why}" for rev, why in report.unsafe.items())
        raise StartupError(
            f"{len(report.pending)} pending, unsafe during a rolling upgrade: {named}",
            "upgrade in the order decision 0062 gives (docs/upgrades.md), "
            "or stop the old release first",
        )
    if report.pending:
        raise StartupError(
            f"schema at {report.current}, code expects {report.head}: "
            f"{', '.join(p.revision for p in report.pending)} pending",
            "run `tether migrate upgrade` (the chart's pre-upgrade Job does it)",
        )
    return f"at head {report.head}, nothing pending"


async def _beats(url: str) -> dict[str, dict[str, object]]:
    client = Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        return await last_beats(client, WORK_QUEUES)
    finally:
        await client.aclose()


def workers(redis_url: str) -> str:
    beats = asyncio.run(_beats(redis_url))
    missing = [queue for queue in WORK_QUEUES if queue not in beats]
    if missing:
        raise StartupError(
            f"no live worker takes the {', '.join(missing)} queue(s)",
            "start `tether worker` (or check the worker Deployment's pods and logs); "
            "TETHER_WORKER__QUEUES names the queues a worker takes",
        )
    hosts = sorted({str(b.get("host")) for b in beats.values()})
    return f"every queue has a live worker ({', '.join(hosts)})"


async def _embed(settings: Settings) -> str:
    provider = embedding_provider(settings)
    try:
        vectors = await asyncio.wait_for(provider.embed(["doctor"]), PROVIDER_TIMEOUT_SECONDS)
    finally:
        await provider.aclose()
    return f"{provider.name}: {len(vectors[0])} dimensions"


def embedding(settings: Settings) -> str:
    if settings.embedding.kind == "offline":
        # Ships with the package; loading it here would only cost the seconds it takes.
        return "offline multilingual model (no endpoint to check)"
    try:
        return asyncio.run(_embed(settings))
    except (ProviderError, TimeoutError) as exc:
        raise StartupError(
            f"the embedding provider failed: {type(exc).__name__}: {exc}",
            "check TETHER_EMBEDDING__BASE_URL, __MODEL and __API_KEY, and that the endpoint "
            "answers from here; recall is lexical-only until it does",
        ) from exc


def llm(settings: Settings) -> str:
    llm = settings.llm
    if not llm.enabled:
        return "not enabled (extraction uses rules only)"
    if not llm.base_url:
        raise StartupError("TETHER_LLM__ENABLED is true but no base URL is set", "set it")
    key = llm.api_key.get_secret_value() if llm.api_key is not None else None
    models(llm.base_url, key, PROVIDER_TIMEOUT_SECONDS, "TETHER_LLM__BASE_URL and __API_KEY")
    return f"{llm.model or 'default model'} at {llm.base_url}: answers"
