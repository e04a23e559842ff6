"""Whether a tenant's chosen LLM provider is one the deployment offers (decision 0075):
a named provider, and a base URL that is well formed and on the deployment's allow-list.
Checked before a version is stored, so a refused choice never reaches a worker."""

from __future__ import annotations

from tenancy.settings.schemas import ExtractionTenantSettings
from tether.core.errors import InvalidInput
from tether.core.provider_urls import host_allowed, url_problem
from tether.core.settings import ProvidersSettings


class ProviderRefused(InvalidInput):
    code = "provider_not_allowed"
    title = "This deployment does not offer that provider or URL"


def check_extraction(extraction: ExtractionTenantSettings, deployment: ProvidersSettings) -> None:
    """Raise ProviderRefused (422) naming every refused field."""
    errors = refusals(extraction, deployment)
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
