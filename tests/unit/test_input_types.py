"""Every request string, list and number is bounded by the shared constrained types
(tether.core.text): proven on the OpenAPI document, so a new field or parameter that
skips them fails here, and on the types themselves."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Any

import msgspec
import pytest

from tether.api.openapi import document
from tether.app import create_app
from tether.core.settings import Settings
from tether.core.text import CONTENT, DISPLAY_NAME, IDENTIFIER, SHORT_TEXT, Identifier, items

# Strings with these formats are parsed into other types before any code sees them.
_PARSED_FORMATS = {"uuid", "date-time", "binary"}


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    settings = Settings(_env_file=None, database_url="postgresql+asyncpg://u@localhost/unused")  # type: ignore[call-arg]
    return document(create_app(settings))  # the document /schema serves


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _leaves(
    doc: dict[str, Any], schema: dict[str, Any], where: str, seen: frozenset[str] = frozenset()
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every (path, schema) below ``schema`` that constrains one value."""
    ref = schema.get("$ref")
    if ref in seen:
        return
    seen = seen | {ref} if ref else seen
    schema = _resolve(doc, schema)
    for key in ("oneOf", "anyOf", "allOf"):
        for option in schema.get(key, []):
            # A union of a constrained type with null keeps its bounds beside "oneOf".
            merged = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf", "allOf")}
            yield from _leaves(doc, {**merged, **option}, where, seen)
    if any(key in schema for key in ("oneOf", "anyOf", "allOf")):
        return
    kind = schema.get("type")
    if kind == "object":
        for name, prop in schema.get("properties", {}).items():
            yield from _leaves(doc, prop, f"{where}.{name}", seen)
        yield where, schema
    elif kind == "array":
        yield from _leaves(doc, schema.get("items", {}), f"{where}[]", seen)
        yield where, schema
    else:
        yield where, schema


def _request_inputs(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for route, item in doc["paths"].items():
        for method, operation in item.items():
            label = f"{method.upper()} {route}"
            for parameter in operation.get("parameters", []):
                where = f"{label} {parameter['in']} {parameter['name']}"
                yield from _leaves(doc, parameter["schema"], where)
            for media, body in operation.get("requestBody", {}).get("content", {}).items():
                yield from _leaves(doc, body["schema"], f"{label} body({media})")


def _problem(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    if kind == "string" and "enum" not in schema and schema.get("format") not in _PARSED_FORMATS:
        pattern = schema.get("pattern")
        if "maxLength" not in schema:
            return "a string without maxLength"
        if pattern is None or re.search(pattern, "a\x00b"):
            return "a string whose pattern lets NUL through"
    if kind == "array" and "maxItems" not in schema:
        return "a list without maxItems"
    if kind == "integer" and ("minimum" not in schema or "maximum" not in schema):
        return "an integer without minimum and maximum"
    # Litestar leaves out a minimum of 0 on an optional number: only the maximum is sure.
    if kind == "number" and "maximum" not in schema:
        return "a number without maximum"
    if kind == "object" and "properties" not in schema:
        return "a free-form object"
    if not kind and "enum" not in schema and "const" not in schema:
        return "a value of any type"
    return None


def test_every_request_string_list_and_number_is_bounded(openapi: dict[str, Any]) -> None:
    problems = [
        f"{where}: {problem}"
        for where, schema in _request_inputs(openapi)
        if (problem := _problem(schema))
    ]
    assert problems == []


def test_the_walk_sees_the_fields_the_issue_named(openapi: dict[str, Any]) -> None:
    """Guards the guard: a walk that saw nothing would pass everything."""
    seen = {where for where, _ in _request_inputs(openapi)}
    for expected in (
        "POST /v1/relationships/{relationship_id}/memories body(application/json).subject",
        "POST /v1/relationships/{relationship_id}/memories/batch"
        " body(application/json).memories[].predicate",
        "PUT /v1/users/{user_id}/consent body(application/json).source",
        "PUT /v1/personas/{persona_id}/profile body(application/json).background",
        "GET /v1/personas query limit",
        "GET /v1/relationships/{relationship_id}/turns query session_id",
        "PUT /v1/users/{user_id}/profile/fields/{field} path field",
    ):
        assert expected in seen


class Sample(msgspec.Struct):
    id: Identifier
    shown: Annotated[str, DISPLAY_NAME] = ""
    note: Annotated[str, SHORT_TEXT] = ""
    text: Annotated[str, CONTENT] = ""
    tags: Annotated[list[Identifier], items(3)] = msgspec.field(default_factory=list)


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"id": "a\x00b"}, "id"),
        ({"id": "line\n"}, "id"),
        ({"id": "tab\tid"}, "id"),
        ({"id": ""}, "id"),
        ({"id": "x" * 129}, "id"),
        ({"id": "ok", "shown": "bell\x07"}, "shown"),
        ({"id": "ok", "note": "记住\x00这个"}, "note"),
        ({"id": "ok", "note": "x" * 2001}, "note"),
        ({"id": "ok", "text": "\x00"}, "text"),
        ({"id": "ok", "tags": ["a", "b", "c", "d"]}, "tags"),
        ({"id": "ok", "tags": ["a\x00"]}, "tags[0]"),
    ],
)
def test_the_types_refuse_nul_controls_and_overlong_values(value: Any, field: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=re.escape(f"$.{field}")):
        msgspec.convert(value, Sample)


def test_the_types_take_chinese_english_and_line_breaks_in_text() -> None:
    value = {
        "id": "用户-42 (Ann)",
        "shown": "露娜 Luna ☕",
        "note": "第一行\n second line\ttabbed",
        "text": "用户喜欢吃辣 " * 1000,
    }
    assert msgspec.convert(value, Sample).id == "用户-42 (Ann)"
    assert IDENTIFIER.max_length == 128
