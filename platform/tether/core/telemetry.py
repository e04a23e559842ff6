"""OpenTelemetry for every Tether process: traces of HTTP requests, SQL statements, Redis
commands, Celery tasks and our own steps; metrics for a Prometheus scrape (the API's
``/metrics``) and for OTLP.

Configured only by the standard ``OTEL_*`` variables, which the SDK reads itself: an
OTLP/HTTP exporter when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or the per-signal endpoint) is
set, nothing exported otherwise; ``OTEL_SERVICE_NAME`` overrides the default name;
``OTEL_SDK_DISABLED=true`` turns everything off. Without a trace exporter no tracer
provider is installed and nothing is instrumented, so tracing costs nothing.

Span attributes carry ids (tenant, relationship), never message text: SQL spans hold
statements with placeholders, Redis spans hold the command name with ``?`` for every
argument, and our helpers never record exception messages.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from opentelemetry import metrics, propagate, trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from tether.core.settings import Settings

if TYPE_CHECKING:  # the SDK is imported when a process sets telemetry up, not before
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from prometheus_client import CollectorRegistry

log = logging.getLogger(__name__)

TENANT = "tether.tenant.id"
RELATIONSHIP = "tether.relationship.id"

P = ParamSpec("P")
R = TypeVar("R")

tracer = trace.get_tracer("tether")
_db_connections = metrics.get_meter("tether.db").create_up_down_counter(
    "db.client.connections.usage", unit="{connection}", description="Pool connections by state"
)


@dataclass(slots=True)
class Telemetry:
    """What ``setup_telemetry`` installed in this process."""

    service_name: str
    resource: Resource
    registry: CollectorRegistry
    tracer_provider: TracerProvider | None = None
    meter_provider: MeterProvider | None = None


_state: Telemetry | None = None
_lock = threading.Lock()


def _env(name: str) -> str:
    # The SDK reads OTEL_* itself; we only look to decide whether an exporter exists.
    return os.environ.get(name, "").strip()


def _disabled() -> bool:
    return _env("OTEL_SDK_DISABLED").lower() == "true"


def _otlp(signal: str) -> bool:
    """Whether OTLP export of ``signal`` (TRACES, METRICS) is configured."""
    exporters = {e.strip() for e in (_env(f"OTEL_{signal}_EXPORTER") or "otlp").split(",")}
    endpoint = _env("OTEL_EXPORTER_OTLP_ENDPOINT") or _env(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
    return "otlp" in exporters and bool(endpoint)


def _warn_protocol() -> None:
    protocol = _env("OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol and protocol != "http/protobuf":
        log.warning("OTLP over %s is not installed; exporting over http/protobuf", protocol)


def _resource(default_name: str, settings: Settings) -> Resource:
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    instance = f"{socket.gethostname()}-{os.getpid()}"
    resource = Resource.create({"cloud.region": settings.region, "service.instance.id": instance})
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: default_name}))
    return resource


def _install_tracing(state: Telemetry) -> TracerProvider:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # The sampler comes from OTEL_TRACES_SAMPLER(_ARG); parent-based always-on by default.
    provider = TracerProvider(resource=state.resource)
    if _otlp("TRACES"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    state.tracer_provider = provider
    return provider


def _install_metrics(state: Telemetry, scrape: bool) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from prometheus_client import ProcessCollector

    readers: list[MetricReader] = []
    if scrape:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader

        ProcessCollector(registry=state.registry)
        readers.append(PrometheusMetricReader(registry=state.registry))
    if _otlp("METRICS"):
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    if readers:
        state.meter_provider = MeterProvider(metric_readers=readers, resource=state.resource)
        metrics.set_meter_provider(state.meter_provider)


def setup_telemetry(
    service_name: str,
    settings: Settings,
    *,
    scrape: bool = False,
    celery: bool = False,
    span_exporter: SpanExporter | None = None,
) -> Telemetry:
    """Install tracing and metrics for this process once; later calls return the same.

    Args:
        service_name: the default ``service.name`` (``OTEL_SERVICE_NAME`` wins).
        settings: the process settings (its region labels every span and metric).
        scrape: keep a Prometheus registry for ``/metrics`` (the API).
        celery: trace Celery tasks (the worker; publishing is traced by TaskQueue).
        span_exporter: an extra exporter, synchronous (tests use an in-memory one).
    """
    global _state
    with _lock:
        if _state is None:
            from prometheus_client import CollectorRegistry

            resource = _resource(service_name, settings)
            _state = Telemetry(service_name, resource, CollectorRegistry())
            if not _disabled():
                _warn_protocol()
                if _otlp("TRACES"):
                    _install_tracing(_state)
                _install_metrics(_state, scrape)
                if celery and (_state.tracer_provider or _state.meter_provider):
                    from opentelemetry.instrumentation.celery import CeleryInstrumentor

                    CeleryInstrumentor().instrument()  # type: ignore[no-untyped-call]
        if span_exporter is not None and not _disabled():
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor

            provider = _state.tracer_provider or _install_tracing(_state)
            provider.add_span_processor(SimpleSpanProcessor(span_exporter))
        return _state


def shutdown_telemetry() -> None:
    """Flush what is buffered (a worker child exits without running atexit hooks)."""
    if _state is not None and _state.tracer_provider is not None:
        _state.tracer_provider.force_flush()
    if _state is not None and _state.meter_provider is not None:
        _state.meter_provider.force_flush()


def tracing_enabled() -> bool:
    return _state is not None and _state.tracer_provider is not None


def render_metrics() -> bytes:
    """This process's metrics in the Prometheus text format (runs gauge callbacks, which
    may block briefly: call it off the event loop)."""
    from prometheus_client import generate_latest

    return b"" if _state is None else generate_latest(_state.registry)


# -- instrumenting our clients --------------------------------------------------------


def instrument_engine(sync_engine: Any) -> None:
    """Trace this engine's statements (text with placeholders, never parameters)."""
    if not tracing_enabled():
        return
    from opentelemetry.instrumentation.sqlalchemy.engine import EngineTracer

    sql_tracer = trace.get_tracer("opentelemetry.instrumentation.sqlalchemy")
    EngineTracer(sql_tracer, sync_engine, _db_connections)  # type: ignore[no-untyped-call]


def instrument_redis(client: Any) -> None:
    """Trace this client's commands (the command name; every argument is ``?``).

    Only our own clients: kombu's broker polling and the heartbeat stay untraced."""
    if not tracing_enabled():
        return
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    RedisInstrumentor.instrument_client(client)


# -- our own spans --------------------------------------------------------------------


@contextmanager
def span(
    name: str,
    attributes: Mapping[str, str | bool | int | float] | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
) -> Iterator[Span]:
    """A child span of the current one. A failure sets ``error.type`` and the status,
    never the exception's message (it may quote user text), and is re-raised as is."""
    if not tracing_enabled():
        yield trace.INVALID_SPAN
        return
    with tracer.start_as_current_span(
        name, kind=kind, attributes=attributes, record_exception=False,
        set_status_on_exception=False,
    ) as current:  # fmt: skip
        try:
            yield current
        except BaseException as exc:
            current.set_attribute("error.type", type(exc).__qualname__)
            current.set_status(StatusCode.ERROR, type(exc).__qualname__)
            raise


def traced(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a function (sync or async) to run inside ``span(name)``."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                with span(name):
                    return await fn(*args, **kwargs)

            return cast(Callable[P, R], run_async)

        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            with span(name):
                return fn(*args, **kwargs)

        return run

    return decorate


def annotate(
    *,
    tenant_id: object | None = None,
    relationship_id: object | None = None,
    attributes: Mapping[str, str | bool | int | float] | None = None,
) -> None:
    """Add ids (and other non-content attributes) to the current span."""
    current = trace.get_current_span()
    if not current.is_recording():
        return
    if tenant_id is not None:
        current.set_attribute(TENANT, str(tenant_id))
    if relationship_id is not None:
        current.set_attribute(RELATIONSHIP, str(relationship_id))
    if attributes:
        current.set_attributes(attributes)


@contextmanager
def publishing(task_name: str) -> Iterator[dict[str, str]]:
    """A producer span around sending a task; yields the message headers that carry its
    context to the worker (``traceparent``), which continues the same trace."""
    headers: dict[str, str] = {}
    attributes = {"messaging.system": "celery", "celery.task_name": task_name}
    with span(f"apply_async/{task_name}", attributes, SpanKind.PRODUCER):
        propagate.inject(headers)
        yield headers
