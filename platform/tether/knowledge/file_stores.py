"""Where a document's bytes live (decisions 0060, 0083), behind one small interface.

``PostgresFiles`` (the default) keeps them in ``knowledge_file_chunks`` and deletes them
in the deleting transaction. ``ObjectFiles`` keeps them in an S3-compatible store under
``<prefix><tenant>/<base>/<document>`` (one prefix per tenant, one per base) and deletes
them only after the transaction commits (``file_deletions``). A document's
``storage_key`` says which holds it (``postgres:<id>`` or ``s3:<key>``), so documents
uploaded before a deployment switched stores stay readable and deletable.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tether.core.ids import TenantId
from tether.core.settings import FilesSettings
from tether.knowledge.file_deletions import S3_SCHEME, delete_after_commit, guard_upload
from tether.knowledge.files import FileRepository, slices
from tether.knowledge.objects import ObjectStore


class FileStore(Protocol):
    """The stored files of one tenant's documents."""

    async def write(self, base_id: uuid.UUID, document_id: uuid.UUID, data: bytes) -> str:
        """Store the bytes; the document's ``storage_key``."""
        ...

    def stream(self, storage_key: str, document_id: uuid.UUID) -> AsyncIterator[bytes]:
        """The bytes in order, a slice at a time."""
        ...

    async def remove(self, storage_key: str, document_id: uuid.UUID) -> None:
        """Delete the document's bytes (now, or once the transaction commits)."""
        ...

    async def remove_base(self, base_id: uuid.UUID) -> None:
        """Delete every document's bytes of a base being deleted."""
        ...


class PostgresFiles:
    def __init__(self, session: AsyncSession, tenant_id: TenantId) -> None:
        self._files = FileRepository(session, tenant_id)

    async def write(self, base_id: uuid.UUID, document_id: uuid.UUID, data: bytes) -> str:
        await self._files.write(document_id, data)
        return f"postgres:{document_id}"

    def stream(self, storage_key: str, document_id: uuid.UUID) -> AsyncIterator[bytes]:
        return self._files.stream(document_id)

    async def remove(self, storage_key: str, document_id: uuid.UUID) -> None:
        await self._files.remove(document_id)

    async def remove_base(self, base_id: uuid.UUID) -> None:
        """Nothing to do: the slices go with the base by foreign-key cascade."""


class ObjectFiles:
    def __init__(
        self,
        session: AsyncSession,
        sessions: async_sessionmaker[AsyncSession],
        tenant_id: TenantId,
        store: ObjectStore,
    ) -> None:
        self._session = session
        self._sessions = sessions
        self._tenant_id = tenant_id
        self._store = store

    async def write(self, base_id: uuid.UUID, document_id: uuid.UUID, data: bytes) -> str:
        key = self._store.key(self._tenant_id, base_id, document_id)
        # Should this transaction roll back, the object would be an orphan: guarded.
        await guard_upload(self._session, self._sessions, self._tenant_id, key)
        await self._store.put(key, slices(data))
        return S3_SCHEME + key

    def stream(self, storage_key: str, document_id: uuid.UUID) -> AsyncIterator[bytes]:
        return self._store.read(storage_key.removeprefix(S3_SCHEME))

    async def remove(self, storage_key: str, document_id: uuid.UUID) -> None:
        key = storage_key.removeprefix(S3_SCHEME)
        await delete_after_commit(self._session, self._sessions, self._tenant_id, self._store, key)

    async def remove_base(self, base_id: uuid.UUID) -> None:
        prefix = self._store.key(self._tenant_id, base_id, "")
        await delete_after_commit(
            self._session, self._sessions, self._tenant_id, self._store, prefix
        )


class Files:
    """The configured store for new files, and the one holding each existing file."""

    def __init__(
        self,
        session: AsyncSession,
        sessions: async_sessionmaker[AsyncSession],
        tenant_id: TenantId,
        settings: FilesSettings,
    ) -> None:
        self._postgres = PostgresFiles(session, tenant_id)
        self._objects = (
            None
            if settings.bucket is None
            else ObjectFiles(session, sessions, tenant_id, ObjectStore(settings))
        )
        self._new: FileStore = (
            self._objects if settings.backend == "s3" and self._objects else self._postgres
        )

    def _holding(self, storage_key: str) -> FileStore:
        if storage_key.startswith(S3_SCHEME):
            if self._objects is None:
                raise LookupError("the file is in an object store this deployment no longer names")
            return self._objects
        return self._postgres

    async def write(self, base_id: uuid.UUID, document_id: uuid.UUID, data: bytes) -> str:
        return await self._new.write(base_id, document_id, data)

    def stream(self, storage_key: str, document_id: uuid.UUID) -> AsyncIterator[bytes]:
        return self._holding(storage_key).stream(storage_key, document_id)

    async def remove(self, storage_key: str, document_id: uuid.UUID) -> None:
        await self._holding(storage_key).remove(storage_key, document_id)

    async def remove_base(self, base_id: uuid.UUID) -> None:
        # Both: a base may hold documents from before and after a switch of stores.
        await self._postgres.remove_base(base_id)
        if self._objects is not None:
            await self._objects.remove_base(base_id)
