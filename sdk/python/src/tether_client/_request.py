"""Turning a call into an HTTP request (validated before anything is sent) and an HTTP
answer into its model or typed error: the part the sync and async clients share."""

from __future__ import annotations

import os
import random
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import httpx
import msgspec

from tether_client._spec import NOT_GIVEN, FileInput, Operation
from tether_client.errors import TetherError, error_for


class ResponseShapeError(TetherError):
    """The answer does not match the API document this SDK was generated from (an SDK
    older than the server, most likely): upgrade the SDK."""


_WRONG_TYPE = re.compile(r"Expected `[^`]+`, got `")


@dataclass
class Prepared:
    method: str
    path: str
    query: list[tuple[str, str | int | float | bool | None]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes | None = None


def _invalid(op: Operation[Any], what: str, exc: msgspec.ValidationError) -> Exception:
    message = f"{op.op_id}: invalid {what}: {exc}"
    # msgspec says "Expected `str`, got `int`" for a wrong type, else names the constraint.
    return TypeError(message) if _WRONG_TYPE.match(str(exc)) else ValueError(message)


def prepare(op: Operation[Any], params: dict[str, Any], body: dict[str, Any] | None) -> Prepared:
    """The request of one call; raises ``TypeError``/``ValueError`` on a bad argument."""
    given = {
        op.wire_names.get(k, k): v
        for k, v in params.items()
        if v is not None and v is not NOT_GIVEN
    }
    raw = msgspec.to_builtins(given, str_keys=True)
    if op.params is not None:
        try:
            msgspec.convert(raw, op.params)
        except msgspec.ValidationError as exc:
            raise _invalid(op, "argument", exc) from None
    prepared = Prepared(op.method, _path(op, raw))
    for py_name, where in op.where.items():
        wire = op.wire_names.get(py_name, py_name)
        if wire not in raw:
            continue
        if where == "query":
            values = raw[wire] if isinstance(raw[wire], list) else [raw[wire]]
            prepared.query += [(wire, _query_text(v)) for v in values]
        elif where == "header":
            prepared.headers[wire] = str(raw[wire])
    if body is not None and op.body is not None:
        prepared.content = _body(op, body)
        prepared.headers["Content-Type"] = "application/json"
    return prepared


def _path(op: Operation[Any], raw: dict[str, Any]) -> str:
    path = op.path
    for name, where in op.where.items():
        if where == "path":
            wire = op.wire_names.get(name, name)
            if wire not in raw:
                raise TypeError(f"{op.op_id}: missing {name}")
            path = path.replace("{" + wire + "}", quote(str(raw[wire]), safe=""))
    return path


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _body(op: Operation[Any], body: dict[str, Any]) -> bytes:
    raw = msgspec.to_builtins({k: v for k, v in body.items() if v is not NOT_GIVEN})
    if op.idempotency:
        fill_idempotency_keys(raw, op.idempotency)
    try:
        msgspec.convert(raw, op.body)
    except msgspec.ValidationError as exc:
        raise _invalid(op, "body", exc) from None
    return msgspec.json.encode(raw)


def fill_idempotency_keys(raw: dict[str, Any], spec: str) -> None:
    """Give every write a key before its first attempt, so a retry can never store it
    twice: ``turns[].idempotency_key`` keys each turn, ``external_id`` the body."""
    head, _, rest = spec.partition(".")
    if head.endswith("[]"):
        for item in raw.get(head[:-2]) or []:
            if isinstance(item, dict):
                fill_idempotency_keys(item, rest)
    elif not raw.get(head):
        raw[head] = f"tc-{uuid.uuid4().hex}"


def decode(op: Operation[Any], response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise error_for(response)
    if op.response_kind != "json":
        return None
    try:
        return msgspec.json.decode(response.content, type=op.response)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ResponseShapeError(f"{op.op_id}: unexpected answer: {exc}") from exc


def file_part(
    file: FileInput, filename: str | None, content_type: str | None
) -> tuple[str, bytes, str]:
    """(name, bytes, type) of an upload; read whole (uploads are bounded by the API) so
    that a retry can send it again."""
    if isinstance(file, bytes):
        data, name = file, filename or "upload"
    elif isinstance(file, str | os.PathLike):
        data, name = Path(file).read_bytes(), filename or Path(file).name
    else:
        stream: IO[bytes] = file
        data = stream.read()
        name = filename or Path(str(getattr(stream, "name", "upload"))).name
    return name, data, content_type or _guess_type(name)


def _guess_type(name: str) -> str:
    lowered = name.lower()
    if lowered.endswith(".pdf"):
        return "application/pdf"
    if lowered.endswith((".md", ".markdown")):
        return "text/markdown"
    if lowered.endswith(".txt"):
        return "text/plain"
    return "application/octet-stream"


@dataclass(frozen=True)
class RetryPolicy:
    """Jittered exponential backoff; a ``Retry-After`` longer than ``max_wait`` is not
    waited for (the error is raised instead, so the caller decides)."""

    max_retries: int = 2
    base: float = 0.25
    cap: float = 8.0
    max_wait: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = random.uniform(0, min(self.cap, self.base * 2**attempt))  # noqa: S311
        return max(retry_after, backoff) if retry_after is not None else backoff

    def transport_retry(self, op: Operation[Any], exc: Exception, attempt: int) -> bool:
        if attempt >= self.max_retries:
            return False
        unsent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
        return unsent or op.retry == "all"

    def status_retry(self, op: Operation[Any], response: httpx.Response, attempt: int) -> bool:
        if attempt >= self.max_retries:
            return False
        status = response.status_code
        if status == 429 or (status == 503 and op.retry == "all"):
            wait = response.headers.get("retry-after")
            try:
                return wait is None or float(wait) <= self.max_wait
            except ValueError:
                return True
        return False
