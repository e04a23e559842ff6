"""How many bytes of documents a tenant stores (its ``knowledge_bytes`` quota): the
uploaded files of documents not deleted, in every base."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tether.core.ids import TenantId
from tether.knowledge.models import KnowledgeDocument


async def stored_knowledge_bytes(session: AsyncSession, tenant_id: TenantId) -> int:
    statement = select(func.coalesce(func.sum(KnowledgeDocument.size_bytes), 0)).where(
        KnowledgeDocument.tenant_id == tenant_id, KnowledgeDocument.deleted_at.is_(None)
    )
    return int(await session.scalar(statement) or 0)
