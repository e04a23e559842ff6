"""Recall: the relationship's partition (local / Redis / Postgres), the query embedded
with a deadline, ranked by the hybrid ranker; recalled memories are reinforced later."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.principal import Principal
from tenancy.ids import RelationshipScope
from tether.core.ids import TenantId
from tether.core.instruments import record_recall
from tether.core.settings import Settings
from tether.core.telemetry import annotate, traced
from tether.providers.base import EmbeddingProvider, ProviderError
from tether.providers.configured import warm_up_embedder
from tether.recall import text
from tether.recall.expansion import expand
from tether.recall.partition import Partition, RecalledMemory
from tether.recall.period import named_period
from tether.recall.ranker import Explanation, rank
from tether.recall.reinforcement import ReinforcementBuffer
from tether.recall.schemas import ExplanationRead, SearchHit
from tether.recall.store import PartitionStore
from tether.recall.tenant_embedders import TenantEmbedders
from tether.recall.text import tokenize
from tether.recall.weights import RankWeights

# The policy object of creators' private notes.
PRIVATE = "relationship_memory:private"

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Recalled:
    hits: list[tuple[RecalledMemory, Explanation]]
    # The memory whose relevance spread to a hit (its neighbour in the same session).
    neighbours: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)
    latest_summary: RecalledMemory | None = None
    degraded: list[str] = field(default_factory=list)
    tier: str = "cold"
    timings_ms: dict[str, float] = field(default_factory=dict)


def explanation(e: Explanation, neighbour_id: uuid.UUID | None = None) -> ExplanationRead:
    return ExplanationRead(
        lexical_rank=e.lexical_rank,
        lexical_score=e.lexical_score,
        vector_rank=e.vector_rank,
        vector_similarity=e.vector_similarity,
        rrf_score=e.rrf_score,
        fused_score=e.fused_score,
        neighbour_boost=e.neighbour_boost,
        neighbour_id=neighbour_id,
        decay=e.decay,
        importance=e.importance,
        confidence=e.confidence,
        final_score=e.final_score,
        relevant=e.relevant,
        period=e.period,
    )


def hit(record: RecalledMemory, e: Explanation, neighbour_id: uuid.UUID | None = None) -> SearchHit:
    return SearchHit(
        id=record.id,
        external_id=record.external_id,
        content=record.content,
        memory_type=record.memory_type,
        layer=record.layer,
        occurred_at=record.occurred_at,
        score=e.final_score,
        explanation=explanation(e, neighbour_id),
    )


def may_see_private(enforcer: PolicyEnforcer, principal: Principal, action: str = "read") -> bool:
    """Creators' private notes: only for roles a policy grants them (never pool operators)."""
    return enforcer.decide(principal.role.value, PRIVATE, action).allowed


def warm_up(settings: Settings, embedder: EmbeddingProvider) -> None:
    """Load the tokenizer's dictionary and a local embedding model now (blocking; before
    the first request, and before a worker forks)."""
    try:
        text.warm_up(settings.data_dir / "cache")
    except OSError:  # a read-only data dir: jieba keeps its cache in the temp dir
        text.warm_up()
    warm_up_embedder(embedder)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


class Recall:
    """One relationship's memories, ranked for a query."""

    def __init__(
        self,
        session: AsyncSession,
        store: PartitionStore,
        embedders: TenantEmbedders,
        reinforcement: ReinforcementBuffer,
        weights: RankWeights,
        settings: Settings,
    ) -> None:
        self._session = session
        self._store = store
        self._embedders = embedders
        self._reinforcement = reinforcement
        self._weights = weights
        self._settings = settings

    @traced("recall.embed")
    async def _embed(
        self, query: str, embedder: EmbeddingProvider
    ) -> npt.NDArray[np.float32] | None:
        timeout = self._settings.embedding.query_timeout_ms / 1000
        try:
            vectors = await asyncio.wait_for(embedder.embed([query]), timeout)
        except (ProviderError, TimeoutError) as exc:
            log.warning(
                "query embedding unavailable, recall is lexical only: %s", type(exc).__name__
            )
            return None
        row: npt.NDArray[np.float32] = vectors[0]
        return row

    @traced("recall")
    async def recall(
        self,
        scope: RelationshipScope,
        query: str,
        k: int,
        *,
        types: Sequence[str] | None = None,
        layers: Sequence[str] | None = None,
        include_private: bool = False,
        reinforce: bool = True,
    ) -> Recalled:
        """The relationship's best ``k`` memories for ``query``. ``reinforce=False`` (a
        dry run: the console's playground) leaves their strength as it was."""
        started = time.perf_counter()
        embedded_at: list[float] = []
        # The tenant's model (decision 0077): the query is embedded by it, and only
        # vectors it made are compared with the query's.
        embedder = await self._embedders.for_tenant(TenantId(scope.tenant_id))

        async def embed() -> npt.NDArray[np.float32] | None:
            try:
                return await self._embed(query, embedder)
            finally:  # when it finished, not when recall got to it (after a cold read)
                embedded_at.append(_ms(started))

        embedding = asyncio.ensure_future(embed())
        tokens = expand(tokenize(query))  # paraphrases and the other language (0054)
        try:
            partition, redis_down = await self._store.load(
                self._session, scope, embedding, tokens, embedder.name
            )
        except BaseException:
            embedding.cancel()
            raise
        loaded = _ms(started)
        vector = await embedding
        embedded = embedded_at[0]
        result = Recalled([], tier=partition.source)
        if redis_down:
            result.degraded.append("redis")
        if vector is None:
            result.degraded.append("embedding")
        ranking_started = time.perf_counter()
        now = datetime.now(UTC)
        visible = partition.visible(now, include_private)
        period = named_period(query, now)  # "in May 2023", 上个月 (0091)
        in_period = None if period is None else period.holds(partition.occurred)
        ranked = self._rank(
            partition,
            tokens,
            vector,
            k,
            visible & partition.allowed(types, layers),
            now,
            in_period,
        )
        # A caller held to some layers (a pool operator) gets no summary from others.
        summarised = visible if layers is None else visible & partition.allowed(None, layers)
        latest = partition.latest_summary(summarised)
        ranked_ms = _ms(ranking_started)
        texts_started = time.perf_counter()
        allowed = _Allowed(now, include_private, types, layers)
        await self._read_results(result, scope, partition, ranked, latest, allowed)
        result.timings_ms = {
            "load": loaded,
            "embed": embedded,
            "rank": ranked_ms,
            "texts": _ms(texts_started),
            "recall": _ms(started),
        }
        record_recall(result.tier, result.timings_ms)
        annotate(
            tenant_id=scope.tenant_id,
            relationship_id=scope.relationship_id,
            attributes={"tether.recall.tier": result.tier, "tether.recall.hits": len(result.hits)},
        )
        if result.hits and reinforce:
            self._reinforcement.add(scope, (r.id for r, _ in result.hits))
        return result

    async def _read_results(
        self,
        result: Recalled,
        scope: RelationshipScope,
        partition: Partition,
        ranked: list[tuple[int, Explanation]],
        latest: int | None,
        allowed: _Allowed,
    ) -> None:
        """``result``'s hits, neighbours and latest summary, from the memories of the
        rows ranked and of the latest visible summary."""
        wanted = [row for row, _ in ranked] + ([] if latest is None else [latest])
        found = await self._store.recalled(self._session, scope, partition, wanted)
        # Read after the ranking for a cold partition: a memory that a write made
        # inactive since has none, and one a write moved out of what the caller asked
        # for or may see is dropped; both are left out, as a read a moment later would.
        records = {row: memory for row, memory in found.items() if allowed(memory)}
        result.hits = [(records[row], e) for row, e in ranked if row in records]
        result.neighbours = {
            records[row].id: partition.memory_id(e.neighbour_key)
            for row, e in ranked
            if row in records and e.neighbour_key is not None
        }
        result.latest_summary = None if latest is None else records.get(latest)

    @traced("recall.rank")
    def _rank(
        self,
        partition: Partition,
        tokens: list[str],
        vector: npt.NDArray[np.float32] | None,
        k: int,
        allowed: npt.NDArray[np.bool_],
        now: datetime,
        in_period: npt.NDArray[np.bool_] | None,
    ) -> list[tuple[int, Explanation]]:
        if partition.terms is not None and not set(tokens) <= set(partition.terms):
            raise ValueError("a partition read for one query ranks that query only")
        return rank(
            tokens,
            vector,
            partition.index,
            k,
            now,
            self._weights,
            similarity=partition.similarity,
            allowed=allowed,
            in_period=in_period,
        )


@dataclass(frozen=True, slots=True)
class _Allowed:
    """Whether the caller may receive a memory: what ``Partition.visible`` and
    ``allowed`` test of a partition's rows, tested of the memory as read for the response."""

    now: datetime
    include_private: bool
    types: Sequence[str] | None
    layers: Sequence[str] | None

    def __call__(self, memory: RecalledMemory) -> bool:
        return (
            memory.expires_at > self.now.timestamp()
            and (self.include_private or not memory.private_to_creator)
            and (self.types is None or memory.memory_type in self.types)
            and (self.layers is None or memory.layer in self.layers)
        )
