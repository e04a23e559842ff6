"""Worker settings read from the environment: the queues a worker consumes, and outage
retries that must wait less than the broker's visibility timeout."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tether.core import task_queues
from tether.core.settings import Settings


def _worker(monkeypatch: pytest.MonkeyPatch, **env: str) -> Settings:
    for name, value in env.items():
        monkeypatch.setenv(f"TETHER_WORKER__{name}", value)
    return Settings(_env_file=None)  # type: ignore[call-arg]


def test_a_worker_consumes_every_queue_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _worker(monkeypatch).worker.queues == task_queues.ALL
    only = _worker(monkeypatch, QUEUES=" knowledge , turns")
    assert only.worker.queues == (task_queues.KNOWLEDGE, task_queues.TURNS)


@pytest.mark.parametrize("queues", ["knowledge,typo", "", " , "])
def test_unknown_or_no_queues_are_refused_with_the_known_ones_named(
    monkeypatch: pytest.MonkeyPatch, queues: str
) -> None:
    with pytest.raises(ValidationError, match="queue"):
        _worker(monkeypatch, QUEUES=queues)


def test_outage_retries_must_wait_at_most_half_the_visibility_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValidationError, match="half of visibility_timeout_seconds"):
        _worker(monkeypatch, VISIBILITY_TIMEOUT_SECONDS="60", OUTAGE_RETRY_MAX_SECONDS="31")
    fine = _worker(monkeypatch, VISIBILITY_TIMEOUT_SECONDS="60", OUTAGE_RETRY_MAX_SECONDS="30")
    assert fine.worker.outage_retry_max_seconds == 30


def test_beat_retries_failed_invalidations_at_the_configured_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TETHER_RECALL__INVALIDATION_RETRY_SECONDS", "12")
    monkeypatch.setenv("TETHER_REDIS_URL", "redis://127.0.0.1:1/0")  # never connected to
    from tether.recall.invalidations import RETRY_INVALIDATIONS_TASK
    from workers.app import create_celery  # its import builds an app from the environment

    schedule = create_celery(Settings(_env_file=None)).conf.beat_schedule  # type: ignore[call-arg]
    entry = next(e for e in schedule.values() if e["task"] == RETRY_INVALIDATIONS_TASK)
    assert entry["schedule"] == 12
    assert task_queues.ROUTES["memories.*"]["queue"] == task_queues.MEMORIES
