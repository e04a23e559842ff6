"""Whether a document's indexing task failed to reach the queue (``unqueued``).

An upload or reindex accepted while the broker was away is stored "uploaded" with no
task queued. The stalled-document sweep found it only once it had not changed for
``stalled_after_seconds`` (30 min), like a document whose task was lost. The API now
marks the document when the send fails, and the next sweep (every 5 min) queues it.
A column with a constant default rewrites nothing; the partial index holds only
marked documents, a handful at most.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 14:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "knowledge_documents",
        sa.Column("unqueued", sa.Boolean(), nullable=False, server_default="false"),
    )
    op.create_index(
        "ix_knowledge_documents_unqueued",
        "knowledge_documents",
        ["updated_at"],
        postgresql_where=sa.text("unqueued"),
    )


def downgrade() -> None:
    op.drop_index("ix_knowledge_documents_unqueued", table_name="knowledge_documents")
    op.drop_column("knowledge_documents", "unqueued")
