"""How often the stalled-document sweep queued a document's indexing again.

A document accepted while the broker was away (its indexing never queued), or whose
task was lost, waited "uploaded" or "indexing" until someone asked for a reindex. The
sweep (tether.knowledge.stalled) queues it again a few times and then marks it failed;
this column counts those tries since the last upload or reindex. Adding a column with a
constant default rewrites nothing.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 06:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "knowledge_documents",
        sa.Column("requeues", sa.Integer(), nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_column("knowledge_documents", "requeues")
