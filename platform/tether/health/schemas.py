"""Health answers."""

from __future__ import annotations

from typing import Literal

import msgspec

Status = Literal["ok", "degraded", "down"]


class ComponentHealth(msgspec.Struct):
    status: Status
    latency_ms: float
    detail: str = ""


class HealthRead(msgspec.Struct):
    status: Status
    version: str
    components: dict[str, ComponentHealth]
