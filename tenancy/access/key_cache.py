"""What one process remembers about tokens it has seen: the keys they authenticated
(briefly, so a revocation elsewhere takes effect soon) and the digests that matched no
usable key (so a repeated bad token costs no query)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class ExpiringCache(Generic[T]):
    """At most ``size`` entries, each until its own deadline (least recently stored
    leave first)."""

    def __init__(self, size: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._size = size
        self._clock = clock
        self._entries: OrderedDict[bytes, tuple[float, T]] = OrderedDict()

    def get(self, key: bytes) -> T | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._entries[key]
            return None
        return entry[1]

    def put(self, key: bytes, value: T, seconds: float) -> None:
        if seconds <= 0:
            self._entries.pop(key, None)
            return
        self._entries[key] = (self._clock() + seconds, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def pop(self, key: bytes) -> None:
        self._entries.pop(key, None)
