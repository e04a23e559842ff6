"""Providers for the identity graph."""

from __future__ import annotations

from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.graph.services import GraphService


def provide_graph_service(
    db_session: NamedDependency[AsyncSession], principal: NamedDependency[Principal]
) -> GraphService:
    return GraphService(db_session, principal)
