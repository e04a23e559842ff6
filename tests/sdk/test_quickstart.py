"""The README's quickstart runs as written: its commands and files are extracted from the
README and run, in order, against a live Tether with a worker (as `make run` is)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.sdk.live import LiveServer
from tether.core.settings import Settings
from tether.runtime.serve import worker_env

pytestmark = [pytest.mark.integration, pytest.mark.worker]

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def quickstart() -> tuple[list[str], dict[str, str]]:
    """The shell commands (``$ `` lines) and the files (a block after "`name`:")."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("<!-- quickstart:start -->")[1].split("<!-- quickstart:end -->")[0]
    commands: list[str] = []
    files: dict[str, str] = {}
    for match in BLOCK.finditer(section):
        kind, body = match.groups()
        if kind == "console":
            commands += [line[2:] for line in body.splitlines() if line.startswith("$ ")]
        else:
            before = section[: match.start()].rstrip().splitlines()[-1]
            name = re.fullmatch(r"`([\w.]+)`:", before)
            assert name, f"a {kind} block in the quickstart needs a file name before it"
            files[name.group(1)] = body
    return commands, files


def test_the_quickstart_extracts_three_commands_and_a_file() -> None:
    commands, files = quickstart()
    assert len(commands) == 3
    assert list(files) == ["quickstart.py"]


def test_the_readme_quickstart_runs_as_written(
    tmp_path: Path, settings: Settings, live: LiveServer, celery_worker: subprocess.Popen[bytes]
) -> None:
    commands, files = quickstart()
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    for shared in (".venv", "examples"):
        (tmp_path / shared).symlink_to(ROOT / shared)
    # The shell of a user next to `make run`: its database for the CLI, its URL for the SDK.
    env = worker_env(settings) | {"TETHER_URL": live.url}
    outputs = []
    for command in commands:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, f"$ {command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        outputs.append(done.stdout)
    assert "火锅" in outputs[1]  # the chat turn's messages
    demo = outputs[2]
    assert "🧠" in demo  # memories were extracted from the first session
    second = demo.split("session 2")[1]
    assert "[memory," in second
    assert "吃辣" in second.split("🌙")[0]  # Luna recalls last time: the user loves spicy food
