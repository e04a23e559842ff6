"""The file policy merged with a tenant's rules (casbin adapter), the limits on tenant
rules, and the per-tenant snapshots when Postgres cannot be read."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.policy_rules import PolicyRule, normalised, refusal
from tenancy.access.tenant_policies import TenantPolicies
from tenancy.errors import PolicyUnavailable
from tether.core.database import create_engine
from tether.core.ids import TenantId
from tether.core.settings import Settings

BASE = PolicyEnforcer()
GRANT = PolicyRule("compliance", "relationship_memory", "read", "allow")
DENY = PolicyRule("gateway", "global_user_profile", "read", "deny")
LIFT = PolicyRule("operator", "relationship_memory:private", "read", "allow")


def test_a_tenant_allow_grants_what_the_file_does_not() -> None:
    merged = BASE.with_tenant_rules([GRANT])
    decision = merged.decide("compliance", "relationship_memory", "read")
    assert (decision.allowed, decision.source) == (True, "tenant")
    assert decision.matched_rule == tuple(GRANT)
    assert not merged.decide("compliance", "relationship_memory", "write").allowed
    assert not BASE.decide("compliance", "relationship_memory", "read").allowed


def test_a_tenant_deny_overrides_a_file_allow() -> None:
    merged = BASE.with_tenant_rules([DENY])
    decision = merged.decide("gateway", "global_user_profile", "read")
    assert (decision.allowed, decision.source, decision.matched_rule) == (
        False,
        "tenant",
        tuple(DENY),
    )
    assert merged.decide("gateway", "global_user_profile", "write").allowed
    assert merged.decide("admin", "global_user_profile", "read").allowed


def test_a_tenant_allow_never_lifts_a_file_deny() -> None:
    merged = BASE.with_tenant_rules(
        [LIFT, PolicyRule("operator", "relationship_memory:private", "*", "allow")]
    )
    for action in ("read", "write", "delete"):
        decision = merged.decide("operator", "relationship_memory:private", action)
        assert not decision.allowed
        assert decision.source == "file"
        assert decision.matched_rule == ("operator", "relationship_memory:private", "*", "deny")


def test_the_file_is_credited_when_it_allows_alone() -> None:
    again = PolicyRule("gateway", "relationship_memory", "read", "allow")
    wider = PolicyRule("admin", "knowledge", "read", "allow")  # the file allows admin *
    merged = BASE.with_tenant_rules([again, wider])
    assert merged.tenant_rules == (wider,)  # a copy of a file rule stays a file rule
    for role, obj in (("gateway", "relationship_memory"), ("admin", "knowledge")):
        assert merged.decide(role, obj, "read").source == "file"


def test_no_rule_means_denied_by_default_without_a_source() -> None:
    decision = BASE.with_tenant_rules([GRANT]).decide("creator", "audit", "read")
    assert (decision.allowed, decision.matched_rule, decision.source) == (False, None, None)


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        (PolicyRule("gateway", "api_key", "write", "allow"), "object"),
        (PolicyRule("gateway", "policy", "*", "deny"), "object"),
        (PolicyRule("gateway", "tenant_settings", "read", "allow"), "object"),
        (PolicyRule("gateway", "relationship_memory*", "read", "allow"), "object"),
        (PolicyRule("gateway", "*", "read", "allow"), "object"),
        (PolicyRule("root", "identity", "read", "allow"), "role"),
        (PolicyRule("gateway", "identity", "own", "allow"), "action"),
        (PolicyRule("gateway", "identity", "read", "permit"), "effect"),
    ],
)
def test_tenant_rules_name_only_known_content_objects(rule: PolicyRule, field: str) -> None:
    refused = refusal(rule)
    assert refused is not None
    assert refused[0] == field


def test_known_content_rules_are_accepted_and_normalised() -> None:
    assert all(refusal(rule) is None for rule in (GRANT, DENY, LIFT))
    assert normalised([DENY, GRANT, DENY]) == (GRANT, DENY)


@pytest.fixture
async def unreachable() -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """Sessions on a Postgres address where nothing listens (connection refused), from
    the production engine (its connect hook raises DatabaseUnavailable)."""
    engine = create_engine(Settings(database_url="postgresql://tether@127.0.0.1:1/tether"))
    yield async_sessionmaker(engine)
    await engine.dispose()


async def test_with_no_snapshot_an_unreadable_policy_refuses(unreachable) -> None:
    policies = TenantPolicies(BASE, unreachable, ttl=10)
    tenant = TenantId(uuid.uuid4())
    with pytest.raises(PolicyUnavailable):
        await policies.refresh(tenant)
    with pytest.raises(PolicyUnavailable):
        policies.for_tenant(tenant)


async def test_an_unreadable_policy_keeps_the_last_snapshot(unreachable, caplog) -> None:
    policies = TenantPolicies(BASE, unreachable, ttl=0)  # every snapshot is stale at once
    tenant = TenantId(uuid.uuid4())
    policies.install(tenant, (DENY,))
    with caplog.at_level(logging.WARNING, logger="tenancy.access.tenant_policies"):
        enforcer = await policies.refresh(tenant)
    assert not enforcer.decide("gateway", "global_user_profile", "read").allowed
    assert "keeping the last ones" in caplog.text


async def test_tenants_without_rules_share_the_file_enforcer_and_unchanged_rules_keep_theirs(
    unreachable,
) -> None:
    policies = TenantPolicies(BASE, unreachable, ttl=10)
    plain, custom = TenantId(uuid.uuid4()), TenantId(uuid.uuid4())
    policies.install(plain, ())
    policies.install(custom, (GRANT,))
    assert policies.for_tenant(plain) is BASE
    built = policies.for_tenant(custom)
    assert built is not BASE
    policies.install(custom, (GRANT,))
    assert policies.for_tenant(custom) is built  # not rebuilt
    policies.install(custom, (GRANT, DENY))
    assert policies.for_tenant(custom) is not built
