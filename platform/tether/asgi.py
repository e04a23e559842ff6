"""ASGI entry point for production servers: ``uvicorn --factory tether.asgi:create``.

Settings come from the environment; Postgres and Redis must be external here (the
embedded runtime belongs to ``tether serve``)."""

from __future__ import annotations

from litestar.types import ASGIApp

from tether.app import create_asgi
from tether.core.logging import configure_logging
from tether.core.settings import Settings


def create() -> ASGIApp:
    settings = Settings()
    configure_logging(settings.log_level)
    return create_asgi(settings)
