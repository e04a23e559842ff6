"""Which chat client a tenant's extraction gets (decision 0075): the deployment's own by
default, one shared client per distinct choice, nothing for a withdrawn choice."""

from __future__ import annotations

import uuid

import pytest

from tenancy.settings.schemas import ExtractionTenantSettings
from tests.providers_server import FakeOpenAIServer, Reply
from tether.core.ids import TenantId
from tether.core.settings import NamedLlmProvider, ProvidersSettings
from tether.memories.tenant_chat import TenantChatProviders
from tether.providers.base import ProviderError

TENANT = TenantId(uuid.uuid4())
NAMED = ProvidersSettings(
    llm={"eu": NamedLlmProvider(base_url="https://eu.example/v1", model="m", api_key="k")},
    allowed_hosts=["models.example"],
)


async def test_no_choice_is_the_deployments_provider() -> None:
    default = object()
    chats = TenantChatProviders(default, NAMED)  # type: ignore[arg-type]
    assert await chats.for_tenant(TENANT, ExtractionTenantSettings()) is default


async def test_one_client_per_distinct_choice() -> None:
    chats = TenantChatProviders(None, NAMED)
    first = await chats.for_tenant(TENANT, ExtractionTenantSettings(llm_provider="eu"))
    again = await chats.for_tenant(TENANT, ExtractionTenantSettings(llm_provider="eu"))
    other = await chats.for_tenant(
        TENANT, ExtractionTenantSettings(llm_provider="eu", llm_model="bigger")
    )
    assert first is not None
    assert first is again
    assert other is not first
    await chats.aclose()


async def test_a_choice_the_deployment_withdrew_is_not_called() -> None:
    chats = TenantChatProviders(None, ProvidersSettings())  # the operator removed "eu"
    assert await chats.for_tenant(TENANT, ExtractionTenantSettings(llm_provider="eu")) is None
    moved = ExtractionTenantSettings(llm_provider="eu", llm_base_url="https://gone.example/v1")
    assert await TenantChatProviders(None, NAMED).for_tenant(TENANT, moved) is None


async def test_an_allowed_host_cannot_redirect_the_call_elsewhere() -> None:
    allowed, elsewhere = FakeOpenAIServer().start(), FakeOpenAIServer().start()
    try:
        named = ProvidersSettings(
            llm={"own": NamedLlmProvider(base_url=allowed.base_url, model="m", max_retries=0)}
        )
        chats = TenantChatProviders(None, named)
        chat = await chats.for_tenant(TENANT, ExtractionTenantSettings(llm_provider="own"))
        assert chat is not None
        target = f"{elsewhere.base_url}/chat/completions"
        allowed.enqueue(Reply(status=307, body=b"", headers={"Location": target}))
        with pytest.raises(ProviderError):
            await chat.complete_json("s", "u", {"type": "object"})
        assert elsewhere.requests == []
        await chats.aclose()
    finally:
        allowed.stop()
        elsewhere.stop()
