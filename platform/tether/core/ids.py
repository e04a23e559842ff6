"""Identifier generation and the ids that the shared kernel itself needs."""

from __future__ import annotations

import os
import threading
import time
import uuid
from typing import NewType

TenantId = NewType("TenantId", uuid.UUID)


_last = 0
_lock = threading.Lock()
_RAND_B = (1 << 62) - 1


def new_id() -> uuid.UUID:
    """A UUIDv7 (RFC 9562): time-ordered, so new rows land at the right edge of btrees.

    Monotonic within a process (RFC 9562 §6.2, method 2): an id made in the same
    millisecond as the previous one is the previous one plus one, so the turns of one
    batch keep their order when listed by id."""
    global _last
    candidate = _random_v7()
    with _lock:
        if candidate <= _last and (_last & _RAND_B) != _RAND_B:
            candidate = _last + 1
        _last = candidate
    return uuid.UUID(int=candidate)


def id_after(previous: uuid.UUID) -> uuid.UUID:
    """A new id greater than ``previous``: one made now, or, when ``previous`` is not
    older (another host's clock runs ahead of ours), the next id after it."""
    candidate = new_id()
    if candidate.int > previous.int:
        return candidate
    if (previous.int & _RAND_B) != _RAND_B:
        return uuid.UUID(int=previous.int + 1)
    # rand_b is exhausted: the next rand_a, rand_b from zero (the variant bits kept).
    following = (previous.int & ~_RAND_B) + (1 << 64) | (0b10 << 62)
    if (following >> 76) & 0xF != 0x7:
        raise ValueError(f"no UUIDv7 follows {previous} within its millisecond")
    return uuid.UUID(int=following)


def _random_v7() -> int:
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version
    value |= ((rand >> 62) & 0xFFF) << 64  # rand_a (12 bits)
    value |= 0b10 << 62  # variant
    value |= rand & _RAND_B  # rand_b (62 bits)
    return value
