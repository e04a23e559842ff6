"""The embedded Postgres's buffer pool: sized at start, restored after a restart, never
left unable to start.

A cold read of a large relationship reads every page holding one of its rows; with
Postgres's default pool (128 MB) those pages come from the OS cache on every read
(docs/benchmarks.md#recall-layout), so the embedded runtime sizes the pool."""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.core.settings import Settings
from tether.runtime import embedded_postgres
from tether.runtime.embedded_postgres import (
    PRELOADED,
    EmbeddedPostgres,
    default_shared_buffers_mb,
)
from tether.runtime.preflight import StartupError
from tether.runtime.services import backing_services

pytestmark = pytest.mark.integration

_POSTGRES_DEFAULT_MB = 128


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Short: the socket path must fit a unix socket's.
    path = Path(tempfile.mkdtemp(prefix="ep", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _started(data_dir: Path, megabytes: int | None) -> EmbeddedPostgres:
    server = EmbeddedPostgres(data_dir, shared_buffers_mb=megabytes)
    server.start()
    return server


def test_a_server_it_starts_runs_with_the_pool_asked_for(data_dir: Path) -> None:
    server = _started(data_dir, 48)
    try:
        assert server.shared_buffers_mb() == 48
    finally:
        server.stop()
    # And again on a later start of the same data directory, with another size.
    server = _started(data_dir, 64)
    try:
        assert server.shared_buffers_mb() == 64
    finally:
        server.stop()
    server = _started(data_dir, None)  # no size asked: the last one set
    try:
        assert server.shared_buffers_mb() == 64
    finally:
        server.stop()


def test_a_server_says_whether_its_pool_is_on_huge_pages_and_how_many_it_would_take(
    data_dir: Path,
) -> None:
    server = _started(data_dir, 64)
    try:
        assert server.huge_pages() in {"on", "off"}
        if sys.platform == "linux":  # 64 MB and the rest of its shared memory, in 2 MB pages
            assert 32 < server.huge_pages_needed() < 64
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("pool_mb", "status", "needed", "hinted"),
    [
        (6026, "off", 3105, True),
        (1024, "off", 3105, True),
        (1023, "off", 3105, False),
        (6026, "on", 3105, False),
        (6026, "off", -1, False),  # a system without huge pages (macOS)
    ],
)
def test_a_large_pool_on_small_pages_earns_a_hint_to_reserve_huge_pages(
    pool_mb: int, status: str, needed: int, hinted: bool
) -> None:
    hint = embedded_postgres.huge_pages_hint(pool_mb, status, needed)
    assert (hint is not None) == hinted
    if hint is not None:
        assert "vm.nr_hugepages=3105" in hint


def _table_pages_in_pool(server: EmbeddedPostgres) -> int:
    shown = server.psql(
        "SELECT 'pages=' || count(*) FROM pg_buffercache"
        " WHERE relfilenode = pg_relation_filenode('warm_probe');"
    )
    found = re.search(r"pages=(\d+)", shown)
    assert found is not None, shown
    return int(found[1])


def test_a_restart_restores_what_the_pool_held(data_dir: Path) -> None:
    server = _started(data_dir, 48)
    try:
        assert PRELOADED in server.preloaded()
        server.psql(
            "CREATE EXTENSION IF NOT EXISTS pg_buffercache;"
            " CREATE TABLE warm_probe AS SELECT g, repeat('x', 500) AS t"
            " FROM generate_series(1, 20000) g;"
            " SELECT count(*) FROM warm_probe;"
        )
        held = _table_pages_in_pool(server)
        assert held > 1000
    finally:
        server.stop()  # autoprewarm records the pool's pages at shutdown
    server = _started(data_dir, None)
    try:
        # Read back in the background after the start: wait for it.
        deadline = time.monotonic() + 30
        while _table_pages_in_pool(server) < held and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _table_pages_in_pool(server) >= held
    finally:
        server.stop()


def test_a_server_another_holder_started_keeps_its_pool_until_its_next_start(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = _started(data_dir, 48)
    try:
        with caplog.at_level(logging.WARNING, logger=embedded_postgres.__name__):
            joined = _started(data_dir, 96)
        assert joined.shared_buffers_mb() == 48  # not restarted under the first holder
        assert "becomes 96 MB (and is restored after restarts) when it next starts" in caplog.text
        joined.stop()
    finally:
        first.stop()
    server = _started(data_dir, None)
    try:
        assert server.shared_buffers_mb() == 96
    finally:
        server.stop()


def test_a_pid_file_a_crash_left_behind_is_no_other_holder(data_dir: Path) -> None:
    pid_file = data_dir / "postgres" / "postmaster.pid"
    server = _started(data_dir, 48)
    left = pid_file.read_text().splitlines(keepends=True)
    server.stop()
    # As after a crash: the file names a process that is gone (one that ran and was
    # reaped; the stopped server's own pid may linger here as our unreaped child).
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    pid_file.write_text("".join([f"{gone}\n", *left[1:]]))
    server = _started(data_dir, 64)
    try:
        assert server.shared_buffers_mb() == 64  # restarted: nobody else held it
    finally:
        server.stop()


def test_a_pool_as_large_as_the_memory_is_refused_before_anything_starts(
    data_dir: Path,
) -> None:
    with pytest.raises(StartupError, match="TETHER_EMBEDDED_SHARED_BUFFERS_MB"):
        EmbeddedPostgres(data_dir, shared_buffers_mb=262_144).start()
    assert not (data_dir / "postgres" / "postmaster.pid").exists()


def test_a_pool_the_machine_cannot_give_is_given_up_for_the_default(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The memory unknown, so not refused up front: Postgres itself fails to map it.
    monkeypatch.setattr(embedded_postgres, "_memory_bytes", lambda: None)
    with caplog.at_level(logging.WARNING, logger=embedded_postgres.__name__):
        server = _started(data_dir, 262_144)
    try:
        assert server.shared_buffers_mb() == _POSTGRES_DEFAULT_MB
        assert "did not start with the buffer pool set for it" in caplog.text
    finally:
        server.stop()
    auto = (data_dir / "postgres" / "postgresql.auto.conf").read_text()
    assert "shared_buffers" not in auto  # so the next start does not fail either
    assert "shared_preload_libraries" not in auto
    server = _started(data_dir, None)
    try:
        assert server.shared_buffers_mb() == _POSTGRES_DEFAULT_MB
    finally:
        server.stop()


def test_the_embedded_runtime_sizes_the_pool_from_its_settings(data_dir: Path) -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, data_dir=data_dir, embedded_shared_buffers_mb=40
    )
    with backing_services(settings, need_redis=False) as live:
        url = live.require_database_url()
        server = EmbeddedPostgres(data_dir)  # joins the running server
        server.start()
        try:
            assert server.shared_buffers_mb() == 40
        finally:
            server.stop()
    assert url


@pytest.mark.parametrize(
    ("memory_mb", "expected_mb"),
    [(None, 128), (256, 128), (4096, 256), (8192, 512), (16_384, 1024), (100_000, 1024)],
)
def test_the_default_pool_is_a_sixteenth_of_the_memory_capped_for_a_laptop(
    monkeypatch: pytest.MonkeyPatch, memory_mb: int | None, expected_mb: int
) -> None:
    memory = None if memory_mb is None else memory_mb * 2**20
    monkeypatch.setattr(embedded_postgres, "_memory_bytes", lambda: memory)
    assert default_shared_buffers_mb() == expected_mb


@pytest.mark.parametrize(("limit", "capped"), [("1073741824\n", True), ("max\n", False)])
def test_a_cgroup_memory_limit_below_the_machines_is_the_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, capped: bool
) -> None:
    cgroup = tmp_path / "memory.max"
    cgroup.write_text(limit)
    monkeypatch.setattr(embedded_postgres, "_CGROUP_LIMIT", cgroup)
    memory = embedded_postgres._memory_bytes()
    assert memory is not None
    assert (memory == 2**30) is capped
