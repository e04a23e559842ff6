"""The chat provider each tenant's extraction uses (decision 0075): the deployment's own,
or one the deployment named (``TETHER_PROVIDERS__LLM``) with the tenant's model and base
URL. One client per distinct choice, shared by the tenants that make it. The choice is
checked again here: a provider or host the deployment withdrew after the tenant chose it
is not called (rules only), whatever the stored document says."""

from __future__ import annotations

import logging
from collections import OrderedDict

from tenancy.settings.providers import refusals
from tenancy.settings.schemas import ExtractionTenantSettings
from tether.core.ids import TenantId
from tether.core.provider_urls import origin
from tether.core.settings import NamedLlmProvider, ProvidersSettings
from tether.providers.base import ChatProvider
from tether.providers.openai_chat import OpenAIChatProvider
from tether.providers.openai_embeddings import OpenAICompatibleEndpoint

log = logging.getLogger(__name__)
# Distinct (provider, model, URL) clients a process keeps; the oldest is closed past it.
MAX_CLIENTS = 32
_Choice = tuple[str, str, str]


class TenantChatProviders:
    """Args:
    default: the deployment's chat provider (None: TETHER_LLM__ENABLED is off).
    named: the providers tenants may choose, and the hosts their URLs may use.
    """

    def __init__(self, default: ChatProvider | None, named: ProvidersSettings) -> None:
        self._default = default
        self._named = named
        self._clients: OrderedDict[_Choice, ChatProvider] = OrderedDict()

    async def for_tenant(
        self, tenant_id: TenantId, extraction: ExtractionTenantSettings
    ) -> ChatProvider | None:
        """The provider this tenant's extraction calls, or None for rules only."""
        name = extraction.llm_provider
        if name is None:
            return self._default
        refused = refusals(extraction, self._named)
        if refused:
            log.warning(
                "LLM provider of tenant %s no longer offered (%s): rules only",
                tenant_id,
                "; ".join(r["message"] for r in refused),
            )
            return None
        named = self._named.llm[name]
        choice = (
            name,
            extraction.llm_model or named.model,
            extraction.llm_base_url or named.base_url,
        )
        client = self._clients.get(choice)
        if client is None:
            client = self._clients[choice] = _client(named, choice)
            if len(self._clients) > MAX_CLIENTS:
                _, oldest = self._clients.popitem(last=False)
                await oldest.aclose()
        self._clients.move_to_end(choice)
        return client

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()


def _client(named: NamedLlmProvider, choice: _Choice) -> ChatProvider:
    _, model, base_url = choice
    # The named provider's key goes to its own origin only: a tenant's other URL (on an
    # allowed host) is called without it.
    same_origin = origin(base_url) == origin(named.base_url)
    key = named.api_key.get_secret_value() if named.api_key and same_origin else None
    endpoint = OpenAICompatibleEndpoint(
        base_url,
        api_key=key,
        timeout_seconds=named.timeout_seconds,
        max_retries=named.max_retries,
    )
    return OpenAIChatProvider(endpoint, model=model)
