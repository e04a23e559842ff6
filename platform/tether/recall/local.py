"""This process's decoded partition copies: an LRU bounded by count and by bytes.

A 5,000-memory partition takes ≈ 17 MB decoded, a 20-memory one ≈ 80 KB, so a bound on
the count alone either wastes memory on small partitions or lets a few hundred large
ones exhaust the process (docs/scaling.md, "Memory sizing").
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass

from tether.recall.partition import Partition

Key = tuple[uuid.UUID, uuid.UUID]  # (tenant, relationship)

# Per memory, beyond its arrays: its strings and their tuples' slots, and the
# vocabulary's share (an estimate: measured totals are in docs/scaling.md).
RECORD_BYTES = 1_000


def footprint(partition: Partition) -> int:
    """An estimate of the bytes ``partition`` holds: its arrays exactly, its texts
    approximately (two bytes per character)."""
    index = partition.index
    arrays = (
        index.keys,
        index.has_vector,
        index.importance,
        index.confidence,
        index.strength,
        index.reference_time,
        index.neighbours,
        partition.kinds,
        partition.layers,
        partition.occurred,
        partition.expires_at,
        partition.private,
    )
    size = sum(a.nbytes for a in arrays) + index.bm25.nbytes + len(partition.keys)
    if index.matrix is not None:
        size += index.matrix.nbytes
    texts = () if partition.texts is None else partition.texts.contents
    return size + sum(RECORD_BYTES + 2 * len(content) for content in texts)


@dataclass(slots=True)
class LocalCopy:
    partition: Partition
    size: int
    loaded_at: float
    touched_at: float


class LocalCopies:
    def __init__(self, capacity: int, max_bytes: int) -> None:
        """``capacity``: copies kept at most (0: none); ``max_bytes``: their estimated
        bytes at most (0: no bound)."""
        self._capacity = capacity
        self._max_bytes = max_bytes
        self._copies: OrderedDict[Key, LocalCopy] = OrderedDict()
        self.bytes = 0  # estimated, of the copies held

    def __len__(self) -> int:
        return len(self._copies)

    def get(self, key: Key, max_age: float) -> LocalCopy | None:
        """The copy of ``key`` if one is held and younger than ``max_age`` seconds
        (an older one is dropped), marked as the most recently used."""
        copy = self._copies.get(key)
        if copy is None:
            return None
        if time.monotonic() - copy.loaded_at > max_age:
            self.drop(key)
            return None
        self._copies.move_to_end(key)
        return copy

    def put(self, key: Key, partition: Partition) -> None:
        """Keep ``partition``, evicting the least recently used copies beyond the
        bounds (a partition larger than the byte bound alone is not kept)."""
        self.drop(key)
        size = footprint(partition)
        if self._capacity == 0 or (self._max_bytes and size > self._max_bytes):
            return
        now = time.monotonic()
        self._copies[key] = LocalCopy(partition, size, now, now)
        self.bytes += size
        while len(self._copies) > self._capacity or (
            self._max_bytes and self.bytes > self._max_bytes
        ):
            _, evicted = self._copies.popitem(last=False)
            self.bytes -= evicted.size

    def drop(self, key: Key) -> None:
        copy = self._copies.pop(key, None)
        if copy is not None:
            self.bytes -= copy.size

    def clear(self) -> None:
        self._copies.clear()
        self.bytes = 0
