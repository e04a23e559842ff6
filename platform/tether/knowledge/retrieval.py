"""Knowledge for the context builder: the base that applies, queried with a deadline.

Which base: the one named (it must be bound to the relationship's persona or be one the
tenant shares, bound to no persona: another persona's base is not found), else the base
bound to the relationship's persona, else the tenant's default base. None applies: no passages and
``knowledge_unavailable``. Past the deadline: no passages and ``knowledge_timeout``;
this never raises for that.
"""

from __future__ import annotations

import time
import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from tether.core.ids import TenantId
from tether.knowledge.engine import (
    KNOWLEDGE_TIMEOUT,
    KNOWLEDGE_UNAVAILABLE,
    KnowledgeHit,
    KnowledgeResult,
    RagEngine,
)
from tether.knowledge.errors import KnowledgeBaseNotFound
from tether.knowledge.repositories import KnowledgeBaseRepository

__all__ = ["KnowledgeHit", "KnowledgeResult", "choose_base", "knowledge_for_context"]


async def choose_base(
    session: AsyncSession,
    tenant_id: TenantId,
    creator_persona_id: uuid.UUID,
    knowledge_base_id: uuid.UUID | None,
) -> uuid.UUID | None:
    """The base that serves this persona's relationship (see the module docstring).

    Raises:
        KnowledgeBaseNotFound: ``knowledge_base_id`` may not serve this persona.
    """
    bases = KnowledgeBaseRepository(session, tenant_id)
    if knowledge_base_id is None:
        return await bases.serving(creator_persona_id)
    if not await bases.serves(knowledge_base_id, creator_persona_id):
        raise KnowledgeBaseNotFound(f"no knowledge base {knowledge_base_id}")
    return knowledge_base_id


async def knowledge_for_context(
    session: AsyncSession,
    tenant_id: TenantId,
    creator_persona_id: uuid.UUID,
    knowledge_base_id: uuid.UUID | None,
    query: str,
    top_k: int,
    timeout_ms: int,
    engine: RagEngine,
) -> KnowledgeResult:
    """The ``top_k`` passages for ``query`` from the base that applies, within
    ``timeout_ms`` (choosing the base counts against it).

    Args:
        session: the request's session (one indexed read chooses the base).
        tenant_id: the caller's tenant (from its key).
        creator_persona_id: the persona of the relationship the context is for.
        knowledge_base_id: a base the caller named, or None for the persona's.
        engine: the process's engine (``tether.knowledge.deps.knowledge_engine``).

    Raises:
        KnowledgeBaseNotFound: a named base may not serve this persona (404).
    """
    started = time.perf_counter()
    base_id = await choose_base(session, tenant_id, creator_persona_id, knowledge_base_id)
    if base_id is None:
        return KnowledgeResult(None, degraded=[KNOWLEDGE_UNAVAILABLE])
    remaining = timeout_ms - (time.perf_counter() - started) * 1000
    if remaining <= 0:
        return KnowledgeResult(base_id, degraded=[KNOWLEDGE_TIMEOUT])
    return await engine.query(tenant_id, base_id, query, top_k, max(int(remaining), 1))
