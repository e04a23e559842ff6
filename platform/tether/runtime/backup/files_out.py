"""The object-store files a backup carries (decision 0096). With the S3 backend a
document's bytes are not in the dump: the objects the snapshot's documents name are
copied into ``files/``, one file per object (``files/00000001`` …, named by position so
no key from the store becomes a path), streamed a slice at a time, each checked against
the SHA-256 its document recorded at upload. Documents in Postgres need nothing: their
bytes are rows of the dump."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from tether.core.settings import FilesSettings
from tether.knowledge.errors import FileStoreUnavailable, StoredFileMissing
from tether.knowledge.file_deletions import S3_SCHEME
from tether.knowledge.objects import ObjectStore
from tether.runtime.backup.manifest import FILES_DIR, INDEX_FILE, FileEntry, FilesPart
from tether.runtime.backup.progress import Bar
from tether.runtime.preflight import StartupError

_NAMED = text(
    "SELECT substr(storage_key, :skip), size_bytes, sha256 FROM knowledge_documents "
    "WHERE storage_key LIKE :s3 ORDER BY storage_key"
)


@dataclass(frozen=True, slots=True)
class Named:
    """An object a document names, with what its upload recorded."""

    key: str
    size: int
    sha256: str


async def named_objects(conn: AsyncConnection) -> list[Named]:
    """The objects the documents of ``conn``'s snapshot keep in the store."""
    exists = await conn.scalar(text("SELECT to_regclass('knowledge_documents') IS NOT NULL"))
    if not exists:
        return []
    rows = await conn.execute(_NAMED, {"skip": len(S3_SCHEME) + 1, "s3": f"{S3_SCHEME}%"})
    return [Named(str(key), int(size), str(sha)) for key, size, sha in rows]


def file_path(directory: Path, position: int) -> Path:
    return directory / FILES_DIR / f"{position:08d}"


def unavailable(exc: FileStoreUnavailable, files: FilesSettings) -> StartupError:
    return StartupError(
        f"{exc} (s3://{files.bucket})",
        "run `tether doctor`: it probes the store and names what is wrong",
    )


async def _copy(store: ObjectStore, key: str, target: Path) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        async for piece in store.read(key):
            out.write(piece)
            digest.update(piece)
            size += len(piece)
    partial.rename(target)
    return size, digest.hexdigest()


async def copy_out(files: FilesSettings, named: list[Named], directory: Path) -> FilesPart:
    """Copy every named object into ``directory``; what was copied, missing or damaged."""
    if files.bucket is None:
        raise StartupError(
            f"the database names {len(named)} files in an object store, and "
            "TETHER_FILES__BUCKET is not set",
            "set TETHER_FILES__* as the deployment that stored them does",
        )
    store = ObjectStore(files)
    (directory / FILES_DIR).mkdir()
    entries: list[FileEntry] = []
    missing: list[str] = []
    damaged: list[str] = []
    bar = Bar("files copied", len(named))
    bar.show()
    for item in named:
        target = file_path(directory, len(entries) + 1)
        try:
            size, sha = await _copy(store, item.key, target)
        except StoredFileMissing:
            # Deleted since the snapshot (its document with it), or lost by the store.
            missing.append(item.key)
        except FileStoreUnavailable as exc:
            raise unavailable(exc, files) from exc
        else:
            entries.append(FileEntry(item.key, size, sha))
            if sha != item.sha256:
                damaged.append(item.key)
        bar.step()
    index = directory / INDEX_FILE
    index.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in entries))
    total = sum(e.bytes for e in entries)
    bar.finish(f"{total / 2**20:.1f} MB")
    return FilesPart(
        index_file=INDEX_FILE,
        count=len(entries),
        bytes=total,
        index_sha256=hashlib.sha256(index.read_bytes()).hexdigest(),
        missing=missing,
        damaged=damaged,
    )
