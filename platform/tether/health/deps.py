"""Providers for health checks."""

from __future__ import annotations

from litestar.di import NamedDependency

from tether.core.resources import Resources
from tether.health.services import HealthService


def provide_health_service(resources: NamedDependency[Resources]) -> HealthService:
    return HealthService(resources)
