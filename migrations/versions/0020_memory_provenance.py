"""How each memory was learned, and memories held back in a conflict (decision 0053).

- ``memories.provenance``: ``user_stated``, ``rule_inferred``, ``llm_inferred``,
  ``staff_entered`` or ``user_entered``. Existing rows: manual memories were entered by
  staff (the API had no other way); summaries and extracted memories below confidence
  0.7 (a "yes" to the assistant's question starts at 0.65) were inferred by the rules;
  every other extracted memory was stated by the user. The LLM step left no trace, so
  none is backfilled as ``llm_inferred``. A constant default, so adding the column
  rewrites no row; the backfill updates only the rows that differ from it.
- ``memories.conflicts_with``: set on a memory that the pipeline held back (inactive)
  because it would have replaced a memory of stronger evidence; with a partial index
  for the relationship's list of conflicts. Row security is the table's, unchanged.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07 18:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0020"
down_revision = "0019"
# Only adds: the previous release runs on this schema (decision 0062).
phase = "expand"
branch_labels = None
depends_on = None

BACKFILL = """
UPDATE memories SET provenance = CASE
    WHEN origin = 'manual' THEN 'staff_entered'
    ELSE 'rule_inferred' END
WHERE origin = 'manual' OR memory_type = 'summary' OR confidence < 0.7
"""


def upgrade() -> None:
    op.add_column(
        "memories",
        sa.Column("provenance", sa.String(16), server_default="user_stated", nullable=False),
    )
    op.add_column("memories", sa.Column("conflicts_with", postgresql.UUID(as_uuid=True)))
    op.execute(BACKFILL)
    op.create_index(
        "ix_memories_conflicts",
        "memories",
        ["relationship_id", "conflicts_with"],
        postgresql_where=sa.text("conflicts_with IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_memories_conflicts", table_name="memories")
    op.drop_column("memories", "conflicts_with")
    op.drop_column("memories", "provenance")
