"""The metrics Tether records (names and labels are listed in docs/observability.md).

Instruments come from the global meter: until the process installs a meter provider
(``tether.core.telemetry.setup_telemetry``) they record nothing. Labels are small closed
sets (tier, outcome, route template): never tenant or relationship ids, which belong
on spans.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Histogram, Observation
from redis import Redis as SyncRedis
from redis.exceptions import RedisError

from tether.core import task_queues
from tether.core.telemetry import span

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]
LAG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0]

meter = metrics.get_meter("tether")


def _seconds(name: str, description: str, buckets: Sequence[float] = LATENCY_BUCKETS) -> Histogram:
    return meter.create_histogram(
        name, unit="s", description=description, explicit_bucket_boundaries_advisory=buckets
    )


HTTP_DURATION = _seconds(
    "tether.http.server.duration", "HTTP request latency by route template and status"
)
RECALL_DURATION = _seconds("tether.recall.duration", "Recall latency by partition tier")
RECALL_LOAD_DURATION = _seconds(
    "tether.recall.load.duration", "Partition load latency by tier (local, hot, cold)"
)
PERSIST_LAG = _seconds(
    "tether.ingest.persist.lag",
    "Time from a turn's acceptance (202) to its insert by the worker",
    LAG_BUCKETS,
)
PROVIDER_DURATION = _seconds(
    "tether.provider.duration", "Embedding / LLM provider call latency by outcome"
)
REDIS_READS_SKIPPED = meter.create_counter(
    "tether.redis.reads.skipped",
    unit="{read}",
    description="Optional Redis reads not sent during a stall pause, by command",
)
INGEST_TURNS = meter.create_counter(
    "tether.ingest.turns",
    unit="{turn}",
    description="Turns by outcome: accepted, duplicate, dropped",
)
INGEST_DEGRADED = meter.create_counter(
    "tether.ingest.degraded",
    unit="{batch}",
    description="Turn batches accepted degraded, by reason",
)
CONSOLIDATIONS = meter.create_counter(
    "tether.memory.consolidations", unit="{candidate}", description="Consolidation outcomes"
)
LLM_EXTRACTION_SKIPPED = meter.create_counter(
    "tether.extraction.llm_skipped",
    unit="{session}",
    description="Sessions extracted by the rules only although an LLM is configured, by "
    "reason: tenant_off, daily_budget, budget_unchecked",
)
PROVIDER_ERRORS = meter.create_counter(
    "tether.provider.errors", unit="{call}", description="Failed provider calls by error type"
)
AUDIT_WRITES = meter.create_counter(
    "tether.audit.writes", unit="{event}", description="Audit events appended, by decision"
)
LIMITS_REFUSED = meter.create_counter(
    "tether.limits.refused", unit="{request}", description="Requests answered 429, by limit"
)
LIMITS_UNCHECKED = meter.create_counter(
    "tether.limits.unchecked",
    unit="{check}",
    description="Limit checks skipped because Redis was away (the request was served)",
)
AUTH_FAILURES = meter.create_counter(
    "tether.auth.failures",
    unit="{request}",
    description="Failed authentications by reason (malformed, forged, unknown, throttled)",
)


def record_request(method: str, route: str, status: int, seconds: float) -> None:
    attributes: dict[str, str | int] = {
        "http.request.method": method,
        "http.route": route,
        "http.response.status_code": status,
    }
    HTTP_DURATION.record(seconds, attributes)


def record_recall(tier: str, timings_ms: Mapping[str, float]) -> None:
    """Recall and partition-load latency of one recall, labelled with its tier."""
    if "recall" in timings_ms:
        RECALL_DURATION.record(timings_ms["recall"] / 1000, {"tier": tier})
    if "load" in timings_ms:
        RECALL_LOAD_DURATION.record(timings_ms["load"] / 1000, {"tier": tier})


def count_ingest(outcomes: Iterable[str], degraded: Sequence[str]) -> None:
    """One batch's turns by outcome, and why it was degraded (if it was)."""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
    for outcome, count in counts.items():
        INGEST_TURNS.add(count, {"outcome": outcome})
    for reason in degraded:
        INGEST_DEGRADED.add(1, {"reason": reason})


def record_persist_lag(turn_ids: Sequence[uuid.UUID], now: float | None = None) -> None:
    """Accepted-to-durable time of a batch: turn ids are UUIDv7, stamped at acceptance."""
    if not turn_ids:
        return
    accepted = min(i.int >> 80 for i in turn_ids) / 1000  # the 48-bit millisecond field
    PERSIST_LAG.record(max((now or time.time()) - accepted, 0.0))


def provider_call(
    kind: str, provider: str
) -> Callable[[Callable[P, Coroutine[Any, Any, T]]], Callable[P, Coroutine[Any, Any, T]]]:
    """Time an async provider call (``kind``: embedding | llm) and count its failures.

    The span and the metrics carry the provider and the outcome, never the inputs."""
    labels = {"kind": kind, "provider": provider}

    def decorate(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Coroutine[Any, Any, T]]:
        @functools.wraps(fn)
        async def run(*args: P.args, **kwargs: P.kwargs) -> T:
            started = time.perf_counter()
            outcome = "error"
            try:
                with span(f"{kind} {provider}", labels):
                    result = await fn(*args, **kwargs)
                outcome = "ok"
                return result
            except asyncio.CancelledError:
                outcome = "cancelled"  # the caller's deadline passed (recall degrades)
                raise
            except Exception as exc:
                PROVIDER_ERRORS.add(1, {**labels, "error.type": type(exc).__qualname__})
                raise
            finally:
                elapsed = time.perf_counter() - started
                PROVIDER_DURATION.record(elapsed, {**labels, "outcome": outcome})

        return run

    return decorate


# -- gauges, observed when metrics are collected --------------------------------------


@dataclass(slots=True)
class _Sources:
    hit_rate: Callable[[], float | None] | None = None
    broker: SyncRedis | None = None
    broker_url: str | None = None


_sources = _Sources()


def watch(hit_rate: Callable[[], float | None], broker_url: str) -> None:
    """Feed the hot-tier hit-rate and queue-depth gauges (the API; the latest call wins)."""
    _sources.hit_rate = hit_rate
    if broker_url == _sources.broker_url:
        return
    previous = _sources.broker
    try:
        _sources.broker = SyncRedis.from_url(
            broker_url, socket_timeout=0.5, socket_connect_timeout=0.5
        )
    except ValueError:
        log.warning("queue depth not measured: unsupported broker URL scheme")
        _sources.broker = None
    _sources.broker_url = broker_url
    if previous is not None:
        previous.close()


def _observe_hit_rate(_: CallbackOptions) -> Iterable[Observation]:
    rate = _sources.hit_rate() if _sources.hit_rate is not None else None
    return [] if rate is None else [Observation(rate)]


def _observe_queue_depth(_: CallbackOptions) -> Iterable[Observation]:
    # A blocking LLEN with a 0.5 s timeout: collection runs off the event loop.
    if _sources.broker is None:
        return []
    try:
        depths = [int(_sources.broker.llen(queue)) for queue in task_queues.ALL]
    except RedisError as exc:
        log.warning("queue depth unavailable: %s", type(exc).__name__)
        return []
    return [Observation(d, {"queue": q}) for q, d in zip(task_queues.ALL, depths, strict=True)]


HOT_HIT_RATIO = meter.create_observable_gauge(
    "tether.recall.hot_hit_ratio",
    [_observe_hit_rate],
    unit="1",
    description="Share of partition loads served by this process or Redis (not Postgres)",
)
QUEUE_DEPTH = meter.create_observable_gauge(
    "tether.queue.depth",
    [_observe_queue_depth],
    unit="{task}",
    description="Tasks waiting in each broker queue (LLEN)",
)
