"""Whether a tenant's chosen LLM provider is one the deployment offers (decision 0075):
a named provider, and a base URL that is well formed and on the deployment's allow-list.
Checked before a version is stored, so a refused choice never reaches a worker."""

from __future__ import annotations

from tenancy.settings.schemas import EmbeddingTenantSettings, ExtractionTenantSettings
from tether.core.errors import InvalidInput
from tether.core.provider_urls import host_allowed, url_problem
from tether.core.settings import MAX_EMBEDDING_DIMENSION, ProvidersSettings


class ProviderRefused(InvalidInput):
    code = "provider_not_allowed"
    title = "This deployment does not offer that provider or URL"


def check_extraction(extraction: ExtractionTenantSettings, deployment: ProvidersSettings) -> None:
    """Raise ProviderRefused (422) naming every refused field of the extraction section."""
    check_providers(extraction, EmbeddingTenantSettings(), deployment)


def check_providers(
    extraction: ExtractionTenantSettings,
    embedding: EmbeddingTenantSettings,
    deployment: ProvidersSettings,
) -> None:
    """Raise ProviderRefused (422) naming every refused field."""
    errors = refusals(extraction, deployment) + embedding_refusals(embedding, deployment)
    if errors:
        fields = ", ".join(e["field"] for e in errors)
        raise ProviderRefused(f"refused: {fields}", errors=errors)


def refusals(
    extraction: ExtractionTenantSettings, deployment: ProvidersSettings
) -> list[dict[str, str]]:
    """Each refused field with why (empty: the choice is one the deployment offers)."""
    name = extraction.llm_provider
    if name is None:
        return [
            {"field": f"extraction.{field}", "message": "needs extraction.llm_provider"}
            for field in ("llm_model", "llm_base_url")
            if getattr(extraction, field) is not None
        ]
    if name not in deployment.llm:
        offered = ", ".join(sorted(deployment.llm)) or "none"
        message = f"this deployment names no provider {name!r} (it offers: {offered})"
        return [{"field": "extraction.llm_provider", "message": message}]
    url = extraction.llm_base_url
    if url is None:
        return []
    problem = url_problem(url)
    if problem is not None:
        return [{"field": "extraction.llm_base_url", "message": problem}]
    if not host_allowed(url, deployment.allowed_hosts):
        message = "its host is not on this deployment's allow-list of provider hosts"
        return [{"field": "extraction.llm_base_url", "message": message}]
    return []


def embedding_refusals(
    embedding: EmbeddingTenantSettings, deployment: ProvidersSettings
) -> list[dict[str, str]]:
    """The embedding choice refused, with why (empty: one the deployment offers and whose
    vectors the untyped ``halfvec`` column can hold)."""
    name = embedding.provider
    if name is None:
        return []
    named = deployment.embedding.get(name)
    if named is None:
        offered = ", ".join(sorted(deployment.embedding)) or "none"
        message = f"this deployment names no embedding provider {name!r} (it offers: {offered})"
        return [{"field": "embedding.provider", "message": message}]
    if named.dimension > MAX_EMBEDDING_DIMENSION:
        message = (
            f"its {named.dimension}-dimensional vectors exceed the {MAX_EMBEDDING_DIMENSION:,}"
            " dimensions a halfvec column stores"
        )
        return [{"field": "embedding.provider", "message": message}]
    return []
