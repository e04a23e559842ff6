"""``tether serve``: embedded services (if needed), migrations, a worker, the API."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from types import FrameType

import uvicorn

from tether.app import create_asgi
from tether.core import migrations
from tether.core.settings import Settings
from tether.runtime.preflight import DataDirLock, ensure_port_free, ensure_writable_dir
from tether.runtime.services import backing_services

log = logging.getLogger(__name__)

WORKER_STOP_SECONDS = 20


def _exit_on_sigterm(signum: int, _frame: FrameType | None) -> None:
    # Leave through SystemExit so every `finally` stops what we started.
    raise SystemExit(128 + signum)


def worker_command(settings: Settings, *, with_beat: bool) -> list[str]:
    command = [sys.executable, "-m", "celery", "-A", "workers.app", "worker"]
    command += ["--loglevel", settings.log_level, "--concurrency", str(settings.worker.concurrency)]
    if with_beat:
        schedule = ensure_writable_dir(settings.data_dir) / "celerybeat-schedule"
        command += ["--beat", "--schedule", str(schedule)]
    return command


def worker_env(settings: Settings) -> dict[str, str]:
    env = dict(os.environ)
    # The service's login only: a worker never needs the owner's.
    env.pop("TETHER_DB__OWNER_URL", None)
    env["TETHER_DATABASE_URL"] = settings.require_database_url()
    env["TETHER_REDIS_URL"] = settings.require_redis_url()
    if settings.hot_redis_url:
        env["TETHER_HOT_REDIS_URL"] = settings.hot_redis_url
    if settings.broker_url:
        env["TETHER_BROKER_URL"] = settings.broker_url
    if settings.db.role:
        env["TETHER_DB__ROLE"] = settings.db.role
    # The same data dir (the embedding model cache and the like); uploads themselves are
    # in Postgres (tether.knowledge.files).
    env["TETHER_DATA_DIR"] = str(settings.data_dir)
    if settings.audit.secret is not None:  # the worker seals with the same keys
        env["TETHER_AUDIT__SECRET"] = settings.audit.secret.get_secret_value()
    return env


def start_worker(settings: Settings) -> subprocess.Popen[bytes]:
    """The Celery worker (with beat) as a child in its own session, stopped by us."""
    return subprocess.Popen(  # noqa: S603 - our own interpreter and module
        worker_command(settings, with_beat=True),
        env=worker_env(settings),
        start_new_session=True,
    )


def stop_worker(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)  # warm shutdown: finish the current task
        try:
            worker.wait(WORKER_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def serve(settings: Settings) -> None:
    """Run until SIGINT/SIGTERM; always stop the worker and embedded services."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    ensure_port_free(settings.host, settings.port)
    lock = DataDirLock(ensure_writable_dir(settings.data_dir)) if settings.is_embedded else None
    if lock is not None:
        lock.acquire()
    try:
        with backing_services(settings) as live:
            migrations.upgrade(live.require_owner_url())
            worker = start_worker(live)
            try:
                config = uvicorn.Config(
                    create_asgi(live), host=live.host, port=live.port, log_config=None
                )
                uvicorn.Server(config).run()
            finally:
                stop_worker(worker)
    finally:
        if lock is not None:
            lock.release()
