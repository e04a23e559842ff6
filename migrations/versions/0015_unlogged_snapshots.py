"""Partition snapshots are not written to the WAL (decision 0026).

A snapshot is derived data (decision 0011): every row can be dropped and the next cold
read rebuilds it from the memories. Written to the WAL, each store of a 5,000-memory
snapshot (about 1.5 MB) was WAL too: at 1M memories, 2.5 minutes of the bench's
measurements wrote ~530 MB of WAL, mostly these stores, which forced a checkpoint, and
the dead TOAST of replaced snapshots was vacuumed with more, while reads were measured.
An unlogged table writes none. Postgres empties it after a crash, and a standby has it
empty: the reads then come from the rows until the snapshots are stored again, as after
any eviction.

The existing snapshots are dropped rather than rewritten under the table's lock: the
next fill of each large relationship stores its snapshot again.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03 13:45:00
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("TRUNCATE recall_snapshots")
    op.execute("ALTER TABLE recall_snapshots SET UNLOGGED")


def downgrade() -> None:
    op.execute("ALTER TABLE recall_snapshots SET LOGGED")
