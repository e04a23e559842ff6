"""Liveness/readiness endpoints (no authentication: probes and load balancers call them)."""

from __future__ import annotations

from litestar import Controller, Response, get
from litestar.di import NamedDependency

from tether.health.schemas import HealthRead
from tether.health.services import HealthService, is_ready


class HealthController(Controller):
    tags = ["health"]  # noqa: RUF012 - Litestar reads it as a class attribute

    @get("/health", operation_id="GetHealth", exclude_from_auth=True)
    async def health(self, health_service: NamedDependency[HealthService]) -> HealthRead:
        """Every component with its status and latency; always 200 while the process lives."""
        return await health_service.check()

    @get("/ready", operation_id="GetReadiness", exclude_from_auth=True)
    async def ready(self, health_service: NamedDependency[HealthService]) -> Response[HealthRead]:
        """200 when Postgres, pgvector, migrations and Redis are ok, else 503. Workers and
        the hot tier's Redis are reported in /health but do not decide readiness."""
        report = await health_service.check()
        return Response(report, status_code=200 if is_ready(report) else 503)
