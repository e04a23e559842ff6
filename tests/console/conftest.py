"""The browser tests' shared fixtures: a live server on a free port, headless Chromium
(Debian's, driven by Playwright) and where screenshots go. Module-scoped like the
``settings`` they run on, so each test module gets its own server and browser."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright

from tests.console.live import CHROMIUM, CHROMIUM_FLAGS, live_server, screenshot_dir
from tether.core.settings import Settings


@pytest.fixture(scope="module")
def server(settings: Settings) -> Iterator[str]:
    with live_server(settings) as url:
        yield url


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshot_dir(tmp_path_factory.mktemp("shots"))


@pytest.fixture(scope="module")
async def chromium() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield browser
        await browser.close()
