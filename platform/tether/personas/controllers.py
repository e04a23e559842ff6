"""GET/PUT /v1/personas/{id}/profile and its history."""

from __future__ import annotations

import uuid
from typing import Annotated

from litestar import Controller, Response, get, put
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery, JSONBody

from tenancy.access.guard import policy
from tether.core.pagination import DEFAULT_LIMIT, Cursor, Limit
from tether.core.text import header, printable
from tether.personas.deps import provide_persona_profile_service
from tether.personas.schemas import PersonaProfilePage, PersonaProfileRead, PersonaProfileWrite
from tether.personas.services import PersonaProfileService, etag

Profiles = NamedDependency[PersonaProfileService]


class PersonaProfileController(Controller):
    path = "/v1/personas/{persona_id:uuid}/profile"
    tags = ["personas"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "persona_profile_service": Provide(provide_persona_profile_service, sync_to_thread=False)
    }

    @get(operation_id="GetPersonaProfile", opt=policy("persona_profile", "read"))
    async def get_profile(
        self, persona_id: FromPath[uuid.UUID], persona_profile_service: Profiles
    ) -> Response[PersonaProfileRead]:
        """The current profile; its ETag is what a PUT must send as If-Match."""
        profile = await persona_profile_service.get(persona_id)
        return Response(profile, headers={"ETag": etag(profile.version)})

    @put(operation_id="PutPersonaProfile", opt=policy("persona_profile", "write"))
    async def put_profile(
        self,
        persona_id: FromPath[uuid.UUID],
        data: JSONBody[PersonaProfileWrite],
        persona_profile_service: Profiles,
        if_match: Annotated[str | None, header(printable(64), "If-Match")] = None,
    ) -> Response[PersonaProfileRead]:
        """Replace the profile as a new version (412 if someone edited it since you read)."""
        profile = await persona_profile_service.put(persona_id, data, if_match)
        return Response(profile, headers={"ETag": etag(profile.version)})

    @get(
        "/history", operation_id="ListPersonaProfileHistory", opt=policy("persona_profile", "read")
    )
    async def history(
        self,
        persona_id: FromPath[uuid.UUID],
        persona_profile_service: Profiles,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> PersonaProfilePage:
        """Every version, oldest first."""
        return await persona_profile_service.history(persona_id, cursor, limit)
