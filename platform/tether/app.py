"""The composition root: builds the Litestar application from settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from litestar import Litestar
from litestar.datastructures import State
from litestar.di import Provide
from litestar.middleware import DefineMiddleware
from litestar.plugins.opentelemetry import OpenTelemetryPlugin
from litestar.types import ASGIApp

import tether
from tenancy.access.authenticator import Authenticator
from tenancy.access.deps import provide_principal
from tenancy.access.failures import FailedAuthentications
from tenancy.access.guard import policy_guard
from tenancy.access.key_usage import KeyUsage
from tenancy.access.middleware import ApiKeyAuthMiddleware
from tenancy.access.policy import PolicyEnforcer
from tenancy.access.tenant_policies import TenantPolicies
from tenancy.audit import keys as audit_keys
from tenancy.audit.access import AccessLog
from tenancy.limits.cache import TenantLimitsCache
from tenancy.limits.middleware import rate_limits
from tenancy.limits.quotas import Quotas
from tenancy.limits.rates import RequestLimiter
from tenancy.relationships.deps import provide_card_cache, provide_relationship_directory
from tenancy.settings.cache import TenantSettingsCache
from tether.api.after_response import after_response_middleware
from tether.api.body import TetherRequest
from tether.api.early_refusals import early_refusals
from tether.api.metrics import http_tracing, route_telemetry
from tether.api.openapi import assets_router, openapi_config
from tether.api.ops_port import split_ops_port
from tether.api.problems import EXCEPTION_HANDLERS
from tether.api.request_id import request_id_middleware
from tether.console.router import console_router, template_config
from tether.core.deps import provide_redis, provide_resources, provide_session, provide_settings
from tether.core.heap import freeze_startup_heap
from tether.core.instruments import watch
from tether.core.resources import Resources, open_resources
from tether.core.settings import Settings
from tether.core.telemetry import setup_telemetry
from tether.health.deps import provide_health_service
from tether.privacy.tenant_filters import TenantFilters
from tether.providers.configured import embedding_provider
from tether.recall.deps import partition_store
from tether.recall.reinforcement import ReinforcementBuffer
from tether.recall.services import warm_up
from tether.recall.tenant_embedders import TenantEmbedders
from tether.rights.controllers import provide_user_eraser
from tether.routes import ROUTE_HANDLERS
from tether.turns.claims import TurnClaims


def bind_resources(app: Litestar, resources: Resources) -> None:
    """Attach this event loop's resources to the app (the lifespan does it; tests may)."""
    app.state.resources = resources
    settings = resources.settings
    app.state.authenticator = Authenticator(
        resources.sessions,
        settings.access,
        FailedAuthentications(resources.redis, settings.limits.failed_auth_per_minute),
        KeyUsage(resources.sessions, settings.access.last_used_resolution_seconds),
    )
    app.state.tenant_limits = TenantLimitsCache(
        resources.sessions, settings.limits, settings.identity.tenant_settings_ttl_seconds
    )
    app.state.tenant_settings = TenantSettingsCache(
        resources.sessions, settings.identity.tenant_settings_ttl_seconds
    )
    app.state.request_limiter = RequestLimiter(resources.redis, settings.limits.burst_seconds)
    app.state.quotas = Quotas(
        resources.redis, app.state.tenant_limits, settings.limits.usage_recount_seconds
    )
    app.state.policy = TenantPolicies(
        PolicyEnforcer(), resources.sessions, resources.settings.access.policy_cache_seconds
    )
    app.state.turn_claims = TurnClaims(resources.redis, resources.settings.ingest)
    recall = resources.settings.recall
    app.state.embedders = TenantEmbedders(
        app.state.embedder, settings.providers, app.state.tenant_settings
    )
    app.state.partitions = partition_store(resources, app.state.embedder.name)
    app.state.reinforcement = ReinforcementBuffer(resources.tasks, recall.reinforce_flush_seconds)
    app.state.access_log = AccessLog(
        resources.sessions, resources.settings.audit.access_flush_seconds
    )
    watch(lambda: app.state.partitions.stats.hit_rate, resources.settings.require_broker_url())


def create_app(settings: Settings) -> Litestar:
    """A Litestar app bound to ``settings`` (tests build their own)."""
    setup_telemetry("tether-api", settings, scrape=True)
    audit_keys.configure(settings)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with open_resources(settings) as resources:
            bind_resources(app, resources)
            # Load the tokenizer dictionary and the embedding model before the first
            # request (not on it), off the event loop.
            await anyio.to_thread.run_sync(warm_up, settings, app.state.embedder)
            freeze_startup_heap()
            yield
            await app.state.partitions.drain()
            app.state.partitions.close()
            await app.state.reinforcement.flush()
            await app.state.access_log.close()
            await app.state.authenticator.usage.flush()
            await app.state.embedders.aclose()
            await app.state.embedder.aclose()

    # The console's pages sign in with a session cookie, not a bearer key (docs/console.md).
    console = [console_router()] if settings.console.enabled else []
    return Litestar(
        route_handlers=[*ROUTE_HANDLERS, assets_router(), *console],
        lifespan=[lifespan],
        state=State(
            {
                "privacy_filters": TenantFilters(settings.identity.tenant_settings_ttl_seconds),
                "embedder": embedding_provider(settings),
            }
        ),
        dependencies={
            "resources": Provide(provide_resources, sync_to_thread=False),
            "settings": Provide(provide_settings, sync_to_thread=False),
            "redis": Provide(provide_redis, sync_to_thread=False),
            "db_session": Provide(provide_session),
            "principal": Provide(provide_principal, sync_to_thread=False),
            "card_cache": Provide(provide_card_cache, sync_to_thread=False),
            "user_eraser": Provide(provide_user_eraser, sync_to_thread=False),
            "relationship_directory": Provide(provide_relationship_directory, sync_to_thread=False),
            "health_service": Provide(provide_health_service, sync_to_thread=False),
        },
        middleware=[
            route_telemetry,
            DefineMiddleware(ApiKeyAuthMiddleware, exclude=["^/schema", "^/console"]),
            rate_limits,
        ],
        plugins=[OpenTelemetryPlugin(http_tracing())],
        guards=[policy_guard],
        exception_handlers=EXCEPTION_HANDLERS,
        request_class=TetherRequest,
        template_config=template_config(),
        request_max_body_size=settings.api.max_body_bytes,
        openapi_config=openapi_config(tether.__version__),
        debug=False,
    )


def create_asgi(settings: Settings) -> ASGIApp:
    """The app as the server runs it: inside the outer middleware (and split over the
    operations port when one is set)."""
    app = with_outer_middleware(create_app(settings))
    ops_port = settings.api.ops_port
    return app if ops_port is None else split_ops_port(app, ops_port)


def with_outer_middleware(app: Litestar) -> ASGIApp:
    """``app`` in the middleware that wraps even its 404s: the request id (outermost, so
    every answer carries one), the mark of when a response is sent, which background
    work spawned after the response waits for, and the refusals decided from memory."""
    return request_id_middleware(after_response_middleware(early_refusals(app)))
