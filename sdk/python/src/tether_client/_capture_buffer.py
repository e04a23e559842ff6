"""The capture queue's storage and bookkeeping, shared by the thread (sync) and the task
(async) that send it: a bounded FIFO of turns that drops its oldest when full, counters,
and one HTTP exchange per batch with its outcome."""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from enum import Enum
from typing import Any

import httpx

log = logging.getLogger("tether_client.capture")
MAX_BATCH = 100  # the API accepts 1..100 turns per request


@dataclass(frozen=True)
class CaptureStats:
    """``queued``: turns accepted by ``capture()``; ``sent``: accepted by the API;
    ``dropped``: evicted from a full queue or left unsent at close; ``failed``: refused
    by the API (a 4xx other than 429) or invalid; ``pending``: in the queue now."""

    queued: int
    sent: int
    dropped: int
    failed: int
    pending: int
    retries: int


@dataclass(frozen=True)
class Pending:
    relationship_id: str
    turn: dict[str, Any]


class Outcome(Enum):
    SENT = "sent"
    REFUSED = "refused"  # the API said no for good: do not resend
    RETRY = "retry"  # no answer, 429, 5xx: send again later


class Buffer:
    """Thread-safe: ``capture()`` runs on the caller's thread, the sender on its own."""

    def __init__(self, capacity: int, log_interval: float = 30.0) -> None:
        if capacity < 1:
            raise ValueError("the capture queue needs room for at least one turn")
        self.capacity = capacity
        self._items: deque[Pending] = deque()
        # Re-entrant: the sender waits on ``changed`` while asking ``has_items()``.
        self._lock = threading.RLock()
        self.changed = threading.Condition(self._lock)
        self.in_flight = 0
        self.queued = self.sent = self.dropped = self.failed = self.retries = 0
        self._warned_at = 0.0
        self._unreported = 0
        self._log_interval = log_interval

    def put(self, item: Pending) -> None:
        with self._lock:
            if len(self._items) >= self.capacity:
                self._items.popleft()
                self._count_drop(1, "the capture queue is full")
            self._items.append(item)
            self.queued += 1
            self.changed.notify_all()

    def take(self, limit: int = MAX_BATCH) -> list[Pending]:
        """The oldest turn and the turns of its relationship queued after it (in order)."""
        with self._lock:
            if not self._items:
                return []
            rid = self._items[0].relationship_id
            batch = [i for i in self._items if i.relationship_id == rid][:limit]
            taken = {id(i) for i in batch}
            self._items = deque(i for i in self._items if id(i) not in taken)
            self.in_flight += len(batch)
            return batch

    def settle(self, batch: list[Pending], outcome: Outcome) -> None:
        with self._lock:
            self.in_flight -= len(batch)
            if outcome is Outcome.SENT:
                self.sent += len(batch)
            elif outcome is Outcome.REFUSED:
                self.failed += len(batch)
            else:
                self.retries += 1
                # Back at the front, oldest first; what no longer fits is dropped.
                room = self.capacity - len(self._items)
                keep = batch[-room:] if room > 0 else []
                self._items.extendleft(reversed(keep))
                if len(keep) < len(batch):
                    self._count_drop(len(batch) - len(keep), "the capture queue is full")
            self.changed.notify_all()

    def drop_rest(self, why: str) -> None:
        with self._lock:
            if self._items:
                self._count_drop(len(self._items), why, force=True)
                self._items.clear()
            self.changed.notify_all()

    def count_invalid(self, reason: str) -> None:
        with self._lock:
            self.failed += 1
        log.error("tether capture: a turn was not queued: %s", reason)

    @property
    def empty(self) -> bool:
        with self._lock:
            return not self._items and self.in_flight == 0

    def has_items(self) -> bool:
        with self._lock:
            return bool(self._items)

    def stats(self) -> CaptureStats:
        with self._lock:
            return CaptureStats(
                self.queued,
                self.sent,
                self.dropped,
                self.failed,
                len(self._items) + self.in_flight,
                self.retries,
            )

    def _count_drop(self, count: int, why: str, force: bool = False) -> None:
        # Called with the lock held. A drop is never silent, but logged once per interval.
        self.dropped += count
        self._unreported += count
        now = time.monotonic()
        if force or now - self._warned_at >= self._log_interval:
            log.warning(
                "tether capture: dropped %d turn(s) (%s); %d dropped in all",
                self._unreported,
                why,
                self.dropped,
            )
            self._warned_at, self._unreported = now, 0


def new_turn(
    session_id: str, role: str, text: str, at: Any, idempotency_key: str | None
) -> dict[str, Any]:
    turn: dict[str, Any] = {
        "session_id": session_id,
        "role": role,
        "text": text,
        # Keyed before it is queued: however often it is resent, it is stored once.
        "idempotency_key": idempotency_key or f"tc-{uuid.uuid4().hex}",
    }
    if at is not None:
        turn["at"] = at.isoformat() if hasattr(at, "isoformat") else str(at)
    return turn


def request_of(batch: list[Pending]) -> tuple[str, dict[str, Any]]:
    path = f"/v1/relationships/{batch[0].relationship_id}/turns"
    return path, {"turns": [p.turn for p in batch]}


def outcome_of(response: httpx.Response) -> tuple[Outcome, float | None]:
    status = response.status_code
    if status < 300:
        return Outcome.SENT, None
    if status == 429 or status >= 500 or status == 408:
        wait = response.headers.get("retry-after")
        try:
            return Outcome.RETRY, float(wait) if wait else None
        except ValueError:
            return Outcome.RETRY, None
    return Outcome.REFUSED, None


def log_refusal(batch: list[Pending], response: httpx.Response) -> None:
    log.error(
        "tether capture: the API refused %d turn(s) with %d: %s",
        len(batch),
        response.status_code,
        response.text[:300],
    )


def backoff(failures: int, retry_after: float | None, cap: float = 5.0) -> float:
    """Jittered exponential wait before resending (at least ``Retry-After``)."""
    wait = random.uniform(0.5, 1.0) * min(cap, 0.2 * 2 ** min(failures, 10))  # noqa: S311
    return float(max(wait, retry_after or 0.0))
