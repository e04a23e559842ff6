"""Several processes on one embedded Redis: the last live holder stops it, so a CLI
command that joined a running ``tether serve`` does not stop the service's Redis."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.runtime.embedded_redis import EmbeddedRedis, _ping

pytestmark = pytest.mark.integration

# Another process holding the server until its stdin closes.
JOINER = """
import sys
from pathlib import Path
from tether.runtime.embedded_redis import EmbeddedRedis
redis = EmbeddedRedis(Path(sys.argv[1]))
redis.start()
print("joined", flush=True)
sys.stdin.read()
redis.stop()
"""


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Short: the socket path must fit a unix socket's.
    path = Path(tempfile.mkdtemp(prefix="er", dir="/tmp"))
    yield path
    if _ping(path / "redis" / "redis.sock"):  # a failed test left it running
        os.kill(int((path / "redis" / "redis.pid").read_text()), signal.SIGKILL)
    shutil.rmtree(path, ignore_errors=True)


def _joiner(data_dir: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", JOINER, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "joined"
    return process


def _leave(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(30) == 0


def test_a_process_that_joined_leaves_the_server_running_for_its_starter(
    data_dir: Path,
) -> None:
    starter = EmbeddedRedis(data_dir)
    starter.start()
    _leave(_joiner(data_dir))  # e.g. `tether reindex` next to `tether serve`
    assert _ping(starter.socket_path)
    starter.stop()
    assert not _ping(starter.socket_path)


def test_a_starter_that_stops_first_leaves_it_to_the_last_holder(data_dir: Path) -> None:
    starter = EmbeddedRedis(data_dir)
    starter.start()
    joined = _joiner(data_dir)
    starter.stop()
    assert _ping(starter.socket_path)  # the joiner still uses it
    _leave(joined)
    assert not _ping(starter.socket_path)


def test_a_holder_killed_before_it_stopped_does_not_keep_the_server(data_dir: Path) -> None:
    starter = EmbeddedRedis(data_dir)
    starter.start()
    killed = _joiner(data_dir)
    killed.send_signal(signal.SIGKILL)
    killed.wait(30)
    assert (data_dir / "redis" / "holders" / str(killed.pid)).exists()
    starter.stop()
    assert not _ping(starter.socket_path)
    assert not list((data_dir / "redis" / "holders").iterdir())
