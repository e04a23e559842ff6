"""Memory vectors stored as halfvec (float16): half the bytes, and inline in the row.

A 512-d float32 vector (2 KB) pushed every memory row past Postgres's TOAST threshold,
so each vector lived out of line: computing a cold partition's distances read 5,000
TOAST entries. As float16 (1 KB) the row stays inline. Rankings do not move: the hot
tier already held float16 vectors. See docs/decisions/0010.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29 18:30:00
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Rewrites the table (and each partition): run it in a maintenance window on a
    # large installation.
    op.execute("ALTER TABLE memories ALTER COLUMN embedding TYPE halfvec USING embedding::halfvec")


def downgrade() -> None:
    op.execute("ALTER TABLE memories ALTER COLUMN embedding TYPE vector USING embedding::vector")
