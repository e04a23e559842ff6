"""Start-up checks that turn common mistakes into one clear line with a fix."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path
from typing import IO


class StartupError(Exception):
    """A reason the service cannot start, phrased for the person who started it."""

    def __init__(self, cause: str, fix: str) -> None:
        super().__init__(f"{cause} — {fix}")
        self.cause = cause
        self.fix = fix


def ensure_writable_dir(path: Path) -> Path:
    """Create ``path`` if needed and prove we can write into it."""
    resolved = path.expanduser().resolve()
    try:
        resolved.mkdir(parents=True, exist_ok=True)
        probe = resolved / ".write-probe"
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:
        raise StartupError(
            f"data directory {resolved} is not writable ({exc.strerror})",
            "set TETHER_DATA_DIR to a directory you own, or fix its permissions",
        ) from exc
    return resolved


def ensure_port_free(host: str, port: int) -> None:
    """Fail early (before starting databases) when the HTTP port is taken."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise StartupError(
                    f"port {port} on {host} is already in use",
                    "stop the other process or set TETHER_PORT to a free port",
                ) from exc
            raise StartupError(
                f"cannot listen on {host}:{port} ({exc.strerror})",
                "set TETHER_HOST/TETHER_PORT to an address this machine has",
            ) from exc


class DataDirLock:
    """An exclusive lock on the data directory so two servers never share one."""

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / "tether.lock"
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        import fcntl  # here, not at the top: the CLI must load where fcntl does not exist

        handle = self._path.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise StartupError(
                f"another tether process (pid {holder}) is using data directory "
                f"{self._path.parent}",
                "stop it first, or give this one its own TETHER_DATA_DIR",
            ) from exc
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            import fcntl

            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None
