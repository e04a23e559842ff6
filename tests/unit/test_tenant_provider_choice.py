"""A tenant's LLM provider choice (decision 0075): URLs of the wrong form and hosts the
deployment does not allow are refused; a named provider's key goes only to its origin."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tenancy.settings.providers import ProviderRefused, check_extraction
from tenancy.settings.schemas import ExtractionTenantSettings
from tether.core.provider_urls import host_allowed, url_problem
from tether.core.settings import NamedLlmProvider, ProvidersSettings

DEPLOYMENT = ProvidersSettings(
    llm={
        "openai-eu": NamedLlmProvider(base_url="https://eu.api.example/v1", model="small"),
    },
    allowed_hosts=["eu.api.example", "10.0.0.5:8000", "[::1]:9000"],
)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://eu.api.example/v1",
        "file:///etc/passwd",
        "gopher://eu.api.example",
        "https://user:pass@eu.api.example/v1",
        "https://user@eu.api.example/v1",
        "https://eu.api.example/v1#x",
        "https://eu.api.example/v1?key=1",
        "https:///v1",
        "https://eu.api.example:99999/v1",
        "https://eu.api.example:0/v1",
        "https://eu.api.example/v 1",
        "//eu.api.example/v1",
        "eu.api.example",
        "https://eu.api.example/" + "a" * 2100,
    ],
)
def test_malformed_provider_urls_are_refused(url: str) -> None:
    assert url_problem(url) is not None


def test_well_formed_urls_pass() -> None:
    for url in ("https://eu.api.example/v1", "http://10.0.0.5:8000/v1", "http://[::1]:9000/v1"):
        assert url_problem(url) is None, url


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://eu.api.example/v1", True),
        ("https://EU.API.EXAMPLE./v1", True),
        ("https://eu.api.example:8443/v1", True),  # a bare host allows any port
        ("http://10.0.0.5:8000/v1", True),
        ("http://10.0.0.5:8001/v1", False),  # host:port allows that port only
        ("http://10.0.0.5/v1", False),
        ("http://[::1]:9000/v1", True),
        ("https://evil-eu.api.example/v1", False),
        ("https://eu.api.example.evil.test/v1", False),
        ("http://169.254.169.254/latest/meta-data", False),
        ("http://127.0.0.1:6379/", False),
    ],
)
def test_only_allowed_hosts_pass(url: str, allowed: bool) -> None:
    assert host_allowed(url, DEPLOYMENT.allowed_hosts) is allowed


def _refused(**fields: object) -> list[str]:
    try:
        check_extraction(ExtractionTenantSettings(**fields), DEPLOYMENT)  # type: ignore[arg-type]
    except ProviderRefused as exc:
        return [e["field"] for e in exc.extra["errors"]]
    return []


def test_a_choice_names_a_deployment_provider() -> None:
    assert ProviderRefused.status_code == 422
    assert _refused() == []
    assert _refused(llm_provider="openai-eu", llm_model="large") == []
    assert _refused(llm_provider="openai-us") == ["extraction.llm_provider"]
    assert _refused(llm_model="large", llm_base_url="https://eu.api.example/v1") == [
        "extraction.llm_model",
        "extraction.llm_base_url",
    ]


def test_a_tenant_url_must_be_well_formed_and_allowed() -> None:
    ok = "http://10.0.0.5:8000/v1"
    assert _refused(llm_provider="openai-eu", llm_base_url=ok) == []
    for bad in ("http://169.254.169.254/", "https://k:s@eu.api.example/v1", "ftp://x/"):
        assert _refused(llm_provider="openai-eu", llm_base_url=bad) == ["extraction.llm_base_url"]


def test_the_deployment_refuses_bad_named_providers_and_hosts_at_start() -> None:
    with pytest.raises(ValidationError):
        NamedLlmProvider(base_url="https://k:s@api.example/v1", model="m")
    with pytest.raises(ValidationError):
        ProvidersSettings(allowed_hosts=["https://api.example/v1"])
    with pytest.raises(ValidationError):
        ProvidersSettings(llm={"Bad Name": {"base_url": "https://a.example", "model": "m"}})  # type: ignore[dict-item]
