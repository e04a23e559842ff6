"""The previous release's code against this tree's schema (decision 0062): during a
rolling upgrade the pre-upgrade Job migrates to the new head while the old release's
pods still serve, so the old API and worker must keep working on the expanded schema.

The previous release is the last commit (first-parent history) whose migrations head
was ``POLICY_SINCE``, the baseline the expand/contract policy names. Its tree is taken
with ``git archive`` into a temp dir; its API (uvicorn, as its image ran it) and its
worker run from this virtualenv with ``PYTHONPATH`` on the old tree, against this
module's database, which the session migrated to the new head. Then a turn becomes a
memory that the context carries, and a search finds it, through those processes alone.
Skipped, saying why, only where git history is unavailable (a tarball checkout, or a
shallow clone without the baseline)."""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import stop_worker
from tests.integration.test_chart_processes import _free_port
from tests.support import resolve_body
from tether.core.migration_policy import POLICY_SINCE
from tether.core.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.worker, pytest.mark.timeout(360)]

REPO = Path(__file__).resolve().parents[2]
# What /ready must ignore anyway (tether.health.services.OPTIONAL_COMPONENTS).
OPTIONAL = {"hot_redis", "worker"}


@dataclass(frozen=True)
class OldRelease:
    port: int
    tree: Path


def _git(*args: str) -> str:
    if shutil.which("git") is None:
        pytest.skip("git history is unavailable here (no git command)")
    done = subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"git history is unavailable here (git {args[0]}: {done.stderr.strip()})")
    return done.stdout


def _head(commit: str) -> str:
    names = _git("ls-tree", "--name-only", commit, "migrations/versions/").split()
    return max(Path(n).name[:4] for n in names if Path(n).name[:4].isdigit())


def previous_release() -> str:
    """The newest first-parent commit whose migrations head is ``POLICY_SINCE``: the
    parent of the first commit that put a migration after it."""
    if _git("rev-parse", "--is-shallow-repository").strip() == "true":
        pytest.skip("git history is unavailable here (a shallow clone)")
    changes = _git("log", "--first-parent", "--reverse", "--format=%H", "--", "migrations/versions")
    for commit in changes.split():
        if _head(commit) > POLICY_SINCE:
            baseline = _git("rev-parse", f"{commit}^1").strip()
            assert _head(baseline) == POLICY_SINCE, (baseline, _head(baseline))
            return baseline
    raise AssertionError(f"no commit has a migration after {POLICY_SINCE}")


def _extract(commit: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def _old_env(tree: Path, settings: Settings, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env |= {
        # The old tree first: this virtualenv's own (editable) Tether comes after it.
        "PYTHONPATH": os.pathsep.join([str(tree / "platform"), str(tree)]),
        "TETHER_DATABASE_URL": settings.require_database_url(),
        "TETHER_REDIS_URL": settings.require_redis_url(),
        "TETHER_HOT_REDIS_URL": str(settings.hot_redis_url),
        "TETHER_DATA_DIR": str(data_dir),
        "TETHER_AUDIT__SECRET": "tests-audit-secret",
        "TETHER_LIMITS__FAILED_AUTH_PER_MINUTE": "1000000",
    }
    return env


def _imports_from(tree: Path, env: dict[str, str]) -> list[str]:
    probe = (
        "import tether, tenancy, workers as w; print(tether.__file__, tenancy.__file__, w.__file__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=tree, capture_output=True, text=True, check=True
    )
    return done.stdout.split()


@pytest.fixture(scope="module")
def old_release(settings: Settings, tmp_path_factory) -> Iterator[OldRelease]:  # type: ignore[no-untyped-def]
    """The previous release's API and worker, on the new schema."""
    tree = _extract(previous_release(), tmp_path_factory.mktemp("previous-release"))
    env = _old_env(tree, settings, tmp_path_factory.mktemp("old-data"))
    modules = _imports_from(tree, env)
    assert all(m.startswith(str(tree)) for m in modules), modules  # really the old code
    port = _free_port()
    uvicorn = [sys.executable, "-m", "uvicorn", "--factory", "tether.asgi:create"]
    uvicorn += ["--host", "127.0.0.1", "--port", str(port)]
    worker = [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "--pool", "solo"]
    started = [
        subprocess.Popen(cmd, env=env, cwd=tree, stdout=sys.stderr, stderr=sys.stderr)
        for cmd in (uvicorn, worker)
    ]
    try:
        _wait_serving(port)
        yield OldRelease(port, tree)
    finally:
        for process in started:
            stop_worker(process)


def _wait_serving(port: int, seconds: float = 120) -> None:
    """Until the old API answers /health (always 200 once it serves)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError("the previous release's API never answered /health")
        time.sleep(0.5)


async def _until(check, seconds: float = 120):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not (found := await check()):
        assert time.monotonic() < deadline, "the previous release's worker made no memory"
        await asyncio.sleep(0.5)
    return found


async def test_the_previous_release_stays_ready_on_the_new_schema(
    old_release: OldRelease,
) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        ready = await client.get(f"http://127.0.0.1:{old_release.port}/ready")
    if ready.status_code == 200:
        return
    components = ready.json()["components"]
    failing = {n for n, c in components.items() if c["status"] != "ok"} - OPTIONAL
    old_probe = (old_release.tree / "platform/tether/health/services.py").read_text()
    if failing == {"migrations"} and "is_newer_than_head" not in old_probe:
        # A finding about that release, which cannot be changed any more: its /ready
        # wants the schema at exactly its own head, so its pods leave their Service as
        # soon as the pre-upgrade Job migrates (docs/upgrades.md). Releases from this
        # change on accept a schema ahead; once the baseline is one of them, this passes.
        pytest.xfail(
            "the previous release's /ready is 503 on a newer schema: "
            + components["migrations"]["detail"]
        )
    raise AssertionError(f"the previous release is not ready on the new schema: {ready.text}")


async def test_the_previous_release_serves_a_round_trip_on_the_new_schema(
    old_release: OldRelease, make_tenant
) -> None:
    tenant = await make_tenant()
    base = f"http://127.0.0.1:{old_release.port}"
    async with httpx.AsyncClient(base_url=base, timeout=30) as old:
        # A key issued by the old code, written into the new schema.
        body = {"role": "gateway", "name": "old release"}
        issued = await old.post("/v1/api-keys", json=body, headers=tenant.admin)
        assert issued.status_code == 201, issued.text
        headers = {"Authorization": f"Bearer {issued.json()['token']}"}
        resolved = await old.post("/v1/resolve", json=resolve_body("old"), headers=headers)
        assert resolved.status_code in (200, 201), resolved.text
        rid = resolved.json()["relationship_id"]
        turns = [
            {"session_id": "o1", "role": "user", "text": "我超爱吃辣的，尤其是火锅"},
            {"session_id": "o1", "role": "user", "text": "I adore spicy hotpot."},
        ]
        sent = await old.post(
            f"/v1/relationships/{rid}/turns", json={"turns": turns}, headers=headers
        )
        assert sent.status_code == 202, sent.text
        ended = await old.post(f"/v1/relationships/{rid}/sessions/o1/end", headers=headers)
        assert ended.status_code == 202, ended.text

        async def spicy() -> set[str]:
            listed = await old.get(f"/v1/relationships/{rid}/memories", headers=headers)
            assert listed.status_code == 200, listed.text
            return {m["content"] for m in listed.json()["items"] if "辣" in m["content"]}

        memories = await _until(spicy)
        query = {"relationship_id": rid, "query": "what food do I like?"}
        context = await old.post("/v1/context", json=query, headers=headers)
        assert context.status_code == 200, context.text
        assert "辣" in context.json()["context"]
        search = {"query": "spicy hotpot"}
        found = await old.post(f"/v1/relationships/{rid}/search", json=search, headers=headers)
        assert found.status_code == 200, found.text
        assert memories & {item["content"] for item in found.json()["items"]}, found.text
