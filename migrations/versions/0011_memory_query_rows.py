"""Each memory keeps, as a generated column, what a cold read for one query sends of it
apart from its distance to the query (``query_row``; decision 0018).

A read for one query built these bytes for every memory of the partition on every read
(a dozen send functions and concatenations per memory), which was half of its
statement. Postgres now computes them when a row is written; a read appends the
distance. A generated column, not a trigger: nothing that writes a row can leave it
stale (a trigger can be disabled).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 22:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

# tether.memories.models.QUERY_ROW_FIELDS at this revision (test_cold_rows.py checks that
# the column a migrated database computes is the model's).
QUERY_ROW_FIELDS = (
    "uuid_send(id) || float8send(importance) || float8send(confidence) || "
    "float8send(strength) || "
    "coalesce(timestamptz_send(last_recalled_at), '\\x8000000000000000'::bytea) || "
    "coalesce(timestamptz_send(expires_at), '\\x7fffffffffffffff'::bytea) || "
    "timestamptz_send(occurred_at) || boolsend(private_to_creator) || "
    "int4send(cardinality(tokens)) || "
    "int2send(coalesce(array_position(ARRAY['profile', 'preference', 'fact', 'event', "
    "'commitment', 'emotion', 'instruction', 'summary']::text[], memory_type::text), 0)::int2)"
    " || int2send(coalesce(array_position(ARRAY['working', 'episodic', 'semantic']::text[], "
    "layer::text), 0)::int2)"
)


def upgrade() -> None:
    # Rewrites the table (each partition) under an exclusive lock, as 0007 did: run it in
    # a maintenance window on a large installation (17 s for 1M memories on the bench
    # machine).
    op.execute(
        "ALTER TABLE memories ADD COLUMN query_row bytea "
        f"GENERATED ALWAYS AS ({QUERY_ROW_FIELDS}) STORED"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE memories DROP COLUMN query_row")
