"""GET /v1/relationships/{id}/recap: what to bring up from last time."""

from __future__ import annotations

import uuid
from datetime import datetime

from litestar import Controller, get
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery

from tenancy.access.guard import policy
from tether.core.text import IdentifierInQuery
from tether.recap.deps import provide_recap_service
from tether.recap.errors import RecapTimeInvalid
from tether.recap.schemas import Recap
from tether.recap.services import RecapService


class RecapController(Controller):
    path = "/v1/relationships/{relationship_id:uuid}"
    tags = ["recap"]  # noqa: RUF012
    dependencies = {  # noqa: RUF012
        "recap_service": Provide(provide_recap_service)
    }

    @get("/recap", operation_id="GetRecap", opt=policy("relationship_memory", "read"))
    async def recap(
        self,
        relationship_id: FromPath[uuid.UUID],
        recap_service: NamedDependency[RecapService],
        as_of: FromQuery[datetime | None] = None,
        session_id: FromQuery[IdentifierInQuery] = None,
    ) -> Recap:
        """For the start of a session: time since the last contact, the last session in
        short, open plans (due / overdue / upcoming), recent feelings, open topics.
        ``session_id`` (the session starting now) is left out of "last time"."""
        if as_of is not None and as_of.tzinfo is None:
            raise RecapTimeInvalid("as_of must carry a timezone offset")
        return await recap_service.recap(relationship_id, as_of, session_id)
