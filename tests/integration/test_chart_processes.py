"""The chart's API and worker, run as the chart runs them (issue 37): the command and the
environment of each Deployment exactly as rendered from the default values, with only
the Secrets' values (this module's Postgres and Redis), the listening address and the
data dir put in. Then /ready on the ops port, and a turn becoming a memory that the
context carries, through those processes alone."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import httpx
import pytest

from tests.charts.test_chart import CHART, _parse
from tests.charts.test_chart_settings import container_env
from tests.conftest import stop_worker
from tests.support import resolve_body
from tether.core.settings import Settings

# Two processes start, load the embedding model, and stop again within one test.
pytestmark = [pytest.mark.integration, pytest.mark.worker, pytest.mark.timeout(360)]

Manifest = dict[str, Any]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rendered() -> dict[str, tuple[list[str], dict[str, str]]]:
    with helm.Chart.load(CHART) as chart:
        manifests = _parse(chart.render(None, name="tether", namespace="tether"))
    found = {}
    for m in manifests:
        if m["kind"] != "Deployment":
            continue
        (container,) = m["spec"]["template"]["spec"]["containers"]
        component = m["metadata"]["labels"]["app.kubernetes.io/component"]
        found[component] = (container["command"], container_env(manifests, container))
    return found


def _launch(
    command: list[str], env: dict[str, str], settings: Settings, local: dict[str, str]
) -> subprocess.Popen[bytes]:
    secrets = {
        "TETHER_DATABASE_URL": settings.require_database_url(),
        "TETHER_REDIS_URL": settings.require_redis_url(),
    }
    assert secrets.keys() <= env.keys()
    process_env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    process_env |= env | secrets | local
    if command[0] == "tether":  # the image's console script, from this interpreter
        command = [sys.executable, "-m", "tether.cli", *command[1:]]
    return subprocess.Popen(command, env=process_env, stdout=sys.stderr, stderr=sys.stderr)


@pytest.fixture(scope="module")
def chart_processes(settings: Settings, tmp_path_factory) -> Iterator[dict[str, int]]:  # type: ignore[no-untyped-def]
    rendered = _rendered()
    ports = {"http": _free_port(), "ops": _free_port()}
    data: Path = tmp_path_factory.mktemp("pod")
    local = {
        "TETHER_HOST": "127.0.0.1",
        "TETHER_PORT": str(ports["http"]),
        "TETHER_API__OPS_PORT": str(ports["ops"]),
        "TETHER_DATA_DIR": str(data),
    }
    api = _launch(*rendered["api"], settings, local)
    # A worker pod has its own disk: nothing but Postgres and Redis is shared.
    worker_local = local | {"TETHER_DATA_DIR": str(tmp_path_factory.mktemp("worker-pod"))}
    worker = _launch(*rendered["worker"], settings, worker_local)
    try:
        yield ports
    finally:
        stop_worker(api)
        stop_worker(worker)


def _wait_ready(ops: int, seconds: float = 120) -> httpx.Response:
    deadline = time.monotonic() + seconds
    while True:
        try:
            response = httpx.get(f"http://127.0.0.1:{ops}/ready", timeout=5)
            if response.status_code == 200:
                return response
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError("the chart's API never became ready")
        time.sleep(0.5)


async def test_the_rendered_api_is_ready_on_its_ops_port_only(chart_processes) -> None:
    ops, http = chart_processes["ops"], chart_processes["http"]
    ready = await asyncio.to_thread(_wait_ready, ops)
    assert ready.json()["components"]["postgres"]["status"] == "ok"
    async with httpx.AsyncClient(timeout=10) as client:
        for path in ("/health", "/ready", "/metrics"):
            public = await client.get(f"http://127.0.0.1:{http}{path}")
            assert public.status_code == 404, path
        assert (await client.get(f"http://127.0.0.1:{ops}/metrics")).status_code == 200
        assert (await client.get(f"http://127.0.0.1:{ops}/v1/api-keys")).status_code == 404


async def test_a_turn_becomes_a_memory_in_the_context_through_the_charts_processes(
    chart_processes, make_tenant
) -> None:
    await asyncio.to_thread(_wait_ready, chart_processes["ops"])
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    base = f"http://127.0.0.1:{chart_processes['http']}"
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        resolved = await client.post("/v1/resolve", json=resolve_body("chart"), headers=headers)
        assert resolved.status_code in (200, 201), resolved.text
        rid = resolved.json()["relationship_id"]
        turns = [
            {"session_id": "c1", "role": "user", "text": "我超爱吃辣的，尤其是火锅"},
            {"session_id": "c1", "role": "user", "text": "I adore spicy hotpot."},
        ]
        sent = await client.post(
            f"/v1/relationships/{rid}/turns", json={"turns": turns}, headers=headers
        )
        assert sent.status_code == 202, sent.text
        ended = await client.post(f"/v1/relationships/{rid}/sessions/c1/end", headers=headers)
        assert ended.status_code == 202
        deadline = time.monotonic() + 120
        while True:
            listed = await client.get(f"/v1/relationships/{rid}/memories", headers=headers)
            memories = listed.json()["items"]
            if any("辣" in m["content"] for m in memories):
                break
            assert time.monotonic() < deadline, "the chart's worker made no memory"
            await asyncio.sleep(0.5)
        body = {"relationship_id": rid, "query": "what food do I like?"}
        context = await client.post("/v1/context", json=body, headers=headers)
        assert context.status_code == 200, context.text
        assert "辣" in context.json()["context"]
