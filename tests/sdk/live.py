"""A real Tether API process for the client tests: uvicorn serving ``tether.asgi:create``
on a TCP port, against the module's database and Redis (as production runs it), that a
test may kill and start again on the same port."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import httpx

from tenancy.access.services import TenantService
from tether.core.database import create_engine, create_session_factory
from tether.core.ids import TenantId, new_id
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_transaction
from tether.runtime.serve import worker_env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LiveServer:
    def __init__(self, settings: Settings, extra_env: dict[str, str] | None = None) -> None:
        self.settings = settings
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = worker_env(settings) | {"TETHER_LOG_LEVEL": "WARNING"} | (extra_env or {})
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60) -> None:
        command = [sys.executable, "-m", "uvicorn", "--factory", "tether.asgi:create"]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning"]
        self.process = subprocess.Popen(command, env=self.env, stdout=sys.stderr, stderr=sys.stderr)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the API exited with {self.process.returncode}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"the API did not answer within {timeout}s")

    def kill(self) -> None:
        """SIGKILL: the server dies mid-request, as in a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def create_tenant(settings: Settings, name: str, region: str = "local") -> str:
    """A tenant in the module's database (as ``tether tenant create`` does): its admin key."""

    async def create() -> str:
        engine = create_engine(settings)
        tenant_id = TenantId(new_id())
        try:
            # Row security: the new tenant's rows are written in a session bound to it.
            async with tenant_transaction(create_session_factory(engine), tenant_id) as session:
                created = await TenantService(session).create(
                    f"{name}-{os.getpid()}", region, tenant_id
                )
        finally:
            await engine.dispose()
        return created.admin_token

    return asyncio.run(create())
