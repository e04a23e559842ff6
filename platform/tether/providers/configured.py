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


def warm_up_embedder(embedder: EmbeddingProvider) -> None:
    """Load a local embedding model now (blocking)."""
    load = getattr(embedder, "warm_up", None)
    if callable(load):
        load()
