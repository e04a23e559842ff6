"""An app of its own in a test module, on the module's Postgres and Redis: for tests that
need its state (caches), other settings, or requests from another client address."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from litestar import Litestar

from tether.app import bind_resources, create_app, with_outer_middleware
from tether.core.resources import Resources


@asynccontextmanager
async def own_app(
    resources: Resources, address: str = "127.0.0.1", **sections: dict[str, Any]
) -> AsyncIterator[tuple[httpx.AsyncClient, Litestar]]:
    """A client from ``address`` of a new app (as another API process would be), whose
    settings differ by ``sections`` (e.g. ``access={"key_cache_seconds": 1}``)."""
    settings = resources.settings
    changed = {
        name: getattr(settings, name).model_copy(update=values) for name, values in sections.items()
    }
    settings = settings.model_copy(update=changed)
    app = create_app(settings)
    bind_resources(app, dataclasses.replace(resources, settings=settings))
    transport = httpx.ASGITransport(app=with_outer_middleware(app), client=(address, 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://own") as client:
        yield client, app
    app.state.partitions.close()
