"""The access log, keyed audit chains and signed checkpoints (decisions 0042-0044).

- ``audit_access_events``: one row per read of relationship content, appended without a
  lock; the sealer sets ``sealed_seq`` once (the only column the service may update, and
  only from NULL: a trigger refuses anything else, and every DELETE or TRUNCATE).
- ``audit_checkpoints``: signed copies of a tenant's chain head, append-only.
- ``audit_chain_heads.keyed_from``: from which sequence number the tenant's chain is
  keyed (HMAC-SHA256). Existing chains keep their plain SHA-256 links up to their
  current head and are keyed from the next event on; new chains from the first.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07 18:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0022"
down_revision = "0021"
# Only adds: the previous release runs on this schema (decision 0062).
phase = "expand"
branch_labels = None
depends_on = None

APP_ROLE = "tether_app"
SETTING = "current_setting('tether.tenant_id', true)"
TENANT_MATCHES = f"tenant_id::text = {SETTING}"

APPEND_ONLY = """
CREATE FUNCTION tether_audit_rows_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP;
END $$
"""
SEAL_ONCE = """
CREATE FUNCTION tether_access_seal_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.sealed_seq IS NOT NULL
     OR (to_jsonb(NEW) - 'sealed_seq') IS DISTINCT FROM (to_jsonb(OLD) - 'sealed_seq') THEN
    RAISE EXCEPTION 'audit_access_events: only sealing an unsealed event is allowed';
  END IF;
  RETURN NEW;
END $$
"""
# Existing chains: keyed from the event after their current head. Per tenant, since the
# heads are under forced row security even for their owner.
KEYED_EPOCH = """
DO $$
DECLARE
  t uuid;
BEGIN
  FOR t IN SELECT tether_tenant_ids() LOOP
    PERFORM set_config('tether.tenant_id', t::text, true);
    UPDATE audit_chain_heads SET keyed_from = seq + 1 WHERE tenant_id = t;
  END LOOP;
  PERFORM set_config('tether.tenant_id', '', true);
END $$
"""


def _protect(table: str, app_privileges: str) -> None:
    op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON {table} "
        f"USING ({TENANT_MATCHES}) WITH CHECK ({TENANT_MATCHES})"
    )
    op.execute(
        f"""
        DO $$
        BEGIN
          IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            REVOKE ALL ON {table} FROM {APP_ROLE};
            {app_privileges}
          END IF;
        END $$
        """
    )


def _access_events() -> None:
    op.create_table(
        "audit_access_events",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor_key_id", sa.UUID(), nullable=True),
        sa.Column("actor_role", sa.String(length=16), nullable=True),
        sa.Column("actor_subject", sa.String(length=128), nullable=True),
        sa.Column("purpose", sa.String(length=32), nullable=False),
        sa.Column("relationship_id", sa.UUID(), nullable=True),
        sa.Column("global_user_id", sa.UUID(), nullable=True),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        sa.Column("memory_ids", postgresql.ARRAY(sa.UUID()), nullable=False),
        sa.Column("sealed_seq", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_audit_access_events_tenant_id_tenants"),
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_access_events")),
    )
    op.create_index(
        "ix_audit_access_events_user",
        "audit_access_events",
        ["tenant_id", "global_user_id", "id"],
    )
    op.create_index(
        "ix_audit_access_events_relationship",
        "audit_access_events",
        ["tenant_id", "relationship_id", "id"],
    )
    op.create_index(
        "ix_audit_access_events_unsealed",
        "audit_access_events",
        ["tenant_id", "id"],
        postgresql_where=sa.text("sealed_seq IS NULL"),
    )
    op.create_index(
        "ix_audit_access_events_sealed", "audit_access_events", ["tenant_id", "sealed_seq"]
    )
    op.execute(SEAL_ONCE)
    op.execute(
        "CREATE TRIGGER audit_access_events_seal_once BEFORE UPDATE ON audit_access_events "
        "FOR EACH ROW EXECUTE FUNCTION tether_access_seal_once()"
    )
    for event, level in (("DELETE", "ROW"), ("TRUNCATE", "STATEMENT")):
        op.execute(
            f"CREATE TRIGGER audit_access_events_no_{event.lower()} BEFORE {event} "
            f"ON audit_access_events FOR EACH {level} "
            "EXECUTE FUNCTION tether_audit_rows_append_only()"
        )
    _protect(
        "audit_access_events",
        f"GRANT SELECT, INSERT ON audit_access_events TO {APP_ROLE}; "
        f"GRANT UPDATE (sealed_seq) ON audit_access_events TO {APP_ROLE};",
    )


def _checkpoints() -> None:
    op.create_table(
        "audit_checkpoints",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("keyed_from", sa.BigInteger(), nullable=False),
        sa.Column("signature", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_audit_checkpoints_tenant_id_tenants"),
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_checkpoints")),
    )
    op.create_index("ix_audit_checkpoints_tenant_seq", "audit_checkpoints", ["tenant_id", "seq"])
    op.execute(
        "CREATE TRIGGER audit_checkpoints_append_only BEFORE UPDATE OR DELETE "
        "ON audit_checkpoints FOR EACH ROW EXECUTE FUNCTION tether_audit_rows_append_only()"
    )
    op.execute(
        "CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON audit_checkpoints "
        "FOR EACH STATEMENT EXECUTE FUNCTION tether_audit_rows_append_only()"
    )
    _protect("audit_checkpoints", f"GRANT SELECT, INSERT ON audit_checkpoints TO {APP_ROLE};")


def upgrade() -> None:
    op.execute(APPEND_ONLY)
    op.add_column(
        "audit_chain_heads",
        sa.Column("keyed_from", sa.BigInteger(), server_default=sa.text("1"), nullable=False),
    )
    op.execute(KEYED_EPOCH)
    _access_events()
    _checkpoints()


def downgrade() -> None:
    op.drop_table("audit_checkpoints")
    op.drop_table("audit_access_events")
    op.execute("DROP FUNCTION IF EXISTS tether_access_seal_once()")
    op.execute("DROP FUNCTION IF EXISTS tether_audit_rows_append_only()")
    op.drop_column("audit_chain_heads", "keyed_from")
