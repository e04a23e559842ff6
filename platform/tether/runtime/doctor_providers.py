"""``tether doctor``'s checks of the providers the deployment names for tenants to choose
(``TETHER_PROVIDERS__LLM``, ``__EMBEDDING``; decisions 0075, 0077), one per name.

Each goes through what a real call goes through first: the refusal rules a worker applies
before calling a tenant's chosen provider (``tenancy.settings.providers``), and the URL
form check (credentials, query, control characters). Then one bounded request: an
embedding of one word by the same client the workers build, or ``GET /models`` for a
chat model (a completion would cost tokens and prove no more about reachability)."""

from __future__ import annotations

import asyncio

import httpx

from tenancy.settings.providers import embedding_refusals, refusals
from tenancy.settings.schemas import EmbeddingTenantSettings, ExtractionTenantSettings
from tether.core.provider_urls import host_allowed, url_problem
from tether.core.settings import ProvidersSettings
from tether.providers.base import ProviderError
from tether.recall.tenant_embedders import named_embedder
from tether.runtime.preflight import StartupError

TIMEOUT_SECONDS = 5.0


def _refused(kind: str, name: str, messages: list[str]) -> StartupError:
    return StartupError(
        f"tenants choosing {name!r} would not get it: {'; '.join(messages)}",
        f"correct TETHER_PROVIDERS__{kind.upper()}[{name!r}]",
    )


def _vet(kind: str, name: str, base_url: str, refused: list[dict[str, str]]) -> None:
    """What a real call checks first: the URL's form, then the refusal rules."""
    problem = url_problem(base_url)
    if problem is not None:
        raise _refused(kind, name, [f"its base_url {problem}"])
    if refused:
        raise _refused(kind, name, [r["message"] for r in refused])


def _allow_note(url: str, providers: ProvidersSettings) -> str:
    """The allow-list governs the chat URLs tenants type, not the named provider's own
    (decision 0075): a host missing from it is worth knowing, not a failure."""
    if not providers.allowed_hosts or host_allowed(url, providers.allowed_hosts):
        return ""
    return (
        "; its host is not on TETHER_PROVIDERS__ALLOWED_HOSTS, so tenants can use it only "
        "at this URL"
    )


def models(base_url: str, api_key: str | None, timeout: float, variables: str) -> None:
    """``GET {base_url}/models`` answers (any status but 401/403/5xx), or StartupError."""
    headers = {} if api_key is None else {"Authorization": f"Bearer {api_key}"}
    url = base_url.rstrip("/") + "/models"
    try:
        response = httpx.get(url, headers=headers, timeout=timeout)
    except httpx.TimeoutException as exc:
        raise StartupError(
            f"{base_url} did not answer within {timeout:g} s ({type(exc).__name__})",
            f"check {variables} and the network path from this host (NetworkPolicy egress)",
        ) from exc
    except httpx.HTTPError as exc:
        raise StartupError(
            f"{base_url} did not answer: {type(exc).__name__}: {exc}",
            f"check {variables} and that the endpoint is reachable from this host",
        ) from exc
    if response.status_code in (401, 403):
        raise StartupError(
            f"{base_url} refused the key ({response.status_code})", f"check the key in {variables}"
        )
    if response.status_code >= 500:
        raise StartupError(
            f"{base_url} answered {response.status_code}", "check the provider's status"
        )


def named_llm(providers: ProvidersSettings, name: str) -> str:
    named = providers.llm[name]
    _vet(
        "llm",
        name,
        named.base_url,
        refusals(ExtractionTenantSettings(llm_provider=name), providers),
    )
    key = named.api_key.get_secret_value() if named.api_key else None
    timeout = min(named.timeout_seconds, TIMEOUT_SECONDS)
    models(named.base_url, key, timeout, f"TETHER_PROVIDERS__LLM[{name!r}]")
    return f"{named.model} at {named.base_url}: answers" + _allow_note(named.base_url, providers)


async def _embed(providers: ProvidersSettings, name: str) -> int:
    client = named_embedder(providers.embedding[name])
    try:
        vectors = await asyncio.wait_for(client.embed(["doctor"]), TIMEOUT_SECONDS)
    finally:
        await client.aclose()
    return len(vectors[0])


def named_embedding(providers: ProvidersSettings, name: str) -> str:
    named = providers.embedding[name]
    refused = embedding_refusals(EmbeddingTenantSettings(provider=name), providers)
    _vet("embedding", name, named.base_url, refused)
    try:
        dimension = asyncio.run(_embed(providers, name))
    except TimeoutError as exc:
        raise StartupError(
            f"{named.base_url} did not embed one word within {TIMEOUT_SECONDS:g} s",
            f"check TETHER_PROVIDERS__EMBEDDING[{name!r}] and the network path from this host",
        ) from exc
    except ProviderError as exc:
        raise StartupError(
            f"{named.model} at {named.base_url} failed: {exc}",
            f"check TETHER_PROVIDERS__EMBEDDING[{name!r}] (base_url, model, dimension, "
            "api_key) and that the endpoint answers from here; tenants that chose it "
            "recall lexically until it does",
        ) from exc
    # No allow-list note: tenants choose an embedding model by name only, never a URL.
    return f"{named.model} at {named.base_url}: {dimension} dimensions"
