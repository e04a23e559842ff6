"""Providers for health checks."""

from __future__ import annotations

from litestar.datastructures import State
from litestar.di import NamedDependency

from tether.core.resources import Resources
from tether.health.services import HealthService
from tether.recall.store import PartitionStore


def provide_health_service(state: State, resources: NamedDependency[Resources]) -> HealthService:
    store: PartitionStore | None = state.get("partitions")
    return HealthService(resources, None if store is None else store.stats)
