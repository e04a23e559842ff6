"""What a generated operation is, and the base of the generated resources."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Generic, Literal, TypeVar

if TYPE_CHECKING:
    from tether_client._core import AsyncClientCore, SyncClientCore

T = TypeVar("T")
FileInput = str | os.PathLike[str] | bytes | IO[bytes]


class NotGiven:
    """An argument left out (distinct from ``None``, which the API may mean)."""

    _instance: NotGiven | None = None

    def __new__(cls) -> NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()


@dataclass(frozen=True)
class Operation(Generic[T]):
    """One API operation: where it is, what it takes, what it answers, how to retry it.

    ``retry``: ``all`` retries on connection errors, 429 and 503 (a retry cannot write
    twice: reads, PUT/DELETE, POSTs that converge or carry an idempotency key); ``unsent``
    retries only when the request never reached the server (connect errors) or was
    refused before it ran (429)."""

    op_id: str
    method: str
    path: str
    params: type[Any] | None
    where: dict[str, str]
    wire_names: dict[str, str]
    body: type[Any] | None
    body_kind: Literal["none", "json", "multipart"]
    response: Any
    response_kind: Literal["json", "empty", "ndjson"]
    idempotency: str | None
    retry: Literal["all", "unsent"]


class SyncResource:
    def __init__(self, core: SyncClientCore) -> None:
        self._core = core


class AsyncResource:
    def __init__(self, core: AsyncClientCore) -> None:
        self._core = core
