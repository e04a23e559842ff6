"""A cold read builds its records' times from the microseconds in its binary rows
(``wire.moments``): the same datetimes the driver decodes, for any time it can hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from tether.recall.loaded import EPOCH, NEVER_EXPIRES, NEVER_RECALLED
from tether.recall.wire import moments


def _exact(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=micros)


def test_moments_equal_exact_arithmetic_across_the_float_boundary() -> None:
    rng = np.random.default_rng(7)
    limit = 2**32 * 1_000_000  # where the float path stops
    lowest = (datetime(1, 1, 2, tzinfo=UTC) - EPOCH) // timedelta(microseconds=1)
    highest = (datetime(9999, 12, 30, tzinfo=UTC) - EPOCH) // timedelta(microseconds=1)
    drawn = np.concatenate(
        [
            rng.integers(-limit, limit, 20_000, dtype=np.int64),
            rng.integers(lowest, highest, 5_000, dtype=np.int64),
            np.array([0, 1, -1, 999_999, -999_999, limit - 1, -limit + 1, limit, -limit]),
            np.array([lowest, highest]),
        ]
    ).astype(np.int64)
    found = moments(drawn, None)
    assert found == [_exact(m) for m in drawn.tolist()]
    assert all(moment is not None and moment.tzinfo is UTC for moment in found)
    # Big-endian, as the rows arrive.
    assert moments(drawn.astype(">i8"), None) == found


def test_never_is_none_and_the_rest_is_kept_in_place() -> None:
    micros = np.array([NEVER_RECALLED, 1_700_000_000_123_456, NEVER_RECALLED, -5])
    assert moments(micros, NEVER_RECALLED) == [
        None,
        _exact(1_700_000_000_123_456),
        None,
        _exact(-5),
    ]
    assert moments(np.full(3, NEVER_EXPIRES), NEVER_EXPIRES) == [None, None, None]
    assert moments(np.array([], dtype=np.int64), NEVER_EXPIRES) == []


@pytest.mark.parametrize(
    ("micros", "never"),
    [(NEVER_EXPIRES, NEVER_RECALLED), (NEVER_RECALLED, None), (NEVER_EXPIRES, None)],
)
def test_an_infinite_time_is_refused(micros: int, never: int | None) -> None:
    """Postgres sends ±infinity as the int64 extremes; other than as ``never`` they are
    not times the partition store supports (decision 0015)."""
    with pytest.raises(OverflowError):
        moments(np.array([0, micros], dtype=np.int64), never)
