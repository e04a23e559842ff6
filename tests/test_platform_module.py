"""`platform/` is a source root, not a package: the standard library must still win."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_platform_from_repo_root_is_the_standard_library() -> None:
    code = "import platform, sys; print(platform.__file__); print(platform.system())"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert "site-packages" not in out[0]
    assert not out[0].startswith(str(REPO))
    assert out[1] in {"Linux", "Darwin", "Windows"}


def test_our_packages_import_from_any_directory(tmp_path: Path) -> None:
    code = "import tether, tenancy, workers.app; print(tether.__version__)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "TETHER_REDIS_URL": "redis://localhost:1/0"},
    )
    assert result.stdout.strip()


def test_no_init_file_makes_platform_a_package() -> None:
    assert not (REPO / "platform" / "__init__.py").exists()
