"""The pure parts of limits and keys: token shapes and signatures, limit resolution,
the RateLimit fields, and the expiring cache."""

from __future__ import annotations

import secrets

import pytest

from tenancy.access.key_cache import ExpiringCache
from tenancy.access.tokens import (
    LEGACY_LENGTH,
    SIGNED_LENGTH,
    TOKEN_PREFIX,
    Shape,
    generate_token,
    shape,
    signature_valid,
)
from tenancy.limits.headers import Window, rate_limit_headers
from tenancy.limits.values import LimitName, TenantLimits, within
from tether.core.settings import LimitsSettings

SECRET = secrets.token_bytes(32)


def test_a_token_is_signed_with_the_deployments_secret() -> None:
    token = generate_token(SECRET)
    assert shape(token) is Shape.SIGNED
    assert signature_valid(token, SECRET)
    assert not signature_valid(token, secrets.token_bytes(32))
    flipped = token[:10] + ("A" if token[10] != "A" else "B") + token[11:]
    assert not signature_valid(flipped, SECRET)


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        (TOKEN_PREFIX + "a" * (LEGACY_LENGTH - 4), Shape.LEGACY),
        (TOKEN_PREFIX + "a" * (SIGNED_LENGTH - 4), Shape.SIGNED),
        (TOKEN_PREFIX + "a" * (SIGNED_LENGTH - 5), Shape.MALFORMED),
        ("xyz_" + "a" * (SIGNED_LENGTH - 4), Shape.MALFORMED),
        (TOKEN_PREFIX + "a" * (SIGNED_LENGTH - 5) + "=", Shape.MALFORMED),
        (TOKEN_PREFIX + "a" * (SIGNED_LENGTH - 5) + "好", Shape.MALFORMED),
        ("", Shape.MALFORMED),
    ],
)
def test_the_shape_of_a_token_is_read_from_its_characters(token: str, expected: Shape) -> None:
    assert shape(token) is expected


def test_a_tenant_chooses_within_its_allowance_and_the_allowance_wins_after() -> None:
    defaults = LimitsSettings(turns_per_day=100, memories=0)
    limits = TenantLimits.resolve(
        defaults,
        allowance={"turns_per_day": 50, "unknown_future_limit": 3},
        chosen={"turns_per_day": 80, "memories": 7, "key_requests_per_second": -1},
    )
    assert limits[LimitName.TURNS_PER_DAY] == 50  # chose more than the operator allows now
    assert limits[LimitName.MEMORIES] == 7  # within "no limit"
    assert limits[LimitName.KEY_REQUESTS_PER_SECOND] == defaults.key_requests_per_second
    assert within(5, 0)
    assert not within(0, 5)  # "no limit" is above any allowance
    assert within(5, 5)
    assert not within(6, 5)


def test_ratelimit_fields_follow_the_draft() -> None:
    headers = rate_limit_headers([Window("key", 10, 1, 7, 1), Window("memories", 5, None, -2, 30)])
    assert headers["RateLimit-Policy"] == '"key";q=10;w=1, "memories";q=5'
    assert headers["RateLimit"] == '"key";r=7;t=1, "memories";r=0;t=30'
    assert rate_limit_headers([]) == {}


def test_the_expiring_cache_forgets_by_deadline_and_size() -> None:
    now = [0.0]
    cache: ExpiringCache[str] = ExpiringCache(2, clock=lambda: now[0])
    cache.put(b"a", "A", 5)
    cache.put(b"b", "B", 1)
    assert (cache.get(b"a"), cache.get(b"b")) == ("A", "B")
    now[0] = 2
    assert cache.get(b"b") is None
    cache.put(b"c", "C", 5)
    cache.put(b"d", "D", 5)  # over the size: the oldest stored leaves
    assert cache.get(b"a") is None
    assert cache.get(b"d") == "D"
    cache.put(b"d", "D", 0)  # an already-ended key is not stored
    assert cache.get(b"d") is None
