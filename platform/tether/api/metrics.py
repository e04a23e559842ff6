"""HTTP telemetry: the server span (Litestar's OpenTelemetry plugin) named after the
route template, request latency by route, and ``GET /metrics`` for Prometheus."""

from __future__ import annotations

import re
import time
from typing import Any

import anyio.to_thread
from litestar import Controller, Response, get
from litestar.enums import ScopeType
from litestar.plugins.opentelemetry import OpenTelemetryConfig
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from opentelemetry import trace
from opentelemetry.trace import Span
from prometheus_client import CONTENT_TYPE_LATEST

from tether.core.instruments import record_request
from tether.core.logging import request_id_var
from tether.core.telemetry import annotate, render_metrics

METRICS_PATH = "/metrics"
_PARAM_TYPE = re.compile(r"\{(\w+):\w+\}")  # "{relationship_id:uuid}" -> "{relationship_id}"


def _method_only(scope: Scope) -> tuple[str, dict[str, Any]]:
    # Before routing only the method is known; the path would put ids into span names.
    # route_telemetry renames the span once the route is matched.
    return str(scope.get("method", "HTTP")), {}


def _tag_request(span: Span, _: dict[str, Any]) -> None:
    if span.is_recording():
        span.set_attribute("tether.request.id", request_id_var.get())


def http_tracing() -> OpenTelemetryConfig:
    """Server spans for every request except Prometheus scrapes."""
    return OpenTelemetryConfig(
        scope_span_details_extractor=_method_only,
        server_request_hook_handler=_tag_request,
        exclude=[f"^{METRICS_PATH}$"],
        exclude_spans=["receive", "send"],
    )


def route_of(scope: Scope) -> str:
    template = scope.get("path_template")
    return _PARAM_TYPE.sub(r"{\1}", template) if template else "unmatched"


def _annotate(scope: Scope) -> None:
    annotate(
        tenant_id=getattr(scope.get("user"), "tenant_id", None),
        relationship_id=scope.get("path_params", {}).get("relationship_id"),
    )


def route_telemetry(app: ASGIApp) -> ASGIApp:
    """App middleware (it runs after routing): latency by route template, and the server
    span renamed ``METHOD /route/{param}`` with the caller's tenant and the relationship."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        method, route = scope["method"], route_of(scope)
        server_span = trace.get_current_span()
        server_span.update_name(f"{method} {route}")
        server_span.set_attribute("http.route", route)
        started, status = time.perf_counter(), 500

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                _annotate(scope)  # now: the server span ends with the response body
            await send(message)

        try:
            await app(scope, receive, capture)
        except Exception as exc:  # answered by the app's exception handler, outside us
            status = int(getattr(exc, "status_code", 500))
            _annotate(scope)
            raise
        finally:
            record_request(method, route, status, time.perf_counter() - started)

    return middleware


class MetricsController(Controller):
    tags = ["operations"]  # noqa: RUF012 - Litestar reads it as a class attribute

    @get(METRICS_PATH, operation_id="GetMetrics", exclude_from_auth=True, include_in_schema=False)
    async def metrics(self) -> Response[bytes]:
        """This process's metrics in the Prometheus text format (no authentication)."""
        body = await anyio.to_thread.run_sync(render_metrics)
        return Response(body, media_type=CONTENT_TYPE_LATEST)
