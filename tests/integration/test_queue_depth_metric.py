"""The metric the chart's queue-depth autoscaler reads (issue 37): the API the chart
renders, started as the chart starts it with no worker running, reports on its ops
port's /metrics how many tasks wait in each broker queue (real Redis), and the number
goes up as tasks are queued."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import stop_worker
from tests.integration.test_chart_processes import _free_port, _launch, _rendered, _wait_ready
from tests.support import resolve_body
from tether.core import task_queues
from tether.core.settings import Settings
from tether.core.tasks import TaskQueue

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def api_ports(settings: Settings, tmp_path_factory) -> Iterator[dict[str, int]]:  # type: ignore[no-untyped-def]
    """The rendered API alone: nothing takes the tasks it queues."""
    command, env = _rendered()["api"]
    ports = {"http": _free_port(), "ops": _free_port()}
    local = {
        "TETHER_HOST": "127.0.0.1",
        "TETHER_PORT": str(ports["http"]),
        "TETHER_API__OPS_PORT": str(ports["ops"]),
        "TETHER_DATA_DIR": str(tmp_path_factory.mktemp("api-pod")),
    }
    api = _launch(command, env, settings, local)
    try:
        _wait_ready(ports["ops"])
        yield ports
    finally:
        stop_worker(api)


async def _depths(ops: int) -> dict[str, float]:
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(f"http://127.0.0.1:{ops}/metrics")
    assert response.status_code == 200, response.text
    return {
        sample.labels["queue"]: sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
        if sample.name == "tether_queue_depth"
    }


async def test_queue_depth_rises_per_queue_while_no_worker_runs(
    api_ports: dict[str, int], settings: Settings, make_tenant
) -> None:
    before = await _depths(api_ports["ops"])
    assert before.keys() == set(task_queues.ALL)
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    base = f"http://127.0.0.1:{api_ports['http']}"
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        resolved = await client.post("/v1/resolve", json=resolve_body("depth"), headers=headers)
        assert resolved.status_code in (200, 201), resolved.text
        rid = resolved.json()["relationship_id"]
        for n in range(3):  # each accepted batch queues its persist task
            turn = {"session_id": "d1", "role": "user", "text": f"turn number {n}"}
            sent = await client.post(
                f"/v1/relationships/{rid}/turns", json={"turns": [turn]}, headers=headers
            )
            assert sent.status_code == 202, sent.text
    # The other queues, as any sender (API or beat) fills them: by task name.
    queue = TaskQueue(settings)
    for name in ("memories.expire", "memories.retention_sweep", "knowledge.requeue_stalled"):
        await asyncio.to_thread(queue.send_now, name, [])
    after = await _depths(api_ports["ops"])
    assert after[task_queues.TURNS] >= before[task_queues.TURNS] + 3
    assert after[task_queues.MEMORIES] == before[task_queues.MEMORIES] + 2
    assert after[task_queues.KNOWLEDGE] == before[task_queues.KNOWLEDGE] + 1
    assert after[task_queues.LEGACY] == before[task_queues.LEGACY]


async def test_queue_depth_is_not_served_on_the_public_port(api_ports: dict[str, int]) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        public = await client.get(f"http://127.0.0.1:{api_ports['http']}/metrics")
    assert public.status_code == 404
