"""The API document at ``/schema``: what Litestar generates, completed in one place.

Litestar documents errors in its own shape and leaves operations without descriptions.
Here every operation gets a summary (from its operation id), a description (its
handler's docstring, else the table below), and our problem+json error responses with
the status codes its route can really answer, derived from what the route declares:
a policy ⇒ 401/403/429, a write ⇒ 421, path ids ⇒ 404, parameters or a body ⇒ 422, a
body ⇒ 413, anything touching the stores ⇒ 503. Swagger UI is served from assets in
this package, so the document is readable without a CDN."""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, get_args

import msgspec
from litestar import Litestar, Request, Router
from litestar.handlers import HTTPRouteHandler
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, SwaggerRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.routes import HTTPRoute
from litestar.static_files import create_static_files_router

from tether.api.openapi_text import (
    DESCRIPTIONS,
    EXTRA_ERRORS,
    NDJSON,
    REPORTED_ERRORS,
    STREAMED,
)
from tether.api.problems import PROBLEM_MEDIA_TYPE

SCHEMA_PATH = "/schema"
ASSETS_PATH = f"{SCHEMA_PATH}/assets"
ASSETS_DIR = Path(__file__).parent / "swagger_ui"
PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}

_STATUS_TEXT = {
    401: "The API key is missing, malformed, expired or revoked (`unauthenticated`).",
    403: (
        "The key's role may not do this (`forbidden`), "
        "or the operator disabled its tenant (`tenant_disabled`)."
    ),
    404: "No such object, or one out of this key's reach: both answer 404 (`*_not_found`).",
    409: "It conflicts with what is stored (`conflict`, `external_id_taken`, …).",
    412: "The object changed since you read it (`precondition_failed`, `profile_changed`): "
    "read it again and reapply.",
    413: "The body is larger than this deployment accepts (`payload_too_large`).",
    415: "The upload is not a type this operation accepts (`unsupported_document`).",
    421: "The tenant's data lives in another region; this deployment refuses its writes "
    "(`wrong_region`).",
    422: "A field is invalid; `errors` names each one (`invalid_input`).",
    428: "This write needs an `If-Match` header (`if_match_required`).",
    429: "Too many requests (`rate_limited`, `quota_exceeded`): wait `Retry-After` seconds.",
    503: "A store is unavailable (`database_unavailable`, `service_unavailable`): retry "
    "after `Retry-After` seconds; writes with the same idempotency key.",
}
_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before retrying.",
        "schema": {"type": "integer"},
    }
}
_RATE_LIMIT_HEADERS = {
    **_RETRY_AFTER,
    "RateLimit": {
        "description": "The remaining quota of the limit that applied (IETF RateLimit).",
        "schema": {"type": "string"},
    },
    "RateLimit-Policy": {
        "description": "The limit that applied (IETF RateLimit-Policy).",
        "schema": {"type": "string"},
    },
}
_HEADERS = {429: _RATE_LIMIT_HEADERS, 503: _RETRY_AFTER}

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Problem",
    "description": "An RFC 9457 problem: every error this API answers has this shape. "
    "`code` is the stable, machine-readable part.",
    "required": ["type", "title", "status", "detail", "code"],
    "properties": {
        "type": {"type": "string", "description": "A URI naming the problem type."},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "code": {"type": "string", "description": "Stable machine-readable code."},
        "request_id": {"oneOf": [{"type": "string"}, {"type": "null"}]},
        "errors": {
            "type": "array",
            "description": "Validation errors (422): one per invalid field.",
            "items": {"$ref": "#/components/schemas/FieldError"},
        },
    },
    "additionalProperties": True,
}
FIELD_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "FieldError",
    "required": ["field", "message"],
    "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
}
_WRITE_ACTIONS = frozenset({"write", "delete"})
_WORDS = re.compile(r"[A-Z][a-z0-9]*|[A-Z]+(?![a-z])")


def openapi_config(version: str) -> OpenAPIConfig:
    """The document's configuration: JSON at ``/schema/openapi.json``, Swagger UI at
    ``/schema`` and ``/schema/swagger``, both rendering the completed document."""
    local = f"{ASSETS_PATH}/"
    return OpenAPIConfig(
        title="Tether",
        version=version,
        description="Multi-tenant, relationship-scoped long-term memory for AI chat. "
        "Every error is `application/problem+json` (see the `Problem` schema).",
        path=SCHEMA_PATH,
        components=Components(
            security_schemes={
                "ApiKey": SecurityScheme(type="http", scheme="bearer", description="API key")
            }
        ),
        security=[{"ApiKey": []}],
        render_plugins=[
            _CompletedSwagger(
                path=["/", "/swagger"],
                js_url=f"{local}swagger-ui-bundle.js",
                css_url=f"{local}swagger-ui.css",
                standalone_preset_js_url=f"{local}swagger-ui-standalone-preset.js",
                favicon=f"<link rel='icon' type='image/png' href='{local}favicon-32x32.png'>",
            ),
            _CompletedJson(),
        ],
    )


def assets_router() -> Router:
    """Swagger UI's script, styles and icon, vendored (``swagger-ui-dist``)."""
    return create_static_files_router(path=ASSETS_PATH, directories=[ASSETS_DIR], name="assets")


def document(app: Litestar) -> dict[str, Any]:
    """The completed API document of ``app`` (computed once per app)."""
    cached: dict[str, Any] | None = getattr(app.state, "_openapi_document", None)
    if cached is None:
        cached = complete(app.openapi_schema.to_schema(), handlers_by_operation(app))
        app.state._openapi_document = cached
    return cached


class _CompletedJson(JsonRenderPlugin):
    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return super().render(request, document(request.app))


class _CompletedSwagger(SwaggerRenderPlugin):
    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return super().render(request, document(request.app))


def handlers_by_operation(app: Litestar) -> dict[str, HTTPRouteHandler]:
    found: dict[str, HTTPRouteHandler] = {}
    for route in app.routes:
        if isinstance(route, HTTPRoute):
            for handler in route.route_handlers:
                if isinstance(handler.operation_id, str):
                    found[handler.operation_id] = handler
    return found


def complete(base: dict[str, Any], handlers: dict[str, HTTPRouteHandler]) -> dict[str, Any]:
    """A copy of ``base`` with summaries, descriptions and problem responses."""
    doc = copy.deepcopy(base)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    restore_zero_minimums(schemas, handlers.values())
    schemas["Problem"] = PROBLEM_SCHEMA
    schemas["FieldError"] = FIELD_ERROR_SCHEMA
    for item in doc.get("paths", {}).values():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                handler = handlers.get(operation.get("operationId", ""))
                _complete_operation(operation, handler)
    return doc


def restore_zero_minimums(schemas: dict[str, Any], handlers: Iterable[HTTPRouteHandler]) -> None:
    """Put back the ``minimum: 0`` Litestar drops from optional numbers of request
    bodies (it tests the bound for truth), taking the bounds from msgspec's own schema."""
    bodies = set()
    for handler in handlers:
        data = handler.parsed_fn_signature.parameters.get("data")
        if data is not None:
            bodies |= {t for t in get_args(data.annotation) or (data.annotation,) if _struct(t)}
    _, components = msgspec.json.schema_components(sorted(bodies, key=str))
    for name, exact in components.items():
        ours = schemas.get(name, {}).get("properties", {})
        for field, spec in exact.get("properties", {}).items():
            for branch in spec.get("anyOf", []):
                if branch.get("minimum") == 0 and field in ours:
                    ours[field].setdefault("minimum", 0)


def _struct(annotation: object) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, msgspec.Struct)


def _complete_operation(operation: dict[str, Any], handler: HTTPRouteHandler | None) -> None:
    op_id = operation.get("operationId", "")
    operation["summary"] = summary(op_id)
    text = DESCRIPTIONS.get(op_id) or _docstring(handler)
    if text:
        operation["description"] = text
    responses: dict[str, Any] = operation.setdefault("responses", {})
    responses.pop("400", None)  # Litestar's shape; our validation errors are 422
    if op_id in STREAMED:
        line = {"type": "string", "description": "JSON lines: one JSON object per line."}
        responses["200"]["content"] = {NDJSON: {"schema": line}}
    for status in sorted(error_statuses(operation, handler)):
        responses[str(status)] = _problem_response(status)
    if op_id in REPORTED_ERRORS:
        status, text = REPORTED_ERRORS[op_id]
        responses[str(status)] = {**responses.get("200", {}), "description": text}


def summary(operation_id: str) -> str:
    """``CreateMemory`` → ``Create memory``; ``ListApiKeys`` → ``List API keys``."""
    words = [w.lower() for w in _WORDS.findall(operation_id)]
    text = " ".join(words).replace("api ", "API ")
    return text[:1].upper() + text[1:]


def _docstring(handler: HTTPRouteHandler | None) -> str | None:
    doc = handler.fn.__doc__ if handler is not None else None
    return inspect.cleandoc(doc) if doc else None


def error_statuses(operation: dict[str, Any], handler: HTTPRouteHandler | None) -> set[int]:
    """The error statuses this operation can answer, from what its route declares."""
    declared = handler.opt.get("policy") if handler is not None else None
    statuses: set[int] = set()
    if declared is not None:
        statuses |= {401, 403, 429, 503}
        if declared[1] in _WRITE_ACTIONS:
            statuses.add(421)
    parameters = operation.get("parameters", [])
    if any(p.get("in") == "path" for p in parameters):
        statuses.add(404)
    if parameters or "requestBody" in operation:
        statuses.add(422)
    if "requestBody" in operation:
        statuses.add(413)
    statuses |= set(EXTRA_ERRORS.get(operation.get("operationId", ""), ()))
    return statuses


def _problem_response(status: int) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": _STATUS_TEXT.get(status, "An error (see `code`)."),
        "content": {PROBLEM_MEDIA_TYPE: {"schema": PROBLEM_REF}},
    }
    if status in _HEADERS:
        response["headers"] = _HEADERS[status]
    return response
