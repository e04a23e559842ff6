"""Sending calls, with retries: the sync core (httpx.Client) and the async one
(httpx.AsyncClient). Generated resources call these."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

import httpx

from tether_client import __version__
from tether_client._request import Prepared, RetryPolicy, decode, file_part, prepare
from tether_client._spec import NOT_GIVEN, FileInput, NotGiven, Operation
from tether_client.errors import APIConnectionError, APITimeoutError, error_for, retry_after_seconds

T = TypeVar("T")
DEFAULT_URL = "http://127.0.0.1:8000"
Timeout = float | None | NotGiven


def settings_from_env(api_key: str | None, base_url: str | None) -> tuple[str, str]:
    key = api_key or os.environ.get("TETHER_API_KEY")
    if not key:
        raise ValueError("an API key is needed: pass api_key=... or set TETHER_API_KEY")
    return key, (base_url or os.environ.get("TETHER_URL") or DEFAULT_URL).rstrip("/")


def _headers(api_key: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {api_key}",
        "User-Agent": f"tether-client-python/{__version__}",
        "Accept": "application/json",
    }


def _connection_error(exc: httpx.TransportError) -> APIConnectionError:
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"no answer in time: {exc!r}")
    return APIConnectionError(f"cannot reach Tether: {exc!r}")


@contextmanager
def _writer(to: str | os.PathLike[str] | IO[bytes]) -> Iterator[IO[bytes]]:
    if isinstance(to, str | os.PathLike):
        with Path(to).open("wb") as handle:
            yield handle
    else:
        yield to


class SyncClientCore:
    def __init__(
        self,
        api_key: str,
        base_url: str,
        timeout: float | None,
        retry: RetryPolicy,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.api_key, self.base_url, self.timeout, self.retry = api_key, base_url, timeout, retry
        self.http = http_client or httpx.Client(base_url=base_url, headers=_headers(api_key))
        if http_client is not None:
            self.http.headers.update(_headers(api_key))

    def _timeout(self, timeout: Timeout) -> float | None:
        return self.timeout if isinstance(timeout, NotGiven) else timeout

    def send(
        self,
        op: Operation[Any],
        prepared: Prepared,
        timeout: Timeout,
        files: dict[str, Any] | None = None,
    ) -> httpx.Response:
        """One call with its retries (the answer, error or not, of the last attempt)."""
        attempt = 0
        while True:
            try:
                response = self.http.request(
                    prepared.method,
                    prepared.path,
                    params=prepared.query,
                    headers=prepared.headers,
                    content=prepared.content,
                    files=files,
                    timeout=self._timeout(timeout),
                )
            except httpx.TransportError as exc:
                if not self.retry.transport_retry(op, exc, attempt):
                    raise _connection_error(exc) from exc
                time.sleep(self.retry.delay(attempt, None))
            else:
                if not self.retry.status_retry(op, response, attempt):
                    return response
                time.sleep(self.retry.delay(attempt, retry_after_seconds(response)))
            attempt += 1

    def call(
        self,
        op: Operation[T],
        params: dict[str, Any],
        body: dict[str, Any] | None,
        timeout: Timeout = NOT_GIVEN,
    ) -> T:
        prepared = prepare(op, params, body)
        result: T = decode(op, self.send(op, prepared, timeout))
        return result

    def upload(
        self,
        op: Operation[T],
        params: dict[str, Any],
        field: str,
        file: FileInput,
        filename: str | None,
        content_type: str | None,
        timeout: Timeout = NOT_GIVEN,
    ) -> T:
        prepared = prepare(op, params, None)
        files = {field: file_part(file, filename, content_type)}
        result: T = decode(op, self.send(op, prepared, timeout, files))
        return result

    def stream_to(
        self,
        op: Operation[Any],
        params: dict[str, Any],
        to: str | os.PathLike[str] | IO[bytes],
        timeout: Timeout = NOT_GIVEN,
    ) -> int:
        """Stream a JSON-lines export into ``to`` (a path or a binary file); the bytes
        written."""
        prepared = prepare(op, params, None)
        try:
            with self.http.stream(
                prepared.method,
                prepared.path,
                params=prepared.query,
                timeout=self._timeout(timeout),
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    raise error_for(response)
                written = 0
                with _writer(to) as handle:
                    for chunk in response.iter_bytes():
                        written += handle.write(chunk)
                return written
        except httpx.TransportError as exc:
            raise _connection_error(exc) from exc

    def close(self) -> None:
        self.http.close()


class AsyncClientCore:
    def __init__(
        self,
        api_key: str,
        base_url: str,
        timeout: float | None,
        retry: RetryPolicy,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.api_key, self.base_url, self.timeout, self.retry = api_key, base_url, timeout, retry
        self.http = http_client or httpx.AsyncClient(base_url=base_url, headers=_headers(api_key))
        if http_client is not None:
            self.http.headers.update(_headers(api_key))

    def _timeout(self, timeout: Timeout) -> float | None:
        return self.timeout if isinstance(timeout, NotGiven) else timeout

    async def send(
        self,
        op: Operation[Any],
        prepared: Prepared,
        timeout: Timeout,
        files: dict[str, Any] | None = None,
    ) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = await self.http.request(
                    prepared.method,
                    prepared.path,
                    params=prepared.query,
                    headers=prepared.headers,
                    content=prepared.content,
                    files=files,
                    timeout=self._timeout(timeout),
                )
            except httpx.TransportError as exc:
                if not self.retry.transport_retry(op, exc, attempt):
                    raise _connection_error(exc) from exc
                await asyncio.sleep(self.retry.delay(attempt, None))
            else:
                if not self.retry.status_retry(op, response, attempt):
                    return response
                await asyncio.sleep(self.retry.delay(attempt, retry_after_seconds(response)))
            attempt += 1

    async def call(
        self,
        op: Operation[T],
        params: dict[str, Any],
        body: dict[str, Any] | None,
        timeout: Timeout = NOT_GIVEN,
    ) -> T:
        prepared = prepare(op, params, body)
        result: T = decode(op, await self.send(op, prepared, timeout))
        return result

    async def upload(
        self,
        op: Operation[T],
        params: dict[str, Any],
        field: str,
        file: FileInput,
        filename: str | None,
        content_type: str | None,
        timeout: Timeout = NOT_GIVEN,
    ) -> T:
        prepared = prepare(op, params, None)
        files = {field: file_part(file, filename, content_type)}
        result: T = decode(op, await self.send(op, prepared, timeout, files))
        return result

    async def stream_to(
        self,
        op: Operation[Any],
        params: dict[str, Any],
        to: str | os.PathLike[str] | IO[bytes],
        timeout: Timeout = NOT_GIVEN,
    ) -> int:
        prepared = prepare(op, params, None)
        try:
            async with self.http.stream(
                prepared.method,
                prepared.path,
                params=prepared.query,
                timeout=self._timeout(timeout),
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise error_for(response)
                written = 0
                with _writer(to) as handle:
                    async for chunk in response.aiter_bytes():
                        written += handle.write(chunk)
                return written
        except httpx.TransportError as exc:
            raise _connection_error(exc) from exc

    async def aclose(self) -> None:
        await self.http.aclose()
