"""The API document is worth generating clients from: every operation says what it does
and documents its errors as our problem+json, and Swagger UI needs no CDN."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tether.api.openapi import summary
from tether.app import create_app, with_outer_middleware
from tether.core.settings import Settings

METHODS = {"get", "post", "put", "patch", "delete"}
PROBLEM = "application/problem+json"
# Operations that answer no problem at all (probes: no key, no input).
NO_PROBLEMS = {"GetHealth", "GetReadiness"}


@pytest.fixture(scope="module")
async def http() -> AsyncIterator[httpx.AsyncClient]:
    # The document needs no store: an app that is never started serves it.
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url="postgresql://nobody@127.0.0.1:1/none",
        redis_url="redis://127.0.0.1:1/0",
    )
    transport = httpx.ASGITransport(app=with_outer_middleware(create_app(settings)))
    async with httpx.AsyncClient(transport=transport, base_url="http://tether") as client:
        yield client


@pytest.fixture(scope="module")
async def doc(http: httpx.AsyncClient) -> dict[str, Any]:
    response = await http.get("/schema/openapi.json")
    assert response.status_code == 200
    return dict(response.json())


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, op)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]


def test_every_operation_has_a_summary_and_a_description(doc: dict[str, Any]) -> None:
    missing = [
        op["operationId"]
        for _, _, op in operations(doc)
        if not op.get("summary") or len(op.get("description", "")) < 20
    ]
    assert len(operations(doc)) >= 70
    assert missing == []


def test_every_error_response_is_a_problem(doc: dict[str, Any]) -> None:
    lacking, wrong = [], []
    for _, _, op in operations(doc):
        errors = {s: r for s, r in op["responses"].items() if s >= "400"}
        if op["operationId"] not in NO_PROBLEMS and not errors:
            lacking.append(op["operationId"])
        for status, response in errors.items():
            schema = response.get("content", {}).get(PROBLEM, {}).get("schema")
            if op["operationId"] not in NO_PROBLEMS and schema != {
                "$ref": "#/components/schemas/Problem"
            }:
                wrong.append(f"{op['operationId']} {status}")
    assert lacking == []
    assert wrong == []
    required = doc["components"]["schemas"]["Problem"]["required"]
    assert {"code", "status", "title", "detail"} <= set(required)


def test_statuses_follow_what_each_route_declares(doc: dict[str, Any]) -> None:
    by_id = {op["operationId"]: op["responses"] for _, _, op in operations(doc)}
    # a policy: unauthenticated, forbidden, rate limited, stores unavailable
    assert {"401", "403", "429", "503"} <= set(by_id["ListApiKeys"])
    # path ids: 404; a write: 421 (another region); a body: 413 and 422
    assert {"404", "421", "413", "422"} <= set(by_id["CreateMemory"])
    assert not {"421", "413"} & set(by_id["GetMemory"])
    assert {"412", "428"} <= set(by_id["PutPersonaProfile"])
    assert "415" in by_id["UploadDocument"]
    # Litestar's own 400 shape is gone: our validation errors are 422
    assert all("400" not in responses for responses in by_id.values())
    assert "Retry-After" in by_id["BuildContext"]["429"]["headers"]
    assert "Retry-After" in by_id["BuildContext"]["503"]["headers"]


def test_summaries_read_as_words() -> None:
    assert summary("CreateMemory") == "Create memory"
    assert summary("ListApiKeys") == "List API keys"
    assert summary("GetMemorySources") == "Get memory sources"


async def test_swagger_ui_loads_only_from_this_server(http: httpx.AsyncClient) -> None:
    for page in ("/schema", "/schema/swagger"):
        html = (await http.get(page)).text
        assert "SwaggerUIBundle" in html
        assert not re.search(r"(src|href)=['\"]?(https?:)?//", html), "a CDN reference"
        assets = re.findall(r"(?:src|href)=['\"](/schema/assets/[^'\"]+)", html)
        assert len(assets) == 4
        for asset in assets:
            response = await http.get(asset)
            assert response.status_code == 200, asset
            assert len(response.content) > 500
