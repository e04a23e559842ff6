"""Provider base URLs a tenant may choose: well-formed http(s), and only to a host the
deployment allows (decision 0075). A tenant-given URL is a request the platform makes on
the tenant's behalf, from inside the deployment's network: without these checks it is a
server-side request forgery, and a way to send chat text out of the region."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import SplitResult, urlsplit

MAX_URL_CHARS = 2_048
_DEFAULT_PORTS = {"http": 80, "https": 443}


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a provider base URL, or None when it can."""
    if len(url) > MAX_URL_CHARS:
        return f"longer than {MAX_URL_CHARS} characters"
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        return "contains whitespace or control characters"
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is not a number in 0-65535
    except ValueError as exc:
        return f"not a URL ({exc})"
    if parts.scheme not in _DEFAULT_PORTS:
        return "must start with http:// or https://"
    if not parts.hostname:
        return "has no host"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "must not carry credentials (the deployment's named provider holds the key)"
    if parts.fragment or "#" in url:
        return "must not have a fragment"
    if parts.query:
        return "must not have a query string"
    if port == 0:
        return "port 0 is not a port"
    return None


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL that passed :func:`url_problem`."""
    parts = urlsplit(url)
    return parts.scheme, _host(parts), parts.port or _DEFAULT_PORTS[parts.scheme]


def host_allowed(url: str, allowed: Iterable[str]) -> bool:
    """Whether ``url``'s host is on the allow-list: an entry is a host name or IP (any
    port) or ``host:port`` (that port only). Names compare case-insensitively and
    exactly: no wildcards, so ``evil-openai.com`` never matches ``openai.com``."""
    _, host, port = origin(url)
    for entry in allowed:
        entry_host, entry_port = allow_entry(entry)
        if entry_host == host and entry_port in (None, port):
            return True
    return False


def allow_entry(entry: str) -> tuple[str, int | None]:
    """An allow-list entry as (host, port or None); ValueError when it is not one."""
    parts = urlsplit(f"//{entry.strip()}")
    if not parts.hostname or parts.path or parts.username or parts.password:
        raise ValueError(f"{entry!r} is not a host or host:port")
    return _host(parts), parts.port


def _host(parts: SplitResult) -> str:
    return (parts.hostname or "").lower().rstrip(".")
