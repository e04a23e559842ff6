"""Putting a backup's object-store files back into the configured store (decision 0096).

Checked before anything changes: the index and every file as the manifest says, and the
store, key by key. A key already holding the same bytes is left alone (a restore into the
environment the backup came from copies nothing twice); a key holding other bytes is
refused unless ``--force``, as a database holding data is. Files go up streamed, in the
store's parts, each hashed on the way and compared with the index."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from tether.core.settings import FilesSettings
from tether.knowledge.errors import FileStoreUnavailable
from tether.knowledge.objects import ObjectStore
from tether.runtime.backup.files_out import file_path, unavailable
from tether.runtime.backup.manifest import INDEX_FILE, FileEntry, FilesPart
from tether.runtime.backup.progress import Bar
from tether.runtime.preflight import StartupError

_READ = 1 << 20


def read_index(directory: Path, part: FilesPart) -> list[FileEntry]:
    """The backup's files, each present with its size, or StartupError."""
    index = directory / INDEX_FILE  # never a path from the manifest
    try:
        data = index.read_bytes()
    except OSError as exc:
        raise StartupError(f"{index} is missing ({exc})", "restore a complete backup") from exc
    if hashlib.sha256(data).hexdigest() != part.index_sha256:
        raise StartupError(f"{index} does not match its manifest's checksum", "restore another")
    entries = [msgspec.json.decode(line, type=FileEntry) for line in data.splitlines() if line]
    if len(entries) != part.count:
        shown = f"{index} lists {len(entries)} files, not {part.count}"
        raise StartupError(shown, "restore another")
    for position, entry in enumerate(entries, start=1):
        path = file_path(directory, position)
        if not path.is_file() or path.stat().st_size != entry.bytes:
            raise StartupError(f"{path} is missing or truncated", "restore a complete backup")
    return entries


def _store(files: FilesSettings, count: int) -> ObjectStore:
    if files.bucket is None:
        raise StartupError(
            f"the backup holds {count} files of an object store, and TETHER_FILES__BUCKET "
            "is not set",
            "configure the store the restored documents will be read from (TETHER_FILES__*)",
        )
    return ObjectStore(files)


async def _holds(store: ObjectStore, entry: FileEntry) -> bool | None:
    """None: nothing at the key; True: the same bytes; False: other bytes."""
    size = await store.size(entry.key)
    if size is None:
        return None
    if size != entry.bytes:
        return False
    digest = hashlib.sha256()
    async for piece in store.read(entry.key):
        digest.update(piece)
    return digest.hexdigest() == entry.sha256


async def plan(files: FilesSettings, entries: list[FileEntry], *, force: bool) -> list[int]:
    """The positions of the files to put (those the store lacks, or holds otherwise when
    ``force``); StartupError when it holds other bytes and not ``force``."""
    store = _store(files, len(entries))
    todo: list[int] = []
    other: list[str] = []
    bar = Bar("files checked", len(entries))
    bar.show()
    try:
        for position, entry in enumerate(entries, start=1):
            held = await _holds(store, entry)
            if held is False:
                other.append(entry.key)
            if not held:
                todo.append(position)
            bar.step()
    except FileStoreUnavailable as exc:
        raise unavailable(exc, files) from exc
    bar.finish()
    if other and not force:
        raise StartupError(
            f"the store holds other bytes at {len(other)} of the {len(entries)} keys the "
            f"backup restores (s3://{files.bucket}/{other[0]} …)",
            "restore into an empty bucket or prefix, or pass --force to replace them",
        )
    return todo


def _pieces(path: Path, seen: Callable[[bytes], object]) -> Iterator[memoryview]:
    with path.open("rb") as handle:
        while chunk := handle.read(_READ):
            seen(chunk)
            yield memoryview(chunk)


async def copy_in(
    files: FilesSettings, directory: Path, entries: list[FileEntry], todo: list[int]
) -> list[str]:
    """Put the files at ``todo`` back under their keys; the problems found."""
    store = _store(files, len(entries))
    problems: list[str] = []
    bar = Bar("files restored", len(todo))
    bar.show()
    for position in todo:
        entry, digest = entries[position - 1], hashlib.sha256()
        try:
            await store.put(entry.key, _pieces(file_path(directory, position), digest.update))
        except FileStoreUnavailable as exc:
            raise unavailable(exc, files) from exc
        if digest.hexdigest() != entry.sha256:
            problems.append(f"file {entry.key}: its bytes in the backup changed since it ran")
        bar.step()
    bar.finish(f"{sum(entries[p - 1].bytes for p in todo) / 2**20:.1f} MB")
    return problems
