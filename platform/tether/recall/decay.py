"""Time and quality factors: each multiplies relevance and never goes below its floor.

Time follows an Ebbinghaus forgetting curve, ``retention = 2 ** (-age / (half_life *
strength))``, where age runs from the later of when the memory happened and when it was
last recalled, and ``strength`` (1 for a new memory) grows as recalls reinforce it. The
factor is ``floor + (1 - floor) * retention``: forgetting lowers a memory's rank, the
floor keeps an old but strongly relevant memory above weak fresh ones.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tether.recall.weights import RankWeights

FloatArray = npt.NDArray[np.float64]

SECONDS_PER_DAY = 86_400.0
_MIN_STRENGTH = 1e-3


def time_factor(
    reference_time: FloatArray, strength: FloatArray, now: float, weights: RankWeights
) -> FloatArray:
    """The decay factor of every row, in [decay_floor, 1]; ``now`` in POSIX seconds."""
    if weights.decay_floor >= 1.0:
        return np.ones(len(reference_time), dtype=np.float64)
    age_days = np.maximum(now - reference_time, 0.0) / SECONDS_PER_DAY
    stability = weights.decay_half_life_days * np.maximum(strength, _MIN_STRENGTH)
    retention = np.exp2(-age_days / stability)
    factor: FloatArray = weights.decay_floor + (1.0 - weights.decay_floor) * retention
    return factor


def quality_factor(values: FloatArray, floor: float) -> FloatArray:
    """``floor + (1 - floor) * value`` with ``value`` clipped to [0, 1]."""
    factor: FloatArray = floor + (1.0 - floor) * np.clip(values, 0.0, 1.0)
    return factor
