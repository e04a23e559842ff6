"""Indexes a cold read for one query answers from (decision 0024).

A cold read of a large relationship visited one heap page per memory, scattered as
writes left them: ~4,300 pages for 5,000 memories, ~3 µs each even when cached, so the
read grew with the table rather than with the relationship. ``ix_memories_recall``
holds, in partition order, every recallable memory with what the read takes of it;
``ix_memories_terms`` finds the memories holding a query term, the only rows whose
tokens the read fetches, through ``memory_terms()``: row-level security lets a query of
``tether_app`` use an index only for leakproof conditions, and array overlap is not
one, so the application role's read would otherwise test every row of the relationship
in the heap. The function runs as the table owner and applies the policy's own condition
(``TENANT_MATCHES``) itself. Vectors wider than 1,024 dimensions do not fit a btree entry:
those memories are found through ``ix_memories_recall_wide`` and read from their rows,
which ``vector_dimension_recorded`` makes safe to decide by ``embedding_dim``.
``ix_memories_terms`` has no pending list (``fastupdate = off``): every search would
scan that unsorted list, and 3,000 inserts into a partition made a 5,000-memory read
2.3 times slower until it was flushed.

``CREATE INDEX`` on the partitioned table blocks writes (not reads) while it builds:
on a large installation run it in a maintenance window (the bench machine built the
three for 1M memories in about a minute).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03 10:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# tether.memories.models holds the same; the read states them in these words, and
# test_cold_rows's plan test fails unless Postgres proves the index's predicate of it.
RECALLABLE = "is_active AND superseded_by IS NULL AND deleted_at IS NULL"
VECTOR_FITS = "embedding_dim IS NULL OR embedding_dim <= 1024"
VECTOR_TOO_WIDE = "embedding_dim > 1024"
INCLUDES = (
    "tenant_id, is_active, superseded_by, deleted_at, expires_at, source_session_id, "
    "query_row, embedding_model, embedding_dim, embedding"
)
APP_ROLE = "tether_app"
# The condition of the content tables' policy (0004), which memory_terms() applies.
TENANT_MATCHES = (
    "current_setting('tether.tenant_id', true) = '*' "
    "OR m.tenant_id::text = current_setting('tether.tenant_id', true)"
)
MEMORY_TERMS = f"""
CREATE OR REPLACE FUNCTION memory_terms(relationship uuid, tenant uuid, terms text[])
RETURNS TABLE (id uuid, tokens text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
  SELECT m.id, coalesce(array_to_string(m.tokens, ' '), '')
  FROM public.memories AS m
  WHERE m.relationship_id = relationship AND m.tenant_id = tenant
    AND m.is_active AND m.superseded_by IS NULL AND m.deleted_at IS NULL
    AND m.tokens && terms AND ({TENANT_MATCHES})
$$
"""
CHECK = "ck_memories_vector_dimension_recorded"
RECORDED = (
    "embedding IS NULL OR (embedding_dim IS NOT NULL AND embedding_dim = vector_dims(embedding))"
)


def upgrade() -> None:
    # A trusted extension: the database owner may create it.
    op.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    op.execute(f"ALTER TABLE memories DROP CONSTRAINT IF EXISTS {CHECK}")
    # Every writer records the width; a row that does not would break the index split.
    op.execute(
        "UPDATE memories SET embedding_dim = vector_dims(embedding) "
        "WHERE embedding IS NOT NULL AND embedding_dim IS DISTINCT FROM vector_dims(embedding)"
    )
    op.execute(f"ALTER TABLE memories ADD CONSTRAINT {CHECK} CHECK ({RECORDED}) NOT VALID")
    op.execute(
        "CREATE INDEX IF NOT EXISTS ix_memories_recall ON memories "
        f"(relationship_id, occurred_at, id) INCLUDE ({INCLUDES}) "
        f"WHERE ({RECALLABLE}) AND ({VECTOR_FITS})"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS ix_memories_recall_wide ON memories (relationship_id) "
        f"WHERE ({RECALLABLE}) AND {VECTOR_TOO_WIDE}"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS ix_memories_terms ON memories "
        "USING gin (relationship_id, tokens) WITH (fastupdate = off)"
    )
    op.execute(MEMORY_TERMS)
    op.execute("REVOKE ALL ON FUNCTION memory_terms(uuid, uuid, text[]) FROM PUBLIC")
    op.execute(
        f"""
        DO $$
        BEGIN
          IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            GRANT EXECUTE ON FUNCTION memory_terms(uuid, uuid, text[]) TO {APP_ROLE};
          END IF;
        END $$;
        """
    )
    with op.get_context().autocommit_block():
        op.execute(f"ALTER TABLE memories VALIDATE CONSTRAINT {CHECK}")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS memory_terms(uuid, uuid, text[])")
    op.execute("DROP INDEX IF EXISTS ix_memories_terms")
    op.execute("DROP INDEX IF EXISTS ix_memories_recall_wide")
    op.execute("DROP INDEX IF EXISTS ix_memories_recall")
    op.execute(f"ALTER TABLE memories DROP CONSTRAINT IF EXISTS {CHECK}")
    # btree_gin stays: another schema object may have come to use it.
