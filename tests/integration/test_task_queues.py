"""Tasks go to a broker queue per kind of work, and a worker takes from its queues in
turn: a backlog of memory work does not hold back storing turns."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from redis import Redis as SyncRedis

from tests.conftest import start_worker, stop_worker
from tests.support import resolved_relationship, stored_turns
from tether.core import task_queues
from tether.core.settings import Settings
from tether.core.tasks import TaskQueue
from tether.knowledge.documents import INDEX_TASK
from tether.recall.reinforcement import REINFORCE_TASK
from tether.turns.services import PERSIST_TASK
from tether.turns.sessions import END_TASK, EXTRACT_TASK

pytestmark = [pytest.mark.integration, pytest.mark.worker]


def _depths(settings: Settings) -> dict[str, int]:
    broker = SyncRedis.from_url(settings.require_redis_url())
    try:
        return {queue: int(broker.llen(queue)) for queue in task_queues.ALL}
    finally:
        broker.close()


def test_the_api_sends_each_task_to_the_queue_of_its_kind(settings: Settings) -> None:
    sender = TaskQueue(settings)
    try:
        for name in (PERSIST_TASK, END_TASK, EXTRACT_TASK, REINFORCE_TASK, INDEX_TASK):
            sender.send_now(name, [])
        assert _depths(settings) == {"turns": 2, "memories": 2, "knowledge": 1, "celery": 0}
    finally:
        sender.close()
        SyncRedis.from_url(settings.require_redis_url()).delete(*task_queues.ALL)


def test_every_task_the_worker_runs_has_a_queue_it_consumes_by_default(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_REDIS_URL", settings.require_redis_url())  # read on import
    from workers.app import app

    app.loader.import_default_modules()  # the task modules, as a worker imports them
    ours = [name for name in app.tasks if not name.startswith("celery.")]
    assert len(ours) >= 10
    consumed = {queue.name for queue in app.conf.task_queues}
    assert consumed == set(task_queues.ALL)
    for name in ours:
        assert app.amqp.router.route({}, name)["queue"].name in consumed, name


async def test_turns_are_stored_ahead_of_a_backlog_of_memory_work(
    settings: Settings, client: Any, make_tenant: Any, resources: Any
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid = await resolved_relationship(client, gateway, "queues")
    # A thousand reinforcements (of memories that do not exist: quick no-ops) queued
    # first, then a turn; with one queue the turn would wait for all of them.
    sender = TaskQueue(settings)
    backlog = 1000
    try:
        for _ in range(backlog):
            sender.send_now(REINFORCE_TASK, [tenant.id, rid, [str(uuid.uuid4())]])
    finally:
        sender.close()
    turn = {"session_id": "s-1", "role": "user", "text": "先存我这句话 store this first"}
    accepted = await client.post(
        f"/v1/relationships/{rid}/turns", json={"turns": [turn]}, headers=gateway
    )
    assert accepted.status_code == 202, accepted.text
    assert _depths(settings)["memories"] == backlog

    starting = asyncio.create_task(asyncio.to_thread(start_worker, settings))
    worker = None
    try:
        deadline = time.monotonic() + 90
        while await stored_turns(resources, rid) == 0:
            assert time.monotonic() < deadline, "the turn was never stored"
            await asyncio.sleep(0.02)
        left = _depths(settings)["memories"]
        worker = await starting
        # The worker took the turn's task after at most a few reinforcements.
        assert left > backlog // 2, left
    finally:
        worker = worker or await starting
        await asyncio.to_thread(stop_worker, worker)


async def test_health_wants_a_worker_taking_turns_not_just_any_worker(
    settings: Settings, client: Any
) -> None:
    # Only an indexing pool is up: nothing would store turns, and /health says so.
    worker = await asyncio.to_thread(
        start_worker, settings, {"TETHER_WORKER__QUEUES": task_queues.KNOWLEDGE}
    )
    try:
        health = (await client.get("/health")).json()["components"]["worker"]
        assert health["status"] != "ok", health
        assert "turns" in health["detail"]
    finally:
        await asyncio.to_thread(stop_worker, worker)
    worker = await asyncio.to_thread(start_worker, settings)
    try:
        health = (await client.get("/health")).json()["components"]["worker"]
        assert health["status"] == "ok", health
        assert "no worker takes" not in health["detail"]
    finally:
        await asyncio.to_thread(stop_worker, worker)
