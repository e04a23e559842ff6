"""Where original uploads are kept: a small key → bytes interface, and a local-disk
implementation under ``<data_dir>/knowledge``. An object store (S3, GCS) implements the
same three methods; the API and the workers must see the same store."""

from __future__ import annotations

import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Protocol

import anyio.to_thread

log = logging.getLogger(__name__)

_KEY = re.compile(r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$")


class DocumentStore(Protocol):
    """Synchronous on purpose: callers run it in a thread (API) or a worker."""

    def put(self, key: str, data: bytes) -> None: ...

    def get(self, key: str) -> bytes:
        """The stored bytes; FileNotFoundError when the key holds nothing."""
        ...

    def delete(self, key: str) -> None:
        """Remove the key; nothing happens when it holds nothing."""
        ...


class LocalDocumentStore:
    """Files under ``root``; a key is a relative path of safe segments (ids, not names)."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def _path(self, key: str) -> Path:
        if not _KEY.match(key):
            raise ValueError(f"not a storage key: {key!r}")
        return self._root / key

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename: a reader never sees half a file.
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def get(self, key: str) -> bytes:
        return self._path(key).read_bytes()

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)


def document_store(data_dir: Path) -> DocumentStore:
    """The store this deployment uses."""
    return LocalDocumentStore(data_dir / "knowledge")


def storage_key(tenant_id: object, base_id: object, document_id: object) -> str:
    """Ids only: user-supplied file names never reach the file system."""
    return f"{tenant_id}/{base_id}/{document_id}"


async def remove_quietly(store: DocumentStore, keys: list[str]) -> None:
    """Delete stored files after a commit: a failure leaves an orphan file (disk, not
    correctness), so it is logged instead of failing a request that already succeeded."""
    for key in keys:
        try:
            await anyio.to_thread.run_sync(store.delete, key)
        except OSError as exc:
            log.warning("stored document %s not removed: %s", key, exc)
