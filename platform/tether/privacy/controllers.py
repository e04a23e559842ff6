"""GET/PUT /v1/tenant/privacy-patterns: what a tenant masks beyond the built-in kinds."""

from __future__ import annotations

from litestar import Controller, get, put
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import JSONBody
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.access.principal import Principal
from tether.privacy.schemas import PrivacyPatterns
from tether.privacy.services import PrivacyPatternService


def provide_privacy_pattern_service(
    state: State, db_session: NamedDependency[AsyncSession], principal: NamedDependency[Principal]
) -> PrivacyPatternService:
    return PrivacyPatternService(db_session, principal, state.privacy_filters)


Patterns = NamedDependency[PrivacyPatternService]


class PrivacyPatternController(Controller):
    path = "/v1/tenant/privacy-patterns"
    tags = ["privacy"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "privacy_pattern_service": Provide(provide_privacy_pattern_service, sync_to_thread=False)
    }

    @get(operation_id="GetPrivacyPatterns", opt=policy("tenant_settings", "read"))
    async def get_patterns(self, privacy_pattern_service: Patterns) -> PrivacyPatterns:
        return await privacy_pattern_service.get()

    @put(operation_id="PutPrivacyPatterns", opt=policy("tenant_settings", "write"))
    async def put_patterns(
        self, data: JSONBody[PrivacyPatterns], privacy_pattern_service: Patterns
    ) -> PrivacyPatterns:
        """Replace the tenant's patterns: ``[TAG]`` replaces each match before anything
        is stored. Other processes pick them up within ``tenant_settings_ttl_seconds``."""
        return await privacy_pattern_service.put(data)
