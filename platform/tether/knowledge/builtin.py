"""The built-in engine: our chunks in Postgres, ranked in-process by the same hybrid
ranker as memory recall (BM25 over jieba tokens + cosine, fused; one implementation,
two corpora). Chunks have no age and no importance: time decay and neighbour spreading
are switched off for them, so their score is the fused relevance alone."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Coroutine
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tether.core.ids import TenantId
from tether.core.settings import Settings
from tether.knowledge.engine import KNOWLEDGE_TIMEOUT, IngestReport, KnowledgeHit, KnowledgeResult
from tether.knowledge.index_cache import ChunkRecord, KnowledgeIndexCache
from tether.knowledge.indexing import DocumentIndexer
from tether.providers.base import EmbeddingProvider, ProviderError
from tether.recall.ranker import Explanation, rank
from tether.recall.services import explanation
from tether.recall.tenant_embedders import TenantEmbedders
from tether.recall.text import tokenize
from tether.recall.weights import RankWeights

log = logging.getLogger(__name__)

T = TypeVar("T")


def knowledge_weights(weights: RankWeights) -> RankWeights:
    """The recall weights without the signals documents do not have."""
    return replace(weights, decay_floor=1.0, neighbour_weight=0.0)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


def _hit(record: ChunkRecord, e: Explanation) -> KnowledgeHit:
    return KnowledgeHit(
        id=record.id,
        document_id=record.document_id,
        text=record.text,
        source=record.source,
        filename=record.filename,
        page=record.page,
        section=record.section,
        score=e.final_score,
        explanation=explanation(e),
    )


class BuiltinRagEngine:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        embedders: TenantEmbedders,
        weights: RankWeights,
        settings: Settings,
    ) -> None:
        """``embedders``: each tenant's embedding model, which makes its chunks' vectors
        and its queries' (decision 0077)."""
        self._sessions = sessions
        self._embedders = embedders
        self._weights = knowledge_weights(weights)
        self._settings = settings
        self._cache = KnowledgeIndexCache(sessions, self._weights, embedders.default.name)
        # Work that outlives a missed deadline finishes in the background (a load then
        # serves the next query); it is referenced here until it does.
        self._background: set[asyncio.Task[Any]] = set()

    async def ingest(self, tenant_id: TenantId, document_id: uuid.UUID) -> IngestReport:
        embedder = await self._embedders.for_tenant(tenant_id)
        indexer = DocumentIndexer(
            self._sessions, tenant_id, embedder, self._settings.knowledge, self._settings.files
        )
        return await indexer.run(document_id)

    def _task(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        # Retrieved here too: after a missed deadline nobody awaits the task any more.
        if not task.cancelled() and task.exception() is not None:
            log.warning("knowledge background work failed: %r", task.exception())

    async def _embed(
        self, query: str, embedder: EmbeddingProvider
    ) -> npt.NDArray[np.float32] | None:
        timeout = self._settings.embedding.query_timeout_ms / 1000
        try:
            vectors = await asyncio.wait_for(embedder.embed([query]), timeout)
        except (ProviderError, TimeoutError) as exc:
            log.warning("knowledge query embedding unavailable: %s", type(exc).__name__)
            return None
        row: npt.NDArray[np.float32] = vectors[0]
        return row

    async def query(
        self,
        tenant_id: TenantId,
        knowledge_base_id: uuid.UUID,
        query: str,
        top_k: int,
        timeout_ms: int | None,
    ) -> KnowledgeResult:
        started = time.perf_counter()
        result = KnowledgeResult(knowledge_base_id)
        embedder = await self._embedders.for_tenant(tenant_id)
        loading = self._task(self._cache.view(tenant_id, knowledge_base_id, embedder.name))
        embedding = self._task(self._embed(query, embedder))
        tokens = tokenize(query)
        try:
            async with asyncio.timeout(None if timeout_ms is None else timeout_ms / 1000):
                view = await asyncio.shield(loading)
                result.timings_ms["load"] = _ms(started)
                vector = await asyncio.shield(embedding)
                result.timings_ms["embed"] = _ms(started)
        except TimeoutError:
            result.degraded.append(KNOWLEDGE_TIMEOUT)
            result.timings_ms["total"] = _ms(started)
            return result
        if vector is None:
            result.degraded.append("embedding")
        ranking = time.perf_counter()
        ranked = rank(tokens, vector, view.index, top_k, datetime.now(UTC), self._weights)
        result.hits = [_hit(view.records[key], e) for key, e in ranked]
        result.timings_ms["rank"] = _ms(ranking)
        result.timings_ms["total"] = _ms(started)
        return result
