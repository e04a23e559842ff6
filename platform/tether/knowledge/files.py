"""Uploaded files, in Postgres (decision 0060): the bytes of a document as slices of
``SLICE_BYTES`` in ``knowledge_file_chunks``, written in the upload's transaction and
read by whichever worker indexes it. No pod keeps a file of its own, so any API or
worker pod serves any document, and a restart loses nothing.

Slices, not one value: no statement carries more than a slice, a reader receives them
one at a time (a server-side cursor), and the tenant's row security holds as on every
other table. Deleting the document (or its base, or its tenant) deletes them.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

from sqlalchemy import delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from tether.core.ids import TenantId
from tether.knowledge.models import KnowledgeFileChunk

# 256 KiB: a 20 MB upload is 80 rows; each stays well under TOAST's limits and the
# asyncpg message size, and a reader holds one slice at a time.
SLICE_BYTES = 256 * 1024


def slices(data: bytes | memoryview, size: int = SLICE_BYTES) -> list[memoryview]:
    """Views into ``data`` (no copies) of at most ``size`` bytes each."""
    view = memoryview(data)
    return [view[start : start + size] for start in range(0, len(view), size)]


class FileRepository:
    """The stored files of one tenant's documents."""

    def __init__(self, session: AsyncSession, tenant_id: TenantId) -> None:
        self._session = session
        self._tenant_id = tenant_id

    async def write(self, document_id: uuid.UUID, data: bytes | memoryview) -> int:
        """Store the file's bytes slice by slice; the number of slices written."""
        count = 0
        for seq, piece in enumerate(slices(data)):
            await self._session.execute(
                insert(KnowledgeFileChunk).values(
                    tenant_id=self._tenant_id, document_id=document_id, seq=seq, data=bytes(piece)
                )
            )
            count += 1
        return count

    async def stream(self, document_id: uuid.UUID) -> AsyncIterator[bytes]:
        """The file's slices in order, fetched one at a time."""
        statement = (
            select(KnowledgeFileChunk.data)
            .where(
                KnowledgeFileChunk.tenant_id == self._tenant_id,
                KnowledgeFileChunk.document_id == document_id,
            )
            .order_by(KnowledgeFileChunk.seq)
            .execution_options(yield_per=1)
        )
        result = await self._session.stream_scalars(statement)
        async for piece in result:
            yield piece

    async def size(self, document_id: uuid.UUID) -> int | None:
        """The stored bytes of the file; None when nothing is stored for it."""
        statement = select(
            func.count(), func.coalesce(func.sum(func.octet_length(KnowledgeFileChunk.data)), 0)
        ).where(
            KnowledgeFileChunk.tenant_id == self._tenant_id,
            KnowledgeFileChunk.document_id == document_id,
        )
        rows, total = (await self._session.execute(statement)).one()
        return None if not rows else int(total)

    async def remove(self, document_id: uuid.UUID) -> None:
        await self._session.execute(
            delete(KnowledgeFileChunk).where(
                KnowledgeFileChunk.tenant_id == self._tenant_id,
                KnowledgeFileChunk.document_id == document_id,
            )
        )
