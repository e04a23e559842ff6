"""Object deletions after commit, for the optional S3-compatible file store (0083).

- ``file_deletions``: an object key or tenant/base prefix per row, written in the
  transaction that deletes the document or base (or, for an upload, committed before the
  object is written and removed by the upload's own transaction), removed once the
  objects are gone; ``not_before`` holds an upload's guard back while it may still
  commit.
  Under row-level security like every tenant table; no foreign key (it must outlive the
  rows it names).
- ``tether_pending_file_deletions``: the sweep's view across tenants (ids and keys only).

Expand only (decision 0062): a new table and function the previous release ignores.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07 22:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None
phase = "expand"

APP_ROLE = "tether_app"
SYSTEM_ROLE = "tether_system"
TENANT_MATCHES = "tenant_id::text = current_setting('tether.tenant_id', true)"
SIGNATURE = "tether_pending_file_deletions(integer)"
PENDING = """
CREATE FUNCTION tether_pending_file_deletions(max_rows integer)
RETURNS TABLE (id uuid, tenant_id uuid, key text, attempts integer)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
  SELECT f.id, f.tenant_id, f.key, f.attempts FROM public.file_deletions AS f
  WHERE f.not_before <= now()
  ORDER BY f.not_before LIMIT max_rows
$$"""


def upgrade() -> None:
    op.create_table(
        "file_deletions",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column(
            "not_before", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_file_deletions")),
    )
    op.execute(
        f"""
        DO $$
        BEGIN
          IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            REVOKE ALL ON file_deletions FROM {APP_ROLE};
            GRANT SELECT, INSERT, UPDATE, DELETE ON file_deletions TO {APP_ROLE};
          END IF;
        END $$;
        """
    )
    op.execute("ALTER TABLE file_deletions ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE file_deletions FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON file_deletions "
        f"USING ({TENANT_MATCHES}) WITH CHECK ({TENANT_MATCHES})"
    )
    op.execute(f"GRANT SELECT ON file_deletions TO {SYSTEM_ROLE}")
    op.execute(
        f"CREATE POLICY system_jobs ON file_deletions FOR SELECT TO {SYSTEM_ROLE} USING (true)"
    )
    op.execute(PENDING)
    op.execute(f"REVOKE ALL ON FUNCTION {SIGNATURE} FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION {SIGNATURE} TO {APP_ROLE}")
    op.execute(f"ALTER FUNCTION {SIGNATURE} OWNER TO {SYSTEM_ROLE}")


def downgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {SIGNATURE}")
    op.execute("DROP POLICY IF EXISTS system_jobs ON file_deletions")
    op.execute("DROP POLICY IF EXISTS tenant_isolation ON file_deletions")
    op.drop_table("file_deletions")
