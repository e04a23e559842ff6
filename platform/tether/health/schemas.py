"""Health answers."""

from __future__ import annotations

from typing import Literal

import msgspec

Status = Literal["ok", "degraded", "down"]


class ComponentHealth(msgspec.Struct):
    status: Status
    latency_ms: float
    detail: str = ""


class HotTierRead(msgspec.Struct):
    """Where this process found relationship partitions since it started."""

    local: int
    hot: int
    cold: int
    hit_rate: float | None
    # Whole partitions read in the background after cold reads, for the hot tiers.
    fills: int = 0


class HealthRead(msgspec.Struct):
    status: Status
    version: str
    components: dict[str, ComponentHealth]
    hot_tier: HotTierRead | None = None
