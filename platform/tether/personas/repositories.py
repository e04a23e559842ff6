"""SQL for persona profile versions (append-only)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.exc import IntegrityError

from tenancy.scoped import TenantScopedRepository
from tether.personas.errors import ProfileChanged
from tether.personas.models import PersonaProfileVersion


class PersonaProfileRepository(TenantScopedRepository[PersonaProfileVersion]):
    model = PersonaProfileVersion

    async def latest(self, persona_id: uuid.UUID) -> PersonaProfileVersion | None:
        statement = (
            self._select()
            .where(PersonaProfileVersion.creator_persona_id == persona_id)
            .order_by(PersonaProfileVersion.version.desc())
            .limit(1)
        )
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def version(self, persona_id: uuid.UUID, version: int) -> PersonaProfileVersion | None:
        statement = self._select().where(
            PersonaProfileVersion.creator_persona_id == persona_id,
            PersonaProfileVersion.version == version,
        )
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def append(self, **values: Any) -> PersonaProfileVersion:
        """Insert the next version; a concurrent writer of the same version loses (412)."""
        try:
            async with self._session.begin_nested():
                row = await self.add(**values)
        except IntegrityError as exc:
            raise ProfileChanged("another edit created this version first") from exc
        await self._session.refresh(row)
        return row
