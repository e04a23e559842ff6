"""The embedding model each tenant's vectors are made and compared with (decision 0077):
the deployment's own, or one the deployment named (``TETHER_PROVIDERS__EMBEDDING``). One
client per named provider, shared by the tenants that choose it. A tenant on the
deployment's model costs one in-process dictionary lookup (its settings are cached)."""

from __future__ import annotations

import logging
from typing import Protocol

from tenancy.settings.providers import embedding_refusals
from tenancy.settings.schemas import TenantSettingsDocument
from tether.core.ids import TenantId
from tether.core.settings import NamedEmbeddingProvider, ProvidersSettings
from tether.providers.base import EmbeddingProvider
from tether.providers.openai_embeddings import OpenAICompatibleEndpoint, OpenAIEmbeddingProvider

log = logging.getLogger(__name__)


class SettingsSource(Protocol):
    """Each tenant's settings document (the process's ``TenantSettingsCache``)."""

    async def get(self, tenant_id: TenantId) -> TenantSettingsDocument: ...


class TenantEmbedders:
    """Args:
    default: the deployment's embedder (``TETHER_EMBEDDING__*``).
    named: the embedding providers tenants may choose.
    settings: each tenant's settings, from the process's cache.
    """

    def __init__(
        self, default: EmbeddingProvider, named: ProvidersSettings, settings: SettingsSource
    ) -> None:
        self.default = default
        self._named = named
        self._settings = settings
        self._clients: dict[str, EmbeddingProvider] = {}

    async def for_tenant(self, tenant_id: TenantId) -> EmbeddingProvider:
        """The embedder of this tenant's new vectors and of its queries."""
        embedding = (await self._settings.get(tenant_id)).embedding
        name = embedding.provider
        if name is None:
            return self.default
        refused = embedding_refusals(embedding, self._named)
        if refused:
            # Safe: every vector records its model, and only vectors of the query's
            # model are compared; the tenant's are re-embedded when it chooses again.
            log.warning(
                "embedding provider of tenant %s no longer offered (%s): the deployment's",
                tenant_id,
                refused[0]["message"],
            )
            return self.default
        client = self._clients.get(name)
        if client is None:
            client = self._clients[name] = named_embedder(self._named.embedding[name])
        return client

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()


def named_embedder(named: NamedEmbeddingProvider) -> EmbeddingProvider:
    """The client of a deployment-named embedding model (also what `tether doctor` probes)."""
    endpoint = OpenAICompatibleEndpoint(
        named.base_url,
        api_key=named.api_key.get_secret_value() if named.api_key else None,
        timeout_seconds=named.timeout_seconds,
        max_retries=named.max_retries,
    )
    return OpenAIEmbeddingProvider(
        endpoint, model=named.model, dimension=named.dimension, batch_size=named.batch_size
    )
