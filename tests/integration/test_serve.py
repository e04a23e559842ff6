"""`tether serve` on the embedded default, as a user runs it."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _env(data_dir: Path, port: int) -> dict[str, str]:
    return os.environ | {"TETHER_DATA_DIR": str(data_dir), "TETHER_PORT": str(port)}


def _serve(data_dir: Path, port: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "serve"],
        env=_env(data_dir, port),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_healthy(port: int, server: subprocess.Popen[str], timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    last: dict = {}
    while time.monotonic() < deadline:
        assert server.poll() is None, server.stderr.read() if server.stderr else ""
        try:
            last = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json()
            if last.get("status") == "ok":
                return last
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"not healthy within {timeout}s: {last}")


def _children_using(data_dir: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(data_dir) in cmdline and proc.pid != os.getpid():
            found.append(proc)
    return found


def _stop(server: subprocess.Popen[str]) -> None:
    server.send_signal(signal.SIGINT)
    assert server.wait(60) in (0, 130)


def test_serve_runs_restarts_with_data_and_leaves_nothing_behind(tmp_path: Path) -> None:
    data_dir, port = tmp_path / "d", _free_port()
    server = _serve(data_dir, port)
    try:
        health = _wait_healthy(port, server)
        assert all(c["status"] == "ok" for c in health["components"].values())
        # The hot tier in a Redis of its own, without persistence (decision 0021).
        assert health["components"]["hot_redis"]["detail"] == "reachable"
        assert "appendonly no" in (data_dir / "redis-cache" / "redis.conf").read_text()
        created = subprocess.run(
            [sys.executable, "-m", "tether.cli", "tenant", "create", "kept"],
            env=_env(data_dir, port),
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        token = json.loads(created.stdout)["admin_token"]

        second = subprocess.run(
            [sys.executable, "-m", "tether.cli", "serve"],
            env=_env(data_dir, _free_port()),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 1
        assert "another tether process" in second.stderr
    finally:
        _stop(server)
    time.sleep(0.5)
    assert _children_using(data_dir) == []

    server = _serve(data_dir, port)
    try:
        _wait_healthy(port, server)
        keys = httpx.get(
            f"http://127.0.0.1:{port}/v1/api-keys",
            headers={"Authorization": f"Bearer {token}"},
            timeout=5,
        )
        assert keys.status_code == 200, keys.text
    finally:
        _stop(server)


def test_serve_on_a_taken_port_says_so(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "tether.cli", "serve"],
            env=_env(tmp_path / "d", port),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1
    assert f"port {port}" in result.stderr
    assert "Fix:" in result.stderr


def test_serve_with_unwritable_data_dir_says_so(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = subprocess.run(
        [sys.executable, "-m", "tether.cli", "serve"],
        env=_env(blocker / "sub", _free_port()),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "not writable" in result.stderr
