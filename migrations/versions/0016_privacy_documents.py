"""Tenants choose whether knowledge-base documents pass the privacy filter.

Off by default: documents are reference material a tenant uploads on purpose (docs/
privacy-filter.md). ``PUT /v1/tenant/privacy-patterns`` turns it on.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-10 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "tenants",
        sa.Column(
            "privacy_filter_documents", sa.Boolean(), server_default=sa.false(), nullable=False
        ),
    )


def downgrade() -> None:
    op.drop_column("tenants", "privacy_filter_documents")
