"""Operational tasks."""

from __future__ import annotations

from workers.app import app


@app.task(name="system.ping")
def ping() -> str:
    """Proves a worker consumes the queue (used by ``tether doctor`` and tests)."""
    return "pong"
