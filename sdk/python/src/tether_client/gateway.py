"""The chat gateway's one call per message: resolve (cached), fetch the context as ready
chat messages, and capture the turn, within a deadline. When Tether is slow or down the
answer is the caller's own messages with ``memory=False``: the chat goes on without
memory instead of failing."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tether_client import _operations as ops
from tether_client._core import AsyncClientCore, SyncClientCore
from tether_client._request import RetryPolicy
from tether_client.errors import NotFound, TetherError

if TYPE_CHECKING:
    from tether_client.client import AsyncTether, Tether

Message = dict[str, str]


@dataclass(frozen=True)
class ChatContext:
    """What to send to the model: ``messages`` (the system text with Tether's context,
    the history, the new user message). ``memory`` is False when Tether could not answer
    within the deadline (``degraded`` says why)."""

    messages: list[Message]
    context: str
    relationship_id: str | None
    memory: bool
    degraded: list[str] = field(default_factory=list)
    elapsed_ms: float = 0.0


@dataclass(frozen=True)
class Who:
    user: str
    persona: str
    creator: str
    facet: str = "default"


class RelationshipCache:
    """(user, facet, persona, creator) → relationship id; bounded LRU with a TTL."""

    def __init__(self, size: int = 10_000, ttl: float = 600.0) -> None:
        self._items: OrderedDict[Who, tuple[str, float]] = OrderedDict()
        self._size, self._ttl = size, ttl
        self._lock = threading.Lock()

    def get(self, who: Who) -> str | None:
        with self._lock:
            hit = self._items.get(who)
            if hit is None or hit[1] < time.monotonic():
                self._items.pop(who, None)
                return None
            self._items.move_to_end(who)
            return hit[0]

    def put(self, who: Who, relationship_id: str) -> None:
        with self._lock:
            self._items[who] = (relationship_id, time.monotonic() + self._ttl)
            self._items.move_to_end(who)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def forget(self, who: Who) -> None:
        with self._lock:
            self._items.pop(who, None)


def _messages(system: str | None, history: list[Message] | None, text: str) -> list[Message]:
    out: list[Message] = [{"role": "system", "content": system}] if system else []
    return [*out, *(history or []), {"role": "user", "content": text}]


def _request(
    who: Who, rid: str | None, text: str, messages: list[Message], options: dict[str, Any]
) -> dict[str, Any]:
    body: dict[str, Any] = {"query": text[:4000], "messages": messages, **options}
    if rid is not None:
        body["relationship_id"] = rid
    else:
        body["user"] = {"external_id": who.user}
        body["persona"] = {"external_id": who.persona, "creator_external_id": who.creator}
        body["facet"] = who.facet
    return body


def _answer(response: Any, started: float) -> ChatContext:
    return ChatContext(
        messages=[{"role": m.role, "content": m.content} for m in response.messages],
        context=response.context,
        relationship_id=str(response.relationship_id),
        memory=True,
        degraded=list(response.degraded),
        elapsed_ms=(time.monotonic() - started) * 1000,
    )


def _without_memory(
    messages: list[Message], rid: str | None, why: str, started: float
) -> ChatContext:
    return ChatContext(messages, "", rid, False, [why], (time.monotonic() - started) * 1000)


class Gateway:
    """``client.gateway(...)`` of the sync client. Thread-safe."""

    def __init__(self, client: Tether, *, deadline: float = 1.0, **context_options: Any) -> None:
        core = client._core
        # No retries inside a chat turn: the deadline is the caller's.
        self._core = SyncClientCore(core.api_key, core.base_url, None, RetryPolicy(0), core.http)
        self._client, self.deadline, self._options = client, deadline, context_options
        self.cache = RelationshipCache()
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="tether-gateway")

    def message(
        self,
        *,
        user: str,
        persona: str,
        creator: str,
        text: str,
        session_id: str,
        facet: str = "default",
        system: str | None = None,
        history: list[Message] | None = None,
        deadline: float | None = None,
    ) -> ChatContext:
        """The context for the new user message ``text``, and the turn captured."""
        started, budget = time.monotonic(), self.deadline if deadline is None else deadline
        who = Who(user, persona, creator, facet)
        plain = _messages(system, history, text)
        rid = self.cache.get(who)
        future = self._pool.submit(self._fetch, who, rid, text, plain, budget)
        try:
            ctx = future.result(timeout=max(0.0, budget - (time.monotonic() - started)))
            ctx = ChatContext(**{**ctx.__dict__, "elapsed_ms": (time.monotonic() - started) * 1000})
        except FutureTimeout:
            ctx = _without_memory(plain, rid, "tether_timeout", started)
        except TetherError as exc:
            ctx = _without_memory(plain, rid, f"tether_error:{type(exc).__name__}", started)
        if ctx.relationship_id:
            self._client.capture(ctx.relationship_id, text, role="user", session_id=session_id)
        return ctx

    def _fetch(
        self, who: Who, rid: str | None, text: str, plain: list[Message], budget: float
    ) -> ChatContext:
        started = time.monotonic()
        try:
            response = self._core.call(
                ops.BuildContext, {}, _request(who, rid, text, plain, self._options), budget
            )
        except NotFound:
            self.cache.forget(who)  # erased or moved: resolve again next time
            raise
        self.cache.put(who, str(response.relationship_id))
        return _answer(response, started)

    def reply(self, ctx: ChatContext, text: str, *, session_id: str) -> None:
        """Capture the model's answer (queued; returns at once)."""
        if ctx.relationship_id:
            self._client.capture(ctx.relationship_id, text, role="assistant", session_id=session_id)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class AsyncGateway:
    """``client.gateway(...)`` of the async client."""

    def __init__(
        self, client: AsyncTether, *, deadline: float = 1.0, **context_options: Any
    ) -> None:
        core = client._core
        self._core = AsyncClientCore(core.api_key, core.base_url, None, RetryPolicy(0), core.http)
        self._client, self.deadline, self._options = client, deadline, context_options
        self.cache = RelationshipCache()

    async def message(
        self,
        *,
        user: str,
        persona: str,
        creator: str,
        text: str,
        session_id: str,
        facet: str = "default",
        system: str | None = None,
        history: list[Message] | None = None,
        deadline: float | None = None,
    ) -> ChatContext:
        """The context for the new user message ``text``, and the turn captured."""
        started, budget = time.monotonic(), self.deadline if deadline is None else deadline
        who = Who(user, persona, creator, facet)
        plain = _messages(system, history, text)
        rid = self.cache.get(who)
        try:
            async with asyncio.timeout(budget):
                body = _request(who, rid, text, plain, self._options)
                response = await self._core.call(ops.BuildContext, {}, body, budget)
            self.cache.put(who, str(response.relationship_id))
            ctx = _answer(response, started)
        except TimeoutError:
            ctx = _without_memory(plain, rid, "tether_timeout", started)
        except TetherError as exc:
            if isinstance(exc, NotFound):
                self.cache.forget(who)
            ctx = _without_memory(plain, rid, f"tether_error:{type(exc).__name__}", started)
        if ctx.relationship_id:
            self._client.capture(ctx.relationship_id, text, role="user", session_id=session_id)
        return ctx

    def reply(self, ctx: ChatContext, text: str, *, session_id: str) -> None:
        if ctx.relationship_id:
            self._client.capture(ctx.relationship_id, text, role="assistant", session_id=session_id)
