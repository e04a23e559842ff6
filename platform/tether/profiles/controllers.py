"""/v1/users/{id}/profile[...] and /v1/users/{id}/consent."""

from __future__ import annotations

import uuid

from litestar import Controller, get, put
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, JSONBody
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.guard import policy
from tenancy.access.principal import Principal
from tether.core.resources import Resources
from tether.profiles import schemas as s
from tether.profiles.consent_cache import consent_cache
from tether.profiles.services import ProfileService


def provide_profile_service(
    state: State,
    db_session: NamedDependency[AsyncSession],
    resources: NamedDependency[Resources],
    principal: NamedDependency[Principal],
) -> ProfileService:
    return ProfileService(
        db_session,
        principal,
        state.policy.for_tenant(principal.tenant_id),
        consent_cache(resources),
        state.privacy_filters,
    )


Profiles = NamedDependency[ProfileService]


class GlobalProfileController(Controller):
    path = "/v1/users/{user_id:uuid}"
    tags = ["global profile"]  # noqa: RUF012
    dependencies = {"profile_service": Provide(provide_profile_service, sync_to_thread=False)}  # noqa: RUF012

    @get("/profile", operation_id="GetGlobalProfile", opt=policy("global_user_profile", "read"))
    async def get_profile(
        self, user_id: FromPath[uuid.UUID], profile_service: Profiles
    ) -> s.ProfileRead:
        """The fields both your key's policy and the user's consent allow; the others are
        listed in ``withheld`` with the reason. Every call is audited."""
        return await profile_service.get(user_id)

    @put(
        "/profile/fields/{field:str}",
        operation_id="PutGlobalProfileField",
        opt=policy("global_user_profile", "write"),
    )
    async def put_field(
        self,
        user_id: FromPath[uuid.UUID],
        field: FromPath[s.FieldNameInPath],
        data: JSONBody[s.ProfileFieldWrite],
        profile_service: Profiles,
    ) -> s.ProfileFieldRead:
        """Set one field (e.g. ``language``) with the consent scope that covers it."""
        return await profile_service.put_field(user_id, field, data)

    @get("/consent", operation_id="GetConsent", opt=policy("global_user_profile", "read"))
    async def get_consent(
        self, user_id: FromPath[uuid.UUID], profile_service: Profiles
    ) -> s.ConsentState:
        """The consent in force and its history, newest first."""
        return await profile_service.consent(user_id)

    @put("/consent", operation_id="PutConsent", opt=policy("global_user_profile", "write"))
    async def put_consent(
        self,
        user_id: FromPath[uuid.UUID],
        data: JSONBody[s.ConsentWrite],
        profile_service: Profiles,
    ) -> s.ConsentState:
        """Record the user's consent: the scopes granted from now on (an empty list
        withdraws everything). Kept with its time and source; audited."""
        return await profile_service.put_consent(user_id, data)
