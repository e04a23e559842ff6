"""Build providers from plain configuration (the settings layer maps onto these)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tether.providers.base import ChatProvider, EmbeddingProvider
from tether.providers.offline import MODEL_DIMENSION, OfflineEmbeddingProvider
from tether.providers.openai_chat import OpenAIChatProvider
from tether.providers.openai_embeddings import OpenAICompatibleEndpoint, OpenAIEmbeddingProvider


@dataclass(frozen=True, slots=True)
class EmbeddingConfig:
    """Which embedding model to use; ``base_url``, ``model`` and ``dimension`` are for openai."""

    kind: Literal["offline", "openai"] = "offline"
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    dimension: int | None = None
    timeout_seconds: float = 2.0
    max_retries: int = 2
    batch_size: int = 64


@dataclass(frozen=True, slots=True)
class ChatConfig:
    """The LLM used for extraction; disabled means the rule-based paths only."""

    enabled: bool = False
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timeout_seconds: float = 20.0
    max_retries: int = 2


def create_embedding_provider(cfg: EmbeddingConfig) -> EmbeddingProvider:
    """The configured embedder; ValueError when the configuration is incomplete."""
    if cfg.kind == "offline":
        if cfg.dimension is not None and cfg.dimension != MODEL_DIMENSION:
            raise ValueError(
                f"the offline embedder has dimension {MODEL_DIMENSION}, not {cfg.dimension}"
            )
        return OfflineEmbeddingProvider(batch_size=cfg.batch_size)
    if cfg.kind == "openai":
        base_url, model = _require_endpoint("embedding", cfg.base_url, cfg.model)
        if cfg.dimension is None:
            raise ValueError(
                "an openai embedding provider needs its dimension (TETHER_EMBEDDING__DIMENSION)"
            )
        endpoint = OpenAICompatibleEndpoint(
            base_url,
            api_key=cfg.api_key,
            timeout_seconds=cfg.timeout_seconds,
            max_retries=cfg.max_retries,
        )
        return OpenAIEmbeddingProvider(
            endpoint, model=model, dimension=cfg.dimension, batch_size=cfg.batch_size
        )
    raise ValueError(f"unknown embedding kind {cfg.kind!r}")


def create_chat_provider(cfg: ChatConfig) -> ChatProvider | None:
    """The configured chat LLM, or None when it is disabled."""
    if not cfg.enabled:
        return None
    base_url, model = _require_endpoint("llm", cfg.base_url, cfg.model)
    endpoint = OpenAICompatibleEndpoint(
        base_url,
        api_key=cfg.api_key,
        timeout_seconds=cfg.timeout_seconds,
        max_retries=cfg.max_retries,
    )
    return OpenAIChatProvider(endpoint, model=model)


def _require_endpoint(section: str, base_url: str | None, model: str | None) -> tuple[str, str]:
    if not base_url or not model:
        prefix = f"TETHER_{section.upper()}__"
        raise ValueError(f"the {section} provider needs {prefix}BASE_URL and {prefix}MODEL")
    return base_url, model
