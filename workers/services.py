"""Per-process services of a worker that are not plain resources: the embedding model
(loaded once per process) and the version tokens its writes replace."""

from __future__ import annotations

import os
from dataclasses import dataclass

from tenancy.settings.cache import TenantSettingsCache
from tether.core.heap import freeze_startup_heap
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.memories.llm_budget import LlmGate
from tether.memories.tenant_chat import TenantChatProviders
from tether.providers.base import ChatProvider, EmbeddingProvider
from tether.providers.configured import chat_provider, embedding_provider
from tether.recall.services import warm_up
from tether.recall.tenant_embedders import TenantEmbedders
from tether.recall.versions import PartitionVersions


@dataclass(frozen=True, slots=True)
class WorkerServices:
    embedder: EmbeddingProvider
    versions: PartitionVersions
    chat: ChatProvider | None
    # Each tenant's settings, re-read at most every tenant_settings_ttl_seconds: a
    # change applies to this process without a restart.
    tenant_settings: TenantSettingsCache
    llm_gate: LlmGate
    # The chat provider of each tenant's extraction (its settings' extraction section).
    chats: TenantChatProviders
    # The embedding model of each tenant's vectors (its settings' embedding section).
    embedders: TenantEmbedders


_embedders: dict[int, EmbeddingProvider] = {}
_services: dict[int, WorkerServices] = {}


def _embedder(settings: Settings) -> EmbeddingProvider:
    pid = os.getpid()
    if pid not in _embedders:
        _embedders.clear()  # a forked child must not use its parent's client
        _embedders[pid] = embedding_provider(settings)
    return _embedders[pid]


def warm_up_process(settings: Settings) -> None:
    """Load the tokenizer dictionary and the embedding model of this process now."""
    warm_up(settings, _embedder(settings))
    freeze_startup_heap()


def services_for(resources: Resources) -> WorkerServices:
    pid = os.getpid()
    if pid not in _services:
        settings = resources.settings
        _services.clear()
        tenant_settings = TenantSettingsCache(
            resources.sessions, settings.identity.tenant_settings_ttl_seconds
        )
        chat = chat_provider(settings)
        _services[pid] = WorkerServices(
            _embedder(settings),
            # A worker never ranks, it only invalidates: a failure is recorded for
            # the beat's retry (no event loop runs between tasks to retry it here).
            PartitionVersions(resources.hot_redis, resources.redis, retry=False),
            chat,
            tenant_settings,
            LlmGate(resources.redis, tenant_settings),
            TenantChatProviders(chat, settings.providers),
            TenantEmbedders(_embedder(settings), settings.providers, tenant_settings),
        )
    return _services[pid]
