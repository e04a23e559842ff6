"""The backup's object-store part that needs no store: its index is checked before a
restore touches anything, and a manifest without one (the Postgres backend) reads and
writes as before."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from tether.runtime.backup.files_in import read_index
from tether.runtime.backup.files_out import file_path
from tether.runtime.backup.manifest import (
    INDEX_FILE,
    DatabaseState,
    FileEntry,
    FilesPart,
    Manifest,
)
from tether.runtime.preflight import StartupError

BYTES = [b"first file", b"the second one"]


def _backup(directory: Path) -> FilesPart:
    (directory / "files").mkdir(parents=True)
    entries = []
    for position, data in enumerate(BYTES, start=1):
        file_path(directory, position).write_bytes(data)
        entries.append(
            FileEntry(f"files/t/b/{position}", len(data), hashlib.sha256(data).hexdigest())
        )
    index = b"".join(msgspec.json.encode(e) + b"\n" for e in entries)
    (directory / INDEX_FILE).write_bytes(index)
    return FilesPart(
        INDEX_FILE, len(entries), sum(map(len, BYTES)), hashlib.sha256(index).hexdigest()
    )


def test_a_complete_index_lists_every_file(tmp_path: Path) -> None:
    part = _backup(tmp_path)
    assert [e.key for e in read_index(tmp_path, part)] == ["files/t/b/1", "files/t/b/2"]


def test_a_changed_index_is_refused(tmp_path: Path) -> None:
    part = _backup(tmp_path)
    index = tmp_path / INDEX_FILE
    index.write_bytes(index.read_bytes().replace(b"files/t/b/1", b"../../etc/x"))
    with pytest.raises(StartupError, match="checksum"):
        read_index(tmp_path, part)


def test_a_truncated_file_is_refused(tmp_path: Path) -> None:
    part = _backup(tmp_path)
    file_path(tmp_path, 2).write_bytes(b"short")
    with pytest.raises(StartupError, match="missing or truncated"):
        read_index(tmp_path, part)


def test_a_manifest_without_files_is_as_before() -> None:
    manifest = Manifest(
        format=1,
        tether_version="0",
        created_at=datetime.now(UTC),
        server_version="18",
        pg_dump_version=18,
        consistency="one snapshot",
        state=DatabaseState("0029", {}, {}),
        dump_file="database.dump",
        dump_bytes=1,
        dump_sha256="0" * 64,
    )
    encoded = msgspec.json.encode(manifest)
    assert b'"files"' not in encoded
    assert msgspec.json.decode(encoded, type=Manifest).files is None
