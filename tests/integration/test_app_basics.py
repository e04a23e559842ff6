"""The HTTP envelope: health, problems, request ids, limits, OpenAPI."""

import httpx
import pytest

pytestmark = pytest.mark.integration


async def test_health_reports_every_component_with_latency(client: httpx.AsyncClient) -> None:
    response = await client.get("/health")
    assert response.status_code == 200
    body = response.json()
    components = {"postgres", "pgvector", "migrations", "redis", "hot_redis", "worker"}
    assert set(body["components"]) == components
    for name in ("postgres", "pgvector", "migrations", "redis", "hot_redis"):
        assert body["components"][name]["status"] == "ok", body
        assert body["components"][name]["latency_ms"] >= 0
    assert "pgvector 0.8" in body["components"]["pgvector"]["detail"]


async def test_ready_does_not_wait_for_a_worker_health_reports_it(
    client: httpx.AsyncClient,
) -> None:
    """A worker outage must not take every API pod out of its Service (issue 37)."""
    response = await client.get("/ready")
    assert response.status_code == 200, response.text
    assert response.json()["components"]["worker"]["status"] == "down"
    health = (await client.get("/health")).json()
    assert health["status"] == "degraded"
    assert "tether worker" in health["components"]["worker"]["detail"]


async def test_unknown_route_is_a_problem_with_request_id(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["code"] == "not_found"
    assert body["request_id"] == response.headers["x-request-id"]


async def test_caller_request_id_is_echoed(client: httpx.AsyncClient) -> None:
    response = await client.get("/health", headers={"X-Request-ID": "gw-123"})
    assert response.headers["x-request-id"] == "gw-123"


async def test_unsafe_request_id_is_replaced(client: httpx.AsyncClient) -> None:
    response = await client.get("/health", headers={"X-Request-ID": "a b\tc" * 20})
    assert response.headers["x-request-id"] != "a b\tc" * 20


async def test_wrong_method_is_405_problem(client: httpx.AsyncClient) -> None:
    response = await client.delete("/health")
    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"


async def test_missing_key_is_401_problem(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/api-keys")
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"


async def test_malformed_key_is_401(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/api-keys", headers={"Authorization": "Bearer nope"})
    assert response.status_code == 401


async def test_malformed_json_is_4xx_problem(client: httpx.AsyncClient, make_tenant) -> None:
    tenant = await make_tenant()
    headers = tenant.admin | {"Content-Type": "application/json"}
    response = await client.post("/v1/api-keys", content=b'{"role": ', headers=headers)
    assert 400 <= response.status_code < 500
    assert response.headers["content-type"].startswith("application/problem+json")


async def test_body_over_the_limit_is_413(client: httpx.AsyncClient, make_tenant) -> None:
    tenant = await make_tenant()
    big = b'{"role": "admin", "name": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    headers = tenant.admin | {"Content-Type": "application/json"}
    response = await client.post("/v1/api-keys", content=big, headers=headers)
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"


async def test_invalid_field_is_422_naming_the_field(
    client: httpx.AsyncClient, make_tenant
) -> None:
    tenant = await make_tenant()
    response = await client.post("/v1/api-keys", json={"role": "emperor"}, headers=tenant.admin)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid_input"
    assert "role" in body["detail"]


async def test_openapi_schema_is_served(client: httpx.AsyncClient) -> None:
    response = await client.get("/schema/openapi.json")
    assert response.status_code == 200
    assert response.json()["info"]["title"] == "Tether"
