"""SQL for global profile fields and consent records, scoped by tenant and user."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.models import GlobalUser
from tether.core.ids import TenantId, id_after, new_id
from tether.profiles.grants import Grant
from tether.profiles.models import ConsentRecord, GlobalProfileField


class ProfileRepository:
    def __init__(self, session: AsyncSession, tenant_id: TenantId) -> None:
        self._session = session
        self._tenant_id = tenant_id

    async def fields(self, user_id: uuid.UUID) -> list[GlobalProfileField]:
        statement = (
            select(GlobalProfileField)
            .where(
                GlobalProfileField.tenant_id == self._tenant_id,
                GlobalProfileField.global_user_id == user_id,
            )
            .order_by(GlobalProfileField.field)
        )
        return list((await self._session.execute(statement)).scalars())

    async def upsert(self, user_id: uuid.UUID, field: str, **values: object) -> GlobalProfileField:
        base = insert(GlobalProfileField).values(
            global_user_id=user_id, field=field, tenant_id=self._tenant_id, **values
        )
        statement = base.on_conflict_do_update(
            index_elements=[GlobalProfileField.global_user_id, GlobalProfileField.field],
            set_={**values, "updated_at": datetime.now(UTC)},
            where=GlobalProfileField.tenant_id == self._tenant_id,
        ).returning(GlobalProfileField)
        row: GlobalProfileField = (await self._session.execute(statement)).scalar_one()
        return row

    def _newest_first(self, user_id: uuid.UUID, *columns: Any) -> Any:
        """The user's consent records, newest (highest id: the one in force) first."""
        return (
            select(*columns)
            .where(
                ConsentRecord.tenant_id == self._tenant_id, ConsentRecord.global_user_id == user_id
            )
            .order_by(ConsentRecord.id.desc())
        )

    async def consents(self, user_id: uuid.UUID) -> list[ConsentRecord]:
        """Newest first."""
        statement = self._newest_first(user_id, ConsentRecord)
        return list((await self._session.execute(statement)).scalars())

    async def current_grant(self, user_id: uuid.UUID) -> Grant:
        """The scopes of the user's current consent (none without one, or withdrawn),
        with the record they come from."""
        columns = (ConsentRecord.id, ConsentRecord.withdrawn, ConsentRecord.scopes)
        row = (await self._session.execute(self._newest_first(user_id, *columns).limit(1))).first()
        if row is None:
            return Grant.of(None, frozenset())
        return Grant.of(row.id, frozenset() if row.withdrawn else frozenset(row.scopes))

    async def lock_consent(self, user_id: uuid.UUID) -> None:
        """Serialise consent changes of one user until the transaction ends, so records
        are made (and their ids taken) in the order the changes commit."""
        statement = (
            select(GlobalUser.id)
            .where(GlobalUser.tenant_id == self._tenant_id, GlobalUser.id == user_id)
            .with_for_update(key_share=True)
        )
        await self._session.execute(statement)

    async def add_consent(
        self, user_id: uuid.UUID, scopes: list[str], source: str, actor_key_id: uuid.UUID | None
    ) -> ConsentRecord:
        """Append a decision; call under :meth:`lock_consent`. Its id is greater than
        every earlier record's, even one made by a host whose clock runs ahead: the
        highest id is the consent in force."""
        latest = await self._session.scalar(self._newest_first(user_id, ConsentRecord.id).limit(1))
        record = ConsentRecord(
            id=new_id() if latest is None else id_after(latest),
            global_user_id=user_id,
            tenant_id=self._tenant_id,
            scopes=scopes,
            source=source,
            withdrawn=not scopes,
            actor_key_id=actor_key_id,
        )
        self._session.add(record)
        await self._session.flush()
        await self._session.refresh(record)
        return record
