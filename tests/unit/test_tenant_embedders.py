"""Which embedder a tenant's vectors get (decision 0077): the deployment's by default,
one client per named provider, the deployment's again for a choice withdrawn later; and
which choices the settings document refuses (422 before storing)."""

from __future__ import annotations

import uuid

import pytest

from tenancy.settings.providers import ProviderRefused, check_providers, embedding_refusals
from tenancy.settings.schemas import (
    EmbeddingTenantSettings,
    ExtractionTenantSettings,
    TenantSettingsDocument,
)
from tether.core.ids import TenantId
from tether.core.settings import NamedEmbeddingProvider, ProvidersSettings
from tether.providers.offline import OfflineEmbeddingProvider
from tether.recall.tenant_embedders import TenantEmbedders

TENANT, OTHER = TenantId(uuid.uuid4()), TenantId(uuid.uuid4())


def _named(dimension: int) -> NamedEmbeddingProvider:
    return NamedEmbeddingProvider(
        base_url="https://emb.example/v1", model="e5", dimension=dimension
    )


NAMED = ProvidersSettings(embedding={"e5": _named(1024), "wide": _named(16_001)})


class Documents:
    """Settings documents by tenant, as the settings cache would answer them."""

    def __init__(self, choices: dict[TenantId, str | None]) -> None:
        self._choices = choices

    async def get(self, tenant_id: TenantId) -> TenantSettingsDocument:
        provider = self._choices.get(tenant_id)
        return TenantSettingsDocument(embedding=EmbeddingTenantSettings(provider=provider))


async def test_a_tenant_without_a_choice_gets_the_deployments_embedder() -> None:
    default = OfflineEmbeddingProvider()
    embedders = TenantEmbedders(default, NAMED, Documents({TENANT: "e5"}))
    assert await embedders.for_tenant(OTHER) is default
    chosen = await embedders.for_tenant(TENANT)
    assert (chosen.name, chosen.dimension) == ("e5", 1024)
    assert await embedders.for_tenant(TENANT) is chosen  # one client per provider
    await embedders.aclose()


async def test_a_withdrawn_choice_falls_back_to_the_deployments_embedder() -> None:
    default = OfflineEmbeddingProvider()
    embedders = TenantEmbedders(default, ProvidersSettings(), Documents({TENANT: "e5"}))
    assert await embedders.for_tenant(TENANT) is default


@pytest.mark.parametrize(
    ("provider", "why"),
    [("nope", "no embedding provider 'nope'"), ("wide", "16,000 dimensions")],
)
def test_unknown_and_too_wide_providers_are_refused(provider: str, why: str) -> None:
    choice = EmbeddingTenantSettings(provider=provider)
    [refused] = embedding_refusals(choice, NAMED)
    assert refused["field"] == "embedding.provider"
    assert why in refused["message"]
    with pytest.raises(ProviderRefused):
        check_providers(ExtractionTenantSettings(), choice, NAMED)


def test_offered_choices_pass() -> None:
    assert embedding_refusals(EmbeddingTenantSettings(), NAMED) == []
    assert embedding_refusals(EmbeddingTenantSettings(provider="e5"), NAMED) == []
