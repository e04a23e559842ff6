"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, Ollama, vLLM, TEI).

Also home of :class:`OpenAICompatibleEndpoint`, the retrying POST both OpenAI-compatible
adapters share.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec
import numpy as np

from tether.core.instruments import provider_call
from tether.providers.base import ProviderError, Vectors

log = logging.getLogger(__name__)

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_MAX_BACKOFF_SECONDS = 8.0


@dataclass(frozen=True, slots=True)
class _Failure:
    reason: str
    retry_in: float | None = None  # None: give up; negative: our own backoff


class OpenAICompatibleEndpoint:
    """POSTs JSON to one OpenAI-compatible server with a timeout and bounded retries.

    Retried: 429, 500, 502, 503, 504 and connection failures, with exponential backoff
    and jitter; ``Retry-After`` seconds are honoured, and no pause outlasts 8 s or the
    timeout. Not retried: other 4xx, and a server that accepted the connection but did
    not answer in time -- a slow server stays slow, and retrying would multiply the
    caller's wait. Each attempt is capped at ``timeout_seconds`` in total.

    Args:
        base_url: the API root, e.g. ``http://localhost:11434/v1``.
        api_key: sent as a bearer token when set.
        timeout_seconds: the limit for one attempt.
        max_retries: attempts after the first.
        backoff_seconds: the first retry's delay; it doubles each time.
        transport: an httpx transport (tests, or a custom TLS setup).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_seconds: float = 2.0,
        max_retries: int = 2,
        backoff_seconds: float = 0.25,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if timeout_seconds <= 0 or max_retries < 0 or backoff_seconds < 0:
            raise ValueError("timeout must be positive; retries and backoff not negative")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._base_url = base_url.rstrip("/")
        self._timeout = timeout_seconds
        self._max_retries = max_retries
        self._backoff = backoff_seconds
        self._client = httpx.AsyncClient(
            headers=headers, timeout=timeout_seconds, transport=transport
        )

    async def post(self, path: str, body: dict[str, Any]) -> bytes:
        """The body of the first 2xx answer; ProviderError when every attempt failed."""
        url = f"{self._base_url}/{path.lstrip('/')}"
        content = msgspec.json.encode(body)
        attempt = 0
        while True:
            outcome = await self._attempt(url, content)
            if isinstance(outcome, bytes):
                return outcome
            where = f"POST {self._shown_url(url)}"
            if outcome.retry_in is None or attempt == self._max_retries:
                log.warning("%s failed after %d attempt(s): %s", where, attempt + 1, outcome.reason)
                raise ProviderError(f"{where}: {outcome.reason}")
            wait = outcome.retry_in if outcome.retry_in >= 0 else self._backoff_delay(attempt)
            wait = min(wait, self._timeout)  # a pause never outlasts one attempt
            log.info("%s: %s; retry %d in %.2f s", where, outcome.reason, attempt + 1, wait)
            await asyncio.sleep(wait)
            attempt += 1

    async def _attempt(self, url: str, content: bytes) -> bytes | _Failure:
        headers = {"Content-Type": "application/json"}
        try:
            async with asyncio.timeout(self._timeout):
                response = await self._client.post(url, content=content, headers=headers)
        except (httpx.NetworkError, httpx.ConnectTimeout, httpx.RemoteProtocolError) as exc:
            return _Failure(f"connection failed ({type(exc).__name__})", retry_in=-1)
        except (TimeoutError, httpx.TimeoutException):
            return _Failure(f"no answer within {self._timeout} s")
        except httpx.HTTPError as exc:
            return _Failure(f"request failed ({type(exc).__name__})")
        if response.is_success:
            return response.content
        status = response.status_code
        if status in _RETRY_STATUSES:
            return _Failure(f"HTTP {status}", retry_in=_retry_after(response))
        return _Failure(f"HTTP {status} (not retried)")

    @staticmethod
    def _shown_url(url: str) -> str:
        # Credentials in the URL (https://user:pass@host) never reach a log line.
        return str(httpx.URL(url).copy_with(username=None, password=None))

    def _backoff_delay(self, attempt: int) -> float:
        # Jitter spreads the retries of many workers; it is not security-relevant.
        jitter = random.uniform(0.5, 1.0)  # noqa: S311
        return float(min(_MAX_BACKOFF_SECONDS, self._backoff * 2**attempt) * jitter)

    async def aclose(self) -> None:
        """Close the shared connection pool."""
        await self._client.aclose()


def _retry_after(response: httpx.Response) -> float:
    """Seconds the server asked us to wait, or -1 for our own backoff."""
    try:
        seconds = float(response.headers.get("Retry-After", ""))
    except ValueError:
        return -1
    if not math.isfinite(seconds):
        return -1
    return min(max(seconds, 0.0), _MAX_BACKOFF_SECONDS)


class _EmbeddingItem(msgspec.Struct):
    embedding: list[float]
    index: int | None = None


class _EmbeddingAnswer(msgspec.Struct):
    data: list[_EmbeddingItem]


class OpenAIEmbeddingProvider:
    """Embeddings from ``POST {base_url}/embeddings``, batched, validated and normalised.

    Args:
        endpoint: the shared HTTP endpoint (owns the connection pool).
        model: the model name sent to the server; also this provider's ``name``.
        dimension: what the model returns; any other length is a ProviderError (the
            vectors already stored would not be comparable: change it with a reindex).
        batch_size: the most inputs sent in one request.
    """

    def __init__(
        self, endpoint: OpenAICompatibleEndpoint, *, model: str, dimension: int, batch_size: int
    ) -> None:
        if dimension < 1 or batch_size < 1:
            raise ValueError("dimension and batch_size must be at least 1")
        self._endpoint = endpoint
        self._model = model
        self._dimension = dimension
        self._batch_size = batch_size

    @property
    def name(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return self._dimension

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """A (len(texts), dimension) float32 array of unit rows, in input order."""
        if not texts:
            return np.empty((0, self._dimension), dtype=np.float32)
        size = self._batch_size
        batches = [
            await self._embed_batch(list(texts[i : i + size])) for i in range(0, len(texts), size)
        ]
        return np.concatenate(batches) if len(batches) > 1 else batches[0]

    @provider_call("embedding", "openai")
    async def _embed_batch(self, texts: list[str]) -> Vectors:
        raw = await self._endpoint.post("embeddings", {"model": self._model, "input": texts})
        try:
            answer = msgspec.json.decode(raw, type=_EmbeddingAnswer)
        except msgspec.DecodeError as exc:
            raise self._fail(f"unusable embeddings answer ({exc})") from None
        rows = self._in_input_order(answer.data, len(texts))
        return self._normalised(rows)

    def _in_input_order(self, items: list[_EmbeddingItem], expected: int) -> list[list[float]]:
        if len(items) != expected:
            raise self._fail(f"{len(items)} embeddings for {expected} inputs")
        if all(item.index is None for item in items):
            return [item.embedding for item in items]
        indexes = [item.index for item in items]
        if sorted(i for i in indexes if i is not None) != list(range(expected)):
            raise self._fail("embedding indexes do not match the inputs")
        ordered = sorted(items, key=lambda item: item.index or 0)
        return [item.embedding for item in ordered]

    def _normalised(self, rows: list[list[float]]) -> Vectors:
        lengths = {len(row) for row in rows}
        if lengths != {self._dimension}:
            raise self._fail(
                f"got {sorted(lengths)}-dimensional vectors, configured dimension is "
                f"{self._dimension} (a dimension change needs `tether reindex`)"
            )
        matrix = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise self._fail("zero or non-finite embedding vector")
        unit: Vectors = matrix / norms
        return unit

    def _fail(self, reason: str) -> ProviderError:
        log.warning("embedding model %s: %s", self._model, reason)
        return ProviderError(f"embedding model {self._model}: {reason}")

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._endpoint.aclose()
