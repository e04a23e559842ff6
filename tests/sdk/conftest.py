"""Fixtures of the client tests: a live API process per module and a tenant in it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from tests.sdk.live import LiveServer, create_tenant
from tether.core.settings import Settings

_names = itertools.count()


@pytest.fixture(scope="module")
def live(settings: Settings) -> Iterator[LiveServer]:
    server = LiveServer(settings)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def admin_key(settings: Settings) -> str:
    return create_tenant(settings, f"sdk-{next(_names)}")
