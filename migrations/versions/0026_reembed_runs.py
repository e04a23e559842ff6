"""Per-tenant re-embed runs (decisions 0077-0079).

- ``reembed_runs``: one row per change of a tenant's embedding model: its status and
  progress (memories and knowledge chunks done of total), read at
  ``GET /v1/tenant/reembed-runs``. A tenant row under row security that fails closed
  (migration 0017).

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07 22:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
# Only adds: the previous release runs on this schema (decision 0062).
phase = "expand"
branch_labels = None
depends_on = None

APP_ROLE = "tether_app"
TENANT_MATCHES = "tenant_id::text = current_setting('tether.tenant_id', true)"
TABLE = "reembed_runs"


def _count(name: str) -> sa.Column[object]:
    return sa.Column(name, sa.Integer(), server_default="0", nullable=False)


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("settings_version", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(length=64), nullable=True),
        sa.Column("model", sa.String(length=64), nullable=True),
        sa.Column("dimension", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), server_default="pending", nullable=False),
        _count("memories_total"),
        _count("memories_done"),
        _count("chunks_total"),
        _count("chunks_done"),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_reembed_runs_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reembed_runs")),
    )
    op.create_index("ix_reembed_runs_tenant_created", TABLE, ["tenant_id", "created_at"])
    op.execute(
        f"""
        DO $$
        BEGIN
          IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            REVOKE ALL ON {TABLE} FROM {APP_ROLE};
            GRANT SELECT, INSERT, UPDATE, DELETE ON {TABLE} TO {APP_ROLE};
          END IF;
        END $$;
        """
    )
    op.execute(f"ALTER TABLE {TABLE} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {TABLE} FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON {TABLE} "
        f"USING ({TENANT_MATCHES}) WITH CHECK ({TENANT_MATCHES})"
    )


def downgrade() -> None:
    op.execute(f"DROP POLICY IF EXISTS tenant_isolation ON {TABLE}")
    op.drop_index("ix_reembed_runs_tenant_created", table_name=TABLE)
    op.drop_table(TABLE)
