"""Traces and metrics: one /v1/context call traced from HTTP through resolve and recall
down to SQL and Redis with no message text in any span; /metrics in the Prometheus text
format without an API key; the task message carrying the trace to the worker."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client.parser import text_string_to_metric_families
from redis import Redis as SyncRedis
from redis.exceptions import TimeoutError as RedisTimeoutError

from tests.conftest import start_worker, stop_worker
from tests.support import app_client, resolve_body, stalled_redis
from tether.core import task_queues
from tether.core.background import drain
from tether.core.redis_client import create_redis
from tether.core.settings import Settings
from tether.core.telemetry import RELATIONSHIP, TENANT, setup_telemetry

pytestmark = pytest.mark.integration

MEMORY = "The user keeps a tortoise named Zanzibarquux"
TURN = "my neighbour Quokkaflapper borrowed the ladder"
QUERY = "what does Zanzibarquux like to eat"
SECRETS = ["Zanzibarquux", "Quokkaflapper", "tortoise", "ladder", "like to eat"]


@pytest.fixture(scope="module")
def exporter(settings: Settings) -> Iterator[InMemorySpanExporter]:
    """Spans of this process, kept in memory (set up before the app's clients exist,
    so its engine and Redis client are instrumented)."""
    spans = InMemorySpanExporter()
    setup_telemetry("tether-api", settings, scrape=True, span_exporter=spans)
    yield spans
    spans.shutdown()  # later test modules must not fill memory with spans


@pytest.fixture(scope="module")
async def traced(
    settings: Settings, exporter: InMemorySpanExporter, client: httpx.AsyncClient
) -> AsyncIterator[httpx.AsyncClient]:
    """The app with telemetry, bound after the shared client (its gauges win)."""
    async with app_client(settings) as http:
        yield http


@pytest.fixture(scope="module")
async def conversation(make_tenant, traced: httpx.AsyncClient) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """A relationship with one memory and one turn in working memory."""
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    resolved = await traced.post("/v1/resolve", json=resolve_body("otel-user"), headers=headers)
    rid = resolved.json()["relationship_id"]
    body = {"memories": [{"content": MEMORY}]}
    created = await traced.post(
        f"/v1/relationships/{rid}/memories/batch", json=body, headers=headers
    )
    assert created.status_code == 200, created.text
    turns = {"turns": [{"session_id": "s-otel", "role": "user", "text": TURN}]}
    accepted = await traced.post(f"/v1/relationships/{rid}/turns", json=turns, headers=headers)
    assert accepted.status_code == 202, accepted.text
    # The writes' background work (a snapshot rebuild 0.2 s later) traces itself: done
    # before a test counts the traces of its request.
    await drain()
    return {"tenant": tenant, "headers": headers, "rid": rid}


def _values(span: ReadableSpan) -> list[str]:
    """Every string a span carries: its name, attributes and event attributes."""
    found = [span.name]
    sources = [span.attributes or {}] + [e.attributes or {} for e in span.events]
    for attributes in sources:
        for value in attributes.values():
            items: Sequence[Any] = value if isinstance(value, (list, tuple)) else [value]
            found += [str(item) for item in items]
    return found


def _leaks(spans: Sequence[ReadableSpan]) -> list[tuple[str, str]]:
    return [
        (span.name, value)
        for span in spans
        for value in _values(span)
        if any(secret.lower() in value.lower() for secret in SECRETS)
    ]


def _by_name(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    matches = [s for s in spans if s.name == name]
    assert matches, f"no span {name!r} in {sorted({s.name for s in spans})}"
    return matches[0]


def _parent_of(spans: Sequence[ReadableSpan], child: ReadableSpan) -> ReadableSpan:
    assert child.parent is not None, child.name
    return next(s for s in spans if s.context.span_id == child.parent.span_id)


async def test_a_context_call_is_traced_from_http_to_sql_and_redis_without_text(
    traced: httpx.AsyncClient, conversation: dict[str, Any], exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    body = resolve_body("otel-user") | {"query": QUERY, "recent_turns": 5}
    response = await traced.post("/v1/context", json=body, headers=conversation["headers"])
    assert response.status_code == 200, response.text
    assert MEMORY in response.text  # the text was there to leak
    assert TURN in response.text
    spans = exporter.get_finished_spans()
    server = _by_name(spans, "POST /v1/context")
    assert server.kind == SpanKind.SERVER
    assert (server.attributes or {})["http.route"] == "/v1/context"
    trace_id = server.context.trace_id
    ours = [s for s in spans if s.context.trace_id == trace_id]
    assert len(ours) == len(spans), "one request, one trace"

    build = _by_name(ours, "context.build")
    assert _parent_of(ours, build) is server
    for step in ("relationship.resolve", "relationship.open", "recall"):
        assert _parent_of(ours, _by_name(ours, step)) is build, step
    recall = _by_name(ours, "recall")
    for step in ("recall.load", "recall.embed", "recall.rank"):
        assert _parent_of(ours, _by_name(ours, step)) is recall, step
    assert (recall.attributes or {})["tether.recall.tier"] in {"local", "hot", "cold"}

    opened = _by_name(ours, "relationship.open").attributes or {}
    assert opened[TENANT] == conversation["tenant"].id
    assert opened[RELATIONSHIP] == conversation["rid"]
    assert (server.attributes or {})[TENANT] == conversation["tenant"].id

    sql = [s for s in ours if (s.attributes or {}).get("db.system") == "postgresql"]
    redis = [s for s in ours if (s.attributes or {}).get("db.system") == "redis"]
    assert sql, "no SQL statement was traced"
    assert redis, "no Redis command was traced"
    assert _leaks(spans) == []


async def test_redis_and_sql_spans_never_carry_values(
    traced: httpx.AsyncClient, conversation: dict[str, Any], exporter: InMemorySpanExporter
) -> None:
    # Writes put the text into Redis (working memory, hot partitions) and Postgres.
    exporter.clear()
    rid, headers = conversation["rid"], conversation["headers"]
    body = {"memories": [{"content": f"{MEMORY} again"}]}
    await traced.post(f"/v1/relationships/{rid}/memories/batch", json=body, headers=headers)
    turns = {"turns": [{"session_id": "s-otel", "role": "user", "text": f"{TURN} twice"}]}
    await traced.post(f"/v1/relationships/{rid}/turns", json=turns, headers=headers)
    await traced.post(f"/v1/relationships/{rid}/search", json={"query": QUERY}, headers=headers)
    spans = exporter.get_finished_spans()
    statements = [
        str(s.attributes["db.statement"])
        for s in spans
        if s.attributes and "db.statement" in s.attributes
    ]
    assert any(st.startswith("INSERT INTO memories") for st in statements), statements
    assert any(st.split()[0] in {"LPUSH", "RPUSH", "EVALSHA", "SET"} for st in statements)
    assert _leaks(spans) == []


def _samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [
        (sample.labels, sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    ]


def _has(text: str, name: str, **labels: str) -> bool:
    return any(labels.items() <= found.items() for found, _ in _samples(text, name))


async def test_metrics_are_scraped_in_prometheus_text_without_an_api_key(
    traced: httpx.AsyncClient, conversation: dict[str, Any]
) -> None:
    headers = conversation["headers"]
    denied = await traced.get("/v1/audit", headers=headers)  # gateway: refused, audited
    assert denied.status_code == 403
    response = await traced.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert _has(text, "tether_ingest_turns_total", outcome="accepted")
    turns_route = "/v1/relationships/{relationship_id}/turns"
    assert _has(text, "tether_http_server_duration_seconds_bucket", http_route=turns_route)
    assert _has(
        text,
        "tether_http_server_duration_seconds_count",
        http_route="/v1/audit",
        http_response_status_code="403",
    )
    assert _has(text, "http_server_duration_milliseconds_count")  # the ASGI instrumentation's
    assert _has(text, "tether_recall_duration_seconds_count", tier="cold")
    assert _has(text, "tether_recall_load_duration_seconds_count", tier="cold")
    assert _has(text, "tether_provider_duration_seconds_count", kind="embedding", outcome="ok")
    assert _has(text, "tether_audit_writes_total", decision="deny", object="audit")
    [(_, ratio)] = _samples(text, "tether_recall_hot_hit_ratio")
    assert 0 <= ratio <= 1
    depths = {labels["queue"]: depth for labels, depth in _samples(text, "tether_queue_depth")}
    assert depths.keys() == set(task_queues.ALL)
    assert depths[task_queues.TURNS] >= 1  # the persist tasks no worker took
    assert _has(text, "target_info", service_name="tether-api")
    assert not any(secret in text for secret in SECRETS)


async def test_reads_skipped_in_a_redis_stall_are_counted(
    traced: httpx.AsyncClient, settings: Settings
) -> None:
    with stalled_redis() as url:
        client = create_redis(settings.model_copy(update={"redis_url": url}), 0.2)
        try:
            for _ in range(3):  # two timeouts in a row, then a read that is not sent
                with pytest.raises(RedisTimeoutError):
                    await client.get("k")
        finally:
            await client.aclose()
    text = (await traced.get("/metrics")).text
    skipped = [
        n
        for labels, n in _samples(text, "tether_redis_reads_skipped_total")
        if labels.get("command") == "GET"
    ]
    assert skipped
    assert skipped[0] >= 1


def _queued(settings: Settings, task: str) -> list[dict[str, Any]]:
    broker = SyncRedis.from_url(settings.require_redis_url())
    messages = [json.loads(raw) for raw in broker.lrange(task_queues.TURNS, 0, -1)]
    return [m for m in messages if m["headers"]["task"] == task]


async def test_the_task_message_carries_the_request_trace_to_the_worker(
    settings: Settings,
    traced: httpx.AsyncClient,
    conversation: dict[str, Any],
    exporter: InMemorySpanExporter,
) -> None:
    exporter.clear()
    rid, headers = conversation["rid"], conversation["headers"]
    before = {m["headers"]["id"] for m in _queued(settings, "turns.persist")}
    turns = {"turns": [{"session_id": "s-trace", "role": "user", "text": "hello there"}]}
    response = await traced.post(f"/v1/relationships/{rid}/turns", json=turns, headers=headers)
    assert response.status_code == 202, response.text
    [message] = [m for m in _queued(settings, "turns.persist") if m["headers"]["id"] not in before]
    _, trace_hex, parent_hex, _ = message["headers"]["traceparent"].split("-")
    spans = exporter.get_finished_spans()
    server = _by_name(spans, "POST /v1/relationships/{relationship_id}/turns")
    publish = _by_name(spans, "apply_async/turns.persist")
    assert publish.kind == SpanKind.PRODUCER
    assert int(trace_hex, 16) == server.context.trace_id
    assert int(parent_hex, 16) == publish.context.span_id  # the worker's span hangs here
    assert _by_name(spans, "ingest.queue").context.span_id == publish.parent.span_id  # type: ignore[union-attr]


class OtlpReceiver(ThreadingHTTPServer):
    """A minimal OTLP/HTTP (protobuf) collector: what a worker process exports."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _OtlpHandler)
        self.spans: list[Any] = []
        self.metric_names: set[str] = set()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _OtlpHandler(BaseHTTPRequestHandler):
    server: OtlpReceiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/traces":
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    self.server.spans.extend(scope.spans)
        elif self.path == "/v1/metrics":
            metrics = ExportMetricsServiceRequest.FromString(body)
            for resource in metrics.resource_metrics:
                for scope in resource.scope_metrics:
                    self.server.metric_names.update(m.name for m in scope.metrics)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        pass


def _wait_for(predicate: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.mark.worker
async def test_the_worker_continues_the_request_trace_and_exports_over_otlp(
    settings: Settings,
    traced: httpx.AsyncClient,
    conversation: dict[str, Any],
    exporter: InMemorySpanExporter,
) -> None:
    receiver = OtlpReceiver()
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_METRIC_EXPORT_INTERVAL": "500",
    }
    worker = start_worker(settings, env)
    try:
        exporter.clear()
        rid, headers = conversation["rid"], conversation["headers"]
        turns = {"turns": [{"session_id": "s-w", "role": "user", "text": f"{TURN} again"}]}
        response = await traced.post(f"/v1/relationships/{rid}/turns", json=turns, headers=headers)
        assert response.status_code == 202, response.text
        publish = _by_name(exporter.get_finished_spans(), "apply_async/turns.persist")
        trace_id = publish.context.trace_id.to_bytes(16, "big")

        def worker_span() -> Any:
            return next(
                (
                    s
                    for s in receiver.spans
                    if s.name == "run/turns.persist" and s.trace_id == trace_id
                ),
                None,
            )

        _wait_for(lambda: worker_span() is not None, 30, "the worker's task span")
        run = worker_span()
        assert run.parent_span_id == publish.context.span_id.to_bytes(8, "big")
        attributes = {a.key: a.value.string_value for a in run.attributes}
        assert attributes[RELATIONSHIP] == rid
        in_task = [s for s in receiver.spans if s.trace_id == trace_id]
        assert any(s.name.startswith("INSERT") for s in in_task), [s.name for s in in_task]
        for span in receiver.spans:
            assert not any(secret in str(span) for secret in SECRETS), span.name
        _wait_for(
            lambda: "tether.ingest.persist.lag" in receiver.metric_names, 30, "worker metrics"
        )
    finally:
        stop_worker(worker)
        receiver.shutdown()
