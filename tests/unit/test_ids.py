"""UUIDv7 ids: ordered by time within a process, and ``id_after`` for an order that must
hold across hosts whose clocks disagree."""

from __future__ import annotations

import time
import uuid

import pytest

from tether.core.ids import id_after, new_id


def _v7(millis: int, rand_a: int, rand_b: int) -> uuid.UUID:
    return uuid.UUID(int=(millis << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b)


def test_new_ids_increase_within_a_process() -> None:
    ids = [new_id() for _ in range(1000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(i.version == 7 for i in ids)


def test_an_id_after_an_older_one_is_simply_new() -> None:
    older = _v7(time.time_ns() // 1_000_000 - 60_000, 5, 9)
    after = id_after(older)
    assert after > older
    assert after.version == 7


def test_an_id_after_one_from_a_clock_ahead_follows_it() -> None:
    ahead = _v7(time.time_ns() // 1_000_000 + 3_600_000, 5, 9)  # an hour ahead
    after = id_after(ahead)
    assert after.int == ahead.int + 1
    assert after.version == 7


def test_when_rand_b_is_exhausted_rand_a_moves_on() -> None:
    ahead = _v7(time.time_ns() // 1_000_000 + 3_600_000, 5, (1 << 62) - 1)
    after = id_after(ahead)
    assert after > ahead
    assert after.version == 7
    assert after.variant == uuid.RFC_4122
    assert (after.int >> 64) & 0xFFF == 6
    assert after.int & ((1 << 62) - 1) == 0


def test_nothing_follows_the_last_id_of_a_millisecond() -> None:
    last = _v7(time.time_ns() // 1_000_000 + 3_600_000, 0xFFF, (1 << 62) - 1)
    with pytest.raises(ValueError, match="no UUIDv7 follows"):
        id_after(last)
