"""The Celery application. Start a worker with ``tether worker`` (or
``celery -A workers.app worker``); settings come from the same TETHER_ environment."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from celery import Celery
from celery.signals import (
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
)
from kombu import Exchange, Queue
from redis import Redis as SyncRedis
from redis.exceptions import RedisError

from tenancy.audit import keys as audit_keys
from tenancy.settings.reembed_runs import REEMBED_SWEEP_TASK
from tether.core import task_queues
from tether.core.database_errors import DatabaseUnavailable
from tether.core.logging import configure_logging
from tether.core.redis_client import broker_url
from tether.core.settings import Settings
from tether.core.telemetry import setup_telemetry, shutdown_telemetry
from tether.health.heartbeat import beat
from tether.knowledge.file_deletions import SWEEP_TASK as FILE_DELETIONS_TASK
from tether.knowledge.stalled import STALLED_TASK
from tether.recall.invalidations import RETRY_INVALIDATIONS_TASK
from workers import runtime

TASK_MODULES = [
    "workers.tasks.system",
    "workers.tasks.turns",
    "workers.tasks.sessions",
    "workers.tasks.memories",
    "workers.tasks.knowledge",
    "workers.tasks.audit",
    "workers.tasks.rights",
    "workers.tasks.reembed",
]

# How often the beat looks for re-embed runs left unfinished (decision 0079).
REEMBED_SWEEP_SECONDS = 60.0
SWEEP_TASK = "sessions.sweep"
RECONCILE_TASK = "turns.reconcile"
EXPIRY_TASK = "memories.expire"
AUDIT_SEAL_TASK = "audit.seal"
AUDIT_CHECKPOINT_TASK = "audit.checkpoint"
RETENTION_TASK = "memories.retention_sweep"
OWNERSHIP_TASK = "system.ownership_sweep"


def create_celery(settings: Settings) -> Celery:
    """A Celery app bound to ``settings`` with at-least-once delivery."""
    audit_keys.configure(settings)
    url = broker_url(settings.require_broker_url())
    app = Celery("tether", broker=url, include=TASK_MODULES)
    # What this worker consumes (``celery worker -Q`` would override it).
    consumed = [Queue(name, Exchange(name), routing_key=name) for name in settings.worker.queues]
    app.conf.update(
        task_acks_late=True,  # a killed worker's task is redelivered, never lost
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        task_routes=task_queues.ROUTES,
        task_default_queue=task_queues.DEFAULT,
        task_queues=consumed,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": settings.worker.visibility_timeout_seconds},
        worker_hijack_root_logger=False,
        beat_schedule={
            "end-idle-sessions": {
                "task": SWEEP_TASK,
                "schedule": settings.ingest.sweep_interval_seconds,
            },
            "store-lost-turns": {
                "task": RECONCILE_TASK,
                "schedule": settings.ingest.reconcile_after_seconds,
            },
            "expire-memories": {
                "task": EXPIRY_TASK,
                "schedule": settings.memory.expiry_sweep_seconds,
            },
            "apply-retention": {
                "task": RETENTION_TASK,
                "schedule": settings.memory.retention_sweep_seconds,
            },
            "pool-silent-creators": {
                "task": OWNERSHIP_TASK,
                "schedule": settings.identity.ownership_sweep_seconds,
            },
            "delete-stored-files": {
                "task": FILE_DELETIONS_TASK,
                "schedule": settings.files.deletion_sweep_seconds,
            },
            "requeue-stalled-documents": {
                "task": STALLED_TASK,
                "schedule": settings.knowledge.stalled_sweep_seconds,
            },
            "seal-access-events": {
                "task": AUDIT_SEAL_TASK,
                "schedule": settings.audit.seal_interval_seconds,
            },
            "sign-audit-checkpoints": {
                "task": AUDIT_CHECKPOINT_TASK,
                "schedule": settings.audit.checkpoint_interval_seconds,
            },
            "resume-reembed-runs": {
                "task": REEMBED_SWEEP_TASK,
                "schedule": REEMBED_SWEEP_SECONDS,
            },
            "retry-invalidations": {
                "task": RETRY_INVALIDATIONS_TASK,
                "schedule": settings.recall.invalidation_retry_seconds,
            },
        },
    )
    app.conf.tether_settings = settings
    return app


def outage_retries(settings: Settings) -> dict[str, Any]:
    """Task options that retry a task which found Postgres unavailable until it is back
    (for ``worker.outage_retry_attempts`` attempts): what it was given (accepted turns,
    an uploaded document) must not be dropped or marked failed because of an outage.
    Only for idempotent tasks; periodic ones simply run again on their schedule."""
    return {
        "autoretry_for": (DatabaseUnavailable,),
        "retry_backoff": True,
        "retry_backoff_max": settings.worker.outage_retry_max_seconds,
        "retry_jitter": True,
        "max_retries": settings.worker.outage_retry_attempts,
    }


def settings_of(celery: Celery) -> Settings:
    settings: Settings = celery.conf.tether_settings
    return settings


class _Heartbeat:
    """A daemon thread that tells /health this worker is alive."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._stop = threading.Event()

    def run(self) -> None:
        client = SyncRedis.from_url(self._settings.require_redis_url(), socket_timeout=2)
        period = self._settings.worker.heartbeat_seconds
        while not self._stop.is_set():
            with contextlib.suppress(RedisError):  # Redis briefly away: the next beat tells
                beat(client, ttl_seconds=period * 3, queues=self._settings.worker.queues)
            self._stop.wait(period)

    def stop(self) -> None:
        self._stop.set()


_settings = Settings()
configure_logging(_settings.log_level)
app = create_celery(_settings)
OUTAGE_RETRIES = outage_retries(_settings)
_heartbeat = _Heartbeat(_settings)


@worker_ready.connect
def _start_heartbeat(**_: Any) -> None:
    threading.Thread(target=_heartbeat.run, name="tether-heartbeat", daemon=True).start()


@worker_shutdown.connect
def _stop_heartbeat(**_: Any) -> None:
    _heartbeat.stop()


@worker_process_init.connect
def _warm_up(**_: Any) -> None:
    # Each process loads the tokenizer dictionary and its model once, before any task.
    from workers.services import warm_up_process

    # Per process, after the fork: exporters' threads and sockets do not survive one.
    setup_telemetry("tether-worker", _settings, celery=True)
    warm_up_process(_settings)


@worker_process_shutdown.connect
def _close_runtime(**_: Any) -> None:
    runtime.close()
    shutdown_telemetry()
