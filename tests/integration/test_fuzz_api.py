"""Schema-driven fuzzing: schemathesis reads the app's own OpenAPI document (/schema)
and sends every operation examples, boundary cases and schema-violating input, against a
real uvicorn process on the module's Postgres and Redis. No answer may be a 5xx, and
every error must be a problem+json body.

The run is bounded (a few examples per operation, derandomized so that `make test` is
repeatable) and acts as an admin of a test tenant, then as its gateway or compliance key
where the admin's role may not act. Path ids that the fuzzer generates as valid UUIDs are
replaced by ids of real objects, so the requests reach past the 404 of an unknown id;
deletions get objects of their own, so they cannot take away what the rest of the run
needs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from tests.support import resolve_body
from tether.core.settings import Settings
from tether.runtime.serve import worker_env

pytestmark = pytest.mark.integration

MAX_EXAMPLES = 4
PROBLEM = "application/problem+json"
# Writes that would change what every later request may do: undone after each call.
_RESETS = {
    "PutTenantPolicies": ("/v1/policies/tenant", {"rules": []}),
    "PutPrivacyPatterns": ("/v1/tenant/privacy-patterns", {"patterns": []}),
    # A limit of 1 request a second would answer 429 to the rest of the run.
    "PutTenantLimits": ("/v1/tenant/limits", {}),
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class World:
    """The live server and the tenant's real objects."""

    base_url: str
    keys: list[dict[str, str]]  # admin first, then the roles tried after a 403
    ids: dict[str, str]  # path parameter -> a real object's id
    doomed: dict[str, str]  # the same, for DELETE: objects nothing else needs
    deletions: dict[str, dict[str, str]]  # per DELETE operation, where doomed won't do
    answers: list[tuple[str, int]] = field(default_factory=list)


@pytest.fixture(scope="module")
def live_api(settings: Settings) -> Iterator[str]:
    """`uvicorn --factory tether.asgi:create` on a free port, on this module's database."""
    port = _free_port()
    env = worker_env(settings) | {"TETHER_LOG_LEVEL": "ERROR"}
    env.pop("WEB_CONCURRENCY", None)
    command = [sys.executable, "-m", "uvicorn", "--factory", "tether.asgi:create"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
    server = subprocess.Popen(command, env=env, stdout=sys.stderr, stderr=sys.stderr)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            assert server.poll() is None, "the API process exited"
            try:
                if httpx.get(f"{base}/schema/openapi.json", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the API did not answer within 60 s"
            time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


async def _ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code < 300, response.text
    return dict(response.json())


async def _objects(
    client: httpx.AsyncClient, admin: Any, gateway: Any, name: str
) -> dict[str, str]:
    """A relationship with a memory and a turn, and a knowledge base of its persona with a
    document: their ids under the names of the path parameters that take them."""
    body = resolve_body(f"u-{name}", f"p-{name}")
    resolved = await _ok(await client.post("/v1/resolve", json=body, headers=gateway))
    rid = resolved["relationship_id"]
    memory = await _ok(
        await client.post(
            f"/v1/relationships/{rid}/memories",
            json={"content": "用户喜欢爬山 and plays the cello", "subject": "user"},
            headers=gateway,
        )
    )
    turn = {"session_id": "s-1", "role": "user", "text": "你好, hello"}
    await _ok(
        await client.post(f"/v1/relationships/{rid}/turns", json={"turns": [turn]}, headers=gateway)
    )
    base = await _ok(
        await client.post(
            "/v1/knowledge-bases",
            json={"name": f"kb-{name}", "creator_persona_id": resolved["creator_persona_id"]},
            headers=admin,
        )
    )
    document = await _ok(
        await client.post(
            f"/v1/knowledge-bases/{base['id']}/documents",
            files={"file": ("notes.txt", "保修两年. The warranty lasts two years.".encode())},
            headers=admin,
        )
    )
    key = await _ok(
        await client.post(
            "/v1/api-keys",
            json={"role": "operator", "subject": "pool-1", "name": name},
            headers=admin,
        )
    )
    return {
        "relationship_id": rid,
        "memory_id": memory["id"],
        "user_id": resolved["global_user_id"],
        "persona_id": resolved["creator_persona_id"],
        "creator_id": resolved["creator_id"],
        "knowledge_base_id": base["id"],
        "document_id": document["id"],
        "key_id": key["key"]["id"],
    }


@pytest.fixture(scope="module")
async def world(live_api: str, client: httpx.AsyncClient, make_tenant: Any) -> World:
    tenant = await make_tenant()
    admin, gateway = tenant.admin, await tenant.key("gateway")
    keys = [admin, gateway, await tenant.key("compliance")]
    ids = await _objects(client, admin, gateway, "kept")
    # Body fields that name the same objects.
    ids |= {
        "creator_persona_id": ids["persona_id"],
        "source_relationship_id": ids["relationship_id"],
    }
    doomed = await _objects(client, admin, gateway, "doomed")
    # Erasing the doomed relationship's user would take its memory before DeleteMemory
    # runs, and deleting its base would take its document: they get objects of their own.
    loner = await _ok(await client.post("/v1/users", json={"external_id": "loner"}, headers=admin))
    spare = await client.post(
        f"/v1/knowledge-bases/{ids['knowledge_base_id']}/documents",
        files={"file": ("spare.md", "# 标题\nA spare document.".encode())},
        headers=admin,
    )
    deletions = {
        "EraseUser": {"user_id": loner["id"]},
        "DeleteDocument": {
            "knowledge_base_id": ids["knowledge_base_id"],
            "document_id": (await _ok(spare))["id"],
        },
    }
    return World(live_api, keys, ids, doomed, deletions)


def _openapi_document() -> dict[str, Any]:
    """The document the app serves at /schema, built in a child process: collection
    happens before any fixture, and building the app here would install this process's
    telemetry with made-up settings."""
    build = (
        "import json, sys\n"
        "from tether.api.openapi import document\n"
        "from tether.app import create_app\n"
        "from tether.core.settings import Settings\n"
        "settings = Settings(_env_file=None, database_url='postgresql+asyncpg://unused@h/db')\n"
        "served = document(create_app(settings))\n"
        "open(sys.argv[1], 'w').write(json.dumps(served))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "openapi.json"
        subprocess.run([sys.executable, "-c", build, str(target)], env=env, check=True, timeout=120)
        return dict(json.loads(target.read_text()))


DOCUMENT = _openapi_document()
schema = schemathesis.openapi.from_dict(
    DOCUMENT,
    config=schemathesis.Config.from_dict(
        {
            "generation": {"max-examples": MAX_EXAMPLES, "deterministic": True},
            # Methods an operation does not have answer 405 from the router alone.
            "phases": {"stateful": {"enabled": False}, "coverage": {"unexpected-methods": []}},
        }
    ),
)


def test_the_fuzzed_document_is_the_one_the_server_serves(world: World) -> None:
    served = httpx.get(f"{world.base_url}/schema/openapi.json", timeout=10)
    assert served.json() == DOCUMENT


def _operation_id(case: Any) -> str:
    return str(case.operation.definition.raw.get("operationId", ""))


def _is_uuid(value: object) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return isinstance(value, str)


def _with_real_ids(case: Any, world: World) -> None:
    """Swap generated UUIDs in the path and at the top of a JSON body for real objects'
    ids (other values stay: they are the fuzzer's invalid input)."""
    real = world.ids
    if case.method.upper() == "DELETE":
        real = world.doomed | world.deletions.get(_operation_id(case), {})
    for where in (case.path_parameters, case.body):
        if isinstance(where, dict):
            for name, value in where.items():
                if name in real and _is_uuid(value):
                    where[name] = real[name]


def _call(case: Any, world: World) -> Any:
    """As the first key whose role may make the call."""
    response = None
    for headers in world.keys:
        # The generated Authorization (from the security scheme) is replaced, not merged.
        case.headers = {
            k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"
        }
        response = case.call(base_url=world.base_url, headers=headers, timeout=30)
        if response.status_code != 403:
            break
    world.answers.append((_operation_id(case), response.status_code))
    reset = _RESETS.get(_operation_id(case))
    if reset:
        httpx.put(world.base_url + reset[0], json=reset[1], headers=world.keys[0], timeout=30)
    return response


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_request_gets_a_5xx_or_a_non_problem_error(case: Any, world: World) -> None:
    _with_real_ids(case, world)
    response = _call(case, world)
    # Readiness answers 503 by design while no worker beats (none runs here).
    ready = _operation_id(case) == "GetReadiness"
    assert response.status_code < 500 or (ready and response.status_code == 503), (
        f"{case.method} {case.formatted_path} answered {response.status_code}: "
        f"{response.text[:500]}\n{case.as_curl_command()}"
    )
    if response.status_code >= 400 and not ready:
        content_type = response.headers.get("content-type", [""])[0]
        assert content_type.startswith(PROBLEM), (
            f"{case.method} {case.formatted_path} answered {response.status_code} as "
            f"{content_type!r}: {response.text[:300]}"
        )


def test_the_fuzzer_reached_past_auth_and_404(world: World) -> None:
    """Guards the guard: requests that all stopped at 401, 403 or 404 would prove
    nothing about the code behind them."""
    operations = {operation for operation, _ in world.answers}
    succeeded = {operation for operation, status in world.answers if status < 300}
    assert len(operations) >= 70
    missed = {
        operation: sorted({status for name, status in world.answers if name == operation})
        for operation in operations - succeeded
    }
    assert len(succeeded) >= 0.85 * len(operations), missed
