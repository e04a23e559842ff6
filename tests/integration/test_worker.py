"""A real Celery worker process: it consumes tasks sent by name and beats for /ready."""

import time
import uuid

import pytest
from celery import Celery
from redis import Redis as SyncRedis

from tether.core.redis_client import broker_url
from tether.core.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.worker]


def test_worker_runs_a_task_sent_by_name(settings: Settings, celery_worker) -> None:
    token = uuid.uuid4().hex
    sender = Celery("test-sender", broker=broker_url(settings.require_redis_url()))
    sender.send_task("system.ping", args=[token])
    redis = SyncRedis.from_url(settings.require_redis_url())
    deadline = time.monotonic() + 30
    while redis.get(f"tether:ping:{token}") is None:
        assert time.monotonic() < deadline, "the worker did not run the task"
        time.sleep(0.05)


async def test_ready_is_200_with_a_live_worker(client, celery_worker) -> None:
    response = await client.get("/ready")
    assert response.status_code == 200, response.json()
    assert response.json()["components"]["worker"]["status"] == "ok"
