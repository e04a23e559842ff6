"""The clients: ``Tether`` (sync, httpx.Client) and ``AsyncTether`` (async,
httpx.AsyncClient). Every API resource is an attribute (``client.memories.list(...)``)."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import httpx

from tether_client._core import AsyncClientCore, SyncClientCore, settings_from_env
from tether_client._request import RetryPolicy
from tether_client._resources import AsyncResources, SyncResources
from tether_client.capture import AsyncCaptureQueue, CaptureQueue, CaptureStats
from tether_client.gateway import AsyncGateway, Gateway


class Tether(SyncResources):
    """A synchronous client.

    Args:
        api_key: the API key (default: ``TETHER_API_KEY``).
        base_url: where Tether listens (default: ``TETHER_URL``, else
            ``http://127.0.0.1:8000``).
        timeout: seconds per request (each call may pass its own ``timeout=``).
        max_retries: retries after connection errors, 429 and 503 (jittered backoff,
            honouring ``Retry-After``).
        capture_queue_size: turns ``capture()`` may hold; beyond it the oldest is dropped.
        capture_deadline: seconds each capture request may take.
        http_client: your own ``httpx.Client`` (its ``base_url`` must be Tether's).
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | None = 10.0,
        max_retries: int = 2,
        capture_queue_size: int = 1000,
        capture_deadline: float = 3.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        key, url = settings_from_env(api_key, base_url)
        self._core = SyncClientCore(key, url, timeout, RetryPolicy(max_retries), http_client)
        self._bind_resources(self._core)
        self._capture = CaptureQueue(self._core.http, capture_queue_size, capture_deadline)

    def capture(
        self,
        relationship_id: Any,
        text: str,
        *,
        role: str = "user",
        session_id: str = "default",
        at: Any = None,
        idempotency_key: str | None = None,
    ) -> None:
        """Queue one turn for ``relationship_id`` and return at once. Never raises: a
        turn that cannot be sent is counted (``capture_stats()``) and logged."""
        self._capture.capture(
            relationship_id,
            text,
            role=role,
            session_id=session_id,
            at=at,
            idempotency_key=idempotency_key,
        )

    def capture_stats(self) -> CaptureStats:
        return self._capture.stats()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the capture queue is empty; False if ``timeout`` passed first."""
        return self._capture.flush(timeout)

    def gateway(self, *, deadline: float = 1.0, **context_options: Any) -> Gateway:
        """The chat gateway helper; ``context_options`` go to every context request
        (``max_tokens``, ``knowledge_enabled``, ``recent_turns``, …)."""
        return Gateway(self, deadline=deadline, **context_options)

    def close(self) -> None:
        """Flush the capture queue (5 s at most), then close the connections."""
        self._capture.close()
        self._core.close()

    def __enter__(self) -> Tether:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncTether(AsyncResources):
    """An asynchronous client; the same arguments as ``Tether``."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | None = 10.0,
        max_retries: int = 2,
        capture_queue_size: int = 1000,
        capture_deadline: float = 3.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        key, url = settings_from_env(api_key, base_url)
        self._core = AsyncClientCore(key, url, timeout, RetryPolicy(max_retries), http_client)
        self._bind_resources(self._core)
        self._capture = AsyncCaptureQueue(self._core.http, capture_queue_size, capture_deadline)

    def capture(
        self,
        relationship_id: Any,
        text: str,
        *,
        role: str = "user",
        session_id: str = "default",
        at: Any = None,
        idempotency_key: str | None = None,
    ) -> None:
        """Queue one turn and return at once (call it without ``await``). Never raises."""
        self._capture.capture(
            relationship_id,
            text,
            role=role,
            session_id=session_id,
            at=at,
            idempotency_key=idempotency_key,
        )

    def capture_stats(self) -> CaptureStats:
        return self._capture.stats()

    async def flush(self, timeout: float | None = None) -> bool:
        return await self._capture.flush(timeout)

    def gateway(self, *, deadline: float = 1.0, **context_options: Any) -> AsyncGateway:
        return AsyncGateway(self, deadline=deadline, **context_options)

    async def aclose(self) -> None:
        await self._capture.aclose()
        await self._core.aclose()

    async def __aenter__(self) -> AsyncTether:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
