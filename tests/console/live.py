"""A live Tether server for browser tests: uvicorn on a free loopback port, serving the
app built from the test Settings (its own event loop, in a thread of this process), and
headless Chromium driven by Playwright (Debian's browser, never a downloaded one)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn

from tether.app import create_asgi
from tether.core.settings import Settings

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Where screenshots go: docs/console when asked (to refresh the user guide), else a
# temporary folder (the pages are still rendered and captured).
SCREENSHOTS_ENV = "CONSOLE_SCREENSHOTS"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def live_server(settings: Settings) -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(
        create_asgi(settings), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="live-tether", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the live server did not start")
        time.sleep(0.05)
    assert httpx.get(url + "/health", timeout=10).status_code in (200, 503)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(30)


def screenshot_dir(fallback: Path) -> Path:
    target = Path(os.environ.get(SCREENSHOTS_ENV) or fallback)
    target.mkdir(parents=True, exist_ok=True)
    return target
