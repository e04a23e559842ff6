"""The TypeScript SDK's own tests (node's test runner) against a live Tether this test
starts: built with tsc first, so a type error fails here too."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.sdk.live import LiveServer

pytestmark = pytest.mark.integration

PACKAGE = Path(__file__).resolve().parents[2] / "sdk" / "typescript"


def test_node_test_runner_passes_against_a_live_tether(live: LiveServer, admin_key: str) -> None:
    if shutil.which("node") is None or not (PACKAGE / "node_modules").exists():
        pytest.fail("Node 20+ and `npm ci` in sdk/typescript are needed (make install does both)")
    subprocess.run(["npm", "run", "--silent", "build"], cwd=PACKAGE, check=True)
    env = os.environ | {"TETHER_TEST_URL": live.url, "TETHER_TEST_ADMIN_KEY": admin_key}
    done = subprocess.run(
        ["node", "--test", "--test-timeout=60000", "test/"],
        cwd=PACKAGE,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "# fail 0" in done.stdout
