"""Errors of the global profile and consent."""

from __future__ import annotations

from tether.core.errors import ServiceUnavailable


class ConsentCacheUnavailable(ServiceUnavailable):
    """A consent change that could not clear the cached scopes: committing it anyway
    could let readers use the old scopes once Redis is back."""

    code = "consent_cache_unavailable"
    title = "Consent cannot change while Redis is unreachable"
