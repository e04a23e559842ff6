"""The base of every tenant-scoped repository: the tenant predicate is added here, once,
so no query of a subclass can forget it; so is the caller's reach (``tenancy.access.reach``)
when the repository is built for one."""

from __future__ import annotations

import uuid
from typing import Any, ClassVar, Generic, TypeVar

from sqlalchemy import ColumnElement, Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from tether.core.database import TenantOwned
from tether.core.ids import TenantId

M = TypeVar("M", bound=TenantOwned)


class TenantScopedRepository(Generic[M]):
    model: ClassVar[type[Any]]

    def __init__(
        self,
        session: AsyncSession,
        tenant_id: TenantId,
        reach: ColumnElement[bool] | None = None,
    ) -> None:
        self._session = session
        self._tenant_id = tenant_id
        self._reach = reach

    def _select(self) -> Select[tuple[M]]:
        statement = select(self.model).where(self.model.tenant_id == self._tenant_id)
        return statement if self._reach is None else statement.where(self._reach)

    async def get(self, row_id: uuid.UUID) -> M | None:
        statement = self._select().where(self.model.id == row_id)
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def page(
        self, after: uuid.UUID | None, limit: int, *criteria: ColumnElement[bool]
    ) -> list[M]:
        """Rows in id order after ``after`` (keyset pagination), filtered by ``criteria``."""
        statement = self._select().where(*criteria).order_by(self.model.id).limit(limit)
        if after is not None:
            statement = statement.where(self.model.id > after)
        return list((await self._session.execute(statement)).scalars())

    async def add(self, **values: Any) -> M:
        row: M = self.model(tenant_id=self._tenant_id, **values)
        self._session.add(row)
        await self._session.flush()
        return row
