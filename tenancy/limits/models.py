"""A tenant's limits as stored: what the operator allows it and what its admin chose."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, func
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from tether.core.database import Base


class TenantLimitsRow(Base):
    """One row per tenant that has any limit of its own (none: the settings apply).

    Both maps hold ``{limit name: value}``; a name missing from ``allowance`` takes the
    deployment's default (``TETHER_LIMITS__*``), one missing from ``chosen`` the
    allowance."""

    __tablename__ = "tenant_limits"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    # Set by the operator (``tether tenant limits``): the most the tenant may use.
    allowance: Mapped[dict[str, int]] = mapped_column(JSONB, server_default="{}")
    # Set by the tenant's admin (``PUT /v1/tenant/limits``), each at most its allowance.
    chosen: Mapped[dict[str, int]] = mapped_column(JSONB, server_default="{}")
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now()
    )
