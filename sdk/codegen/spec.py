"""What both code generators read from the API document, in one shape."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

METHODS = ("get", "post", "put", "patch", "delete")
NDJSON = "application/x-ndjson"
MULTIPART = "multipart/form-data"


@dataclass
class Param:
    name: str  # as the API names it
    location: str  # path | query | header
    schema: dict[str, Any]
    required: bool

    @property
    def py_name(self) -> str:
        return re.sub(r"[^0-9a-zA-Z]+", "_", self.name).lower()


@dataclass
class Operation:
    op_id: str
    method: str
    path: str
    resource: str
    name: str
    summary: str
    description: str
    params: list[Param]
    body_ref: str | None  # component name of a JSON body
    body_kind: str  # none | json | multipart
    response: dict[str, Any] | None  # schema of the success response, None when empty
    response_kind: str  # json | empty | ndjson
    paginated: bool
    idempotency: str | None
    safe: bool
    multipart_fields: list[str] = field(default_factory=list)

    @property
    def retry_mode(self) -> str:
        """``all``: retry on any failure; ``unsent``: only when nothing reached the server."""
        if self.method in ("get", "put", "delete") or self.safe or self.idempotency:
            return "all"
        return "unsent"


def ref_name(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def operations(doc: dict[str, Any], names: dict[str, dict[str, Any]]) -> list[Operation]:
    found = []
    for path, item in doc["paths"].items():
        for method in METHODS:
            if method in item:
                found.append(_operation(doc, path, method, item[method], names))
    return sorted(found, key=lambda o: (o.resource, o.name))


def _operation(
    doc: dict[str, Any], path: str, method: str, op: dict[str, Any], names: dict[str, Any]
) -> Operation:
    op_id = op["operationId"]
    if op_id not in names:
        raise SystemExit(f"{op_id} is served but has no name in sdk/operations.json")
    resource, name = names[op_id]["name"].split(".")
    params = [
        Param(p["name"], p["in"], p.get("schema", {}), bool(p.get("required")))
        for p in op.get("parameters", [])
    ]
    body = op.get("requestBody", {}).get("content", {})
    body_kind, body_ref, multipart_fields = "none", None, []
    if "application/json" in body:
        body_kind, body_ref = "json", ref_name(body["application/json"]["schema"])
    elif MULTIPART in body:
        body_kind = "multipart"
        schema = _resolve(doc, body[MULTIPART]["schema"])
        multipart_fields = list(schema.get("properties", {}))
    response, response_kind = _success(op)
    return Operation(
        op_id=op_id,
        method=method,
        path=path,
        resource=resource,
        name=name,
        summary=op.get("summary", ""),
        description=op.get("description", ""),
        params=params,
        body_ref=body_ref,
        body_kind=body_kind,
        response=response,
        response_kind=response_kind,
        paginated=_paginated(doc, params, response),
        idempotency=names[op_id].get("idempotency"),
        safe=bool(names[op_id].get("safe")),
        multipart_fields=multipart_fields,
    )


def _success(op: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    for status, response in sorted(op["responses"].items()):
        if status.startswith("2"):
            content = response.get("content") or {}
            if NDJSON in content:
                return None, "ndjson"
            if "application/json" in content:
                return content["application/json"]["schema"], "json"
            return None, "empty"
    return None, "empty"


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    name = ref_name(schema)
    return doc["components"]["schemas"][name] if name else schema


def _paginated(doc: dict[str, Any], params: list[Param], response: dict[str, Any] | None) -> bool:
    if response is None or not any(p.name == "cursor" for p in params):
        return False
    props = _resolve(doc, response).get("properties", {})
    return "items" in props and "next_cursor" in props


def page_item_ref(doc: dict[str, Any], response: dict[str, Any]) -> str:
    items = _resolve(doc, response)["properties"]["items"]["items"]
    name = ref_name(items)
    if not name:
        raise SystemExit("a page's items must be a component schema")
    return name


def non_null(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The schema without its ``null`` alternative, and whether it had one. Constraints
    Litestar puts beside the ``oneOf`` move onto the non-null alternative."""
    variants = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(schema.get("type"), list):
        kinds = [t for t in schema["type"] if t != "null"]
        return {**schema, "type": kinds[0] if len(kinds) == 1 else kinds}, "null" in schema["type"]
    if not variants:
        return schema, False
    rest = [v for v in variants if v.get("type") != "null"]
    nullable = len(rest) < len(variants)
    if len(rest) != 1:
        return {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf")} | {
            "oneOf": rest
        }, nullable
    outer = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf")}
    return {**rest[0], **outer}, nullable


def request_components(doc: dict[str, Any]) -> set[str]:
    """Components reachable from a request body: their constraints are checked before
    sending. Response-only components stay lenient (a new enum value must not break)."""
    seen: set[str] = set()
    stack = []
    for item in doc["paths"].values():
        for method in METHODS:
            body = item.get(method, {}).get("requestBody", {}).get("content", {})
            stack += [c["schema"] for c in body.values()]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            name = ref_name(node)
            if name and name not in seen:
                seen.add(name)
                stack.append(doc["components"]["schemas"][name])
            stack += list(node.values())
        elif isinstance(node, list):
            stack += node
    return seen


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)
