"""Identifier generation and the ids that the shared kernel itself needs."""

from __future__ import annotations

import os
import time
import uuid
from typing import NewType

TenantId = NewType("TenantId", uuid.UUID)


def new_id() -> uuid.UUID:
    """A UUIDv7 (RFC 9562): time-ordered, so new rows land at the right edge of btrees."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version
    value |= ((rand >> 62) & 0xFFF) << 64  # rand_a (12 bits)
    value |= 0b10 << 62  # variant
    value |= rand & ((1 << 62) - 1)  # rand_b (62 bits)
    return uuid.UUID(int=value)
