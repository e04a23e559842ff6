"""429 answers of the limits (rendered with Retry-After and the RateLimit fields)."""

from __future__ import annotations

from tether.core.errors import TooManyRequests


class RateLimited(TooManyRequests):
    code = "rate_limited"
    title = "Too many requests per second"


class QuotaExceeded(TooManyRequests):
    code = "quota_exceeded"
    title = "A quota of this tenant is used up"
