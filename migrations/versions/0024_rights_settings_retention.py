"""Tenant settings, erasure tombstones, resumable retention sweeps and the ownership
lifecycle (decisions 0045-0047).

- ``tenant_settings``: one JSON document per version per tenant (sections validated by
  the application, so a new section needs no migration); the newest version is in force.
- ``erasure_tombstones``: the relationships of erased users (ids and a time only), which
  a worker checks before it writes, so a queued message that arrives after an erasure
  writes nothing.
- ``retention_runs``: where each tenant's retention sweep of one kind stands (its
  cutoff and what it removed so far), so an interrupted sweep resumes.
- ``relationships``: when the user last wrote and the creator last replied (the 72-hour
  rule), and the memory layers a pool operator inherits (null: the tenant's setting).
- ``ix_turns_tenant_at``: raw turns by age, for the retention sweep.

All new tables are tenant rows under row security that fails closed (migration 0017).

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-07 18:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0024"
down_revision = "0023"
# Only adds: the previous release runs on this schema (decision 0062).
phase = "expand"
branch_labels = None
depends_on = None

APP_ROLE = "tether_app"
TENANT_MATCHES = "tenant_id::text = current_setting('tether.tenant_id', true)"
NEW_TABLES = ("tenant_settings", "erasure_tombstones", "retention_runs")


def _tenant_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["tenant_id"],
        ["tenants.id"],
        name=op.f(f"fk_{table}_tenant_id_tenants"),
        ondelete="CASCADE",
    )


def _now() -> sa.Column[object]:
    return sa.Column(
        "created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
    )


def _protect(table: str) -> None:
    op.execute(
        f"""
        DO $$
        BEGIN
          IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            REVOKE ALL ON {table} FROM {APP_ROLE};
            GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {APP_ROLE};
          END IF;
        END $$;
        """
    )
    op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON {table} "
        f"USING ({TENANT_MATCHES}) WITH CHECK ({TENANT_MATCHES})"
    )


def upgrade() -> None:
    op.create_table(
        "tenant_settings",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("document", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("actor_key_id", sa.UUID(), nullable=True),
        _now(),
        _tenant_fk("tenant_settings"),
        sa.PrimaryKeyConstraint("tenant_id", "version", name=op.f("pk_tenant_settings")),
    )
    op.create_table(
        "erasure_tombstones",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("relationship_id", sa.UUID(), nullable=False),
        _now(),
        _tenant_fk("erasure_tombstones"),
        sa.PrimaryKeyConstraint("tenant_id", "relationship_id", name=op.f("pk_erasure_tombstones")),
    )
    op.create_table(
        "retention_runs",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("cutoff", sa.DateTime(timezone=True), nullable=False),
        sa.Column("removed", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("batches", sa.Integer(), server_default="0", nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        _tenant_fk("retention_runs"),
        sa.PrimaryKeyConstraint("tenant_id", "kind", name=op.f("pk_retention_runs")),
    )
    for table in NEW_TABLES:
        _protect(table)
    op.add_column("relationships", sa.Column("last_user_turn_at", sa.DateTime(timezone=True)))
    op.add_column("relationships", sa.Column("creator_replied_at", sa.DateTime(timezone=True)))
    op.add_column("relationships", sa.Column("pool_layers", sa.ARRAY(sa.String(length=16))))
    op.create_index(
        "ix_relationships_creator_silence",
        "relationships",
        ["tenant_id", "last_user_turn_at"],
        postgresql_where=sa.text("operator_kind = 'creator'"),
    )
    op.create_index("ix_turns_tenant_at", "turns", ["tenant_id", "at"])


def downgrade() -> None:
    op.drop_index("ix_turns_tenant_at", table_name="turns")
    op.drop_index("ix_relationships_creator_silence", table_name="relationships")
    op.drop_column("relationships", "pool_layers")
    op.drop_column("relationships", "creator_replied_at")
    op.drop_column("relationships", "last_user_turn_at")
    for table in reversed(NEW_TABLES):
        op.execute(f"DROP POLICY IF EXISTS tenant_isolation ON {table}")
        op.drop_table(table)
