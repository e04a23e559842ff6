"""The providers this process's settings select."""

from __future__ import annotations

from tether.core.settings import Settings
from tether.providers.base import ChatProvider, EmbeddingProvider
from tether.providers.factory import (
    ChatConfig,
    EmbeddingConfig,
    create_chat_provider,
    create_embedding_provider,
)
from tether.recall import text
from tether.recall.weights import RankWeights


def embedding_provider(settings: Settings) -> EmbeddingProvider:
    e = settings.embedding
    return create_embedding_provider(
        EmbeddingConfig(
            kind=e.kind,
            base_url=e.base_url,
            model=e.model,
            api_key=e.api_key.get_secret_value() if e.api_key else None,
            dimension=e.dimension,
            timeout_seconds=e.timeout_seconds,
            max_retries=e.max_retries,
            batch_size=e.batch_size,
        )
    )


def chat_provider(settings: Settings) -> ChatProvider | None:
    c = settings.llm
    return create_chat_provider(
        ChatConfig(
            enabled=c.enabled,
            base_url=c.base_url,
            model=c.model,
            api_key=c.api_key.get_secret_value() if c.api_key else None,
            timeout_seconds=c.timeout_seconds,
            max_retries=c.max_retries,
        )
    )


def rank_weights(settings: Settings) -> RankWeights:
    r = settings.recall
    return RankWeights(
        fusion=r.fusion,
        rrf_k=r.rrf_k,
        min_similarity=r.min_similarity,
        bm25_k1=r.bm25_k1,
        bm25_b=r.bm25_b,
        lexical_weight=r.lexical_weight,
        vector_weight=r.vector_weight,
        neighbour_weight=r.neighbour_weight,
        neighbour_window=r.neighbour_window,
        decay_half_life_days=r.decay_half_life_days,
        decay_floor=r.decay_floor,
        importance_floor=r.importance_floor,
        confidence_floor=r.confidence_floor,
    )


def warm_up(settings: Settings, embedder: EmbeddingProvider) -> None:
    """Load the jieba dictionary and a local embedding model now (blocking)."""
    cache = settings.data_dir / "cache"
    try:
        text.warm_up(cache)
    except OSError:  # a read-only data dir: jieba keeps its cache in the temp dir
        text.warm_up()
    load = getattr(embedder, "warm_up", None)
    if callable(load):
        load()
