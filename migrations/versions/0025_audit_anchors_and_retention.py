"""Audit retention anchors (decision 0072).

- ``audit_anchors``: signed records of where a tenant's chain starts after retention
  removed its oldest events (append-only, tenant rows under row security).
- ``audit_events`` and ``audit_access_events`` may now lose rows, but only rows an
  anchor covers: the DELETE triggers refuse an event above the tenant's highest anchor
  (and an access event not sealed, or sealed above it). UPDATE and TRUNCATE stay
  refused. The application role still has no DELETE on either: the retention sweep
  calls ``tether_audit_prune(upto)``, a ``SECURITY DEFINER`` function that removes the
  current tenant's events up to ``upto`` only when an anchor covers it.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07 21:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
# Adds a table and relaxes two triggers; the previous release never deletes audit rows
# and runs on this schema unchanged (decision 0062).
phase = "expand"
branch_labels = None
depends_on = None

APP_ROLE = "tether_app"
SYSTEM_ROLE = "tether_system"
TENANT_MATCHES = "tenant_id::text = current_setting('tether.tenant_id', true)"

# Row security applies inside the trigger too: with no tenant set no anchor is seen and
# every DELETE is refused (fails closed).
ANCHORED = """
CREATE FUNCTION tether_audit_delete_anchored() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  covered bigint;
BEGIN
  -- Through JSON: one function serves two tables with different columns.
  covered := (to_jsonb(OLD) ->> CASE WHEN TG_TABLE_NAME = 'audit_events'
                                     THEN 'seq' ELSE 'sealed_seq' END)::bigint;
  IF covered IS NOT NULL AND EXISTS (
    SELECT 1 FROM audit_anchors a WHERE a.tenant_id = OLD.tenant_id AND a.seq >= covered
  ) THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION '% is append-only: DELETE refused above the retention anchor', TG_TABLE_NAME;
END $$
"""
PRUNE = """
CREATE FUNCTION tether_audit_prune(upto bigint) RETURNS bigint LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
  t uuid := nullif(current_setting('tether.tenant_id', true), '')::uuid;
  removed bigint;
BEGIN
  IF t IS NULL OR NOT EXISTS (
    SELECT 1 FROM audit_anchors a WHERE a.tenant_id = t AND a.seq >= upto
  ) THEN
    RAISE EXCEPTION 'audit prune refused: no retention anchor covers seq %', upto;
  END IF;
  DELETE FROM audit_access_events WHERE tenant_id = t AND sealed_seq <= upto;
  DELETE FROM audit_events WHERE tenant_id = t AND seq <= upto;
  GET DIAGNOSTICS removed = ROW_COUNT;
  RETURN removed;
END $$
"""


def _grant(statement: str) -> None:
    op.execute(
        f"""
        DO $$
        BEGIN
          IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            {statement}
          END IF;
        END $$;
        """
    )


def _anchors() -> None:
    op.create_table(
        "audit_anchors",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("keyed_from", sa.BigInteger(), nullable=False),
        sa.Column("run", sa.String(length=96), nullable=False),
        sa.Column("cutoff", sa.DateTime(timezone=True), nullable=False),
        sa.Column("signature", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_audit_anchors_tenant_id_tenants"),
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_anchors")),
    )
    op.create_index("ix_audit_anchors_tenant_seq", "audit_anchors", ["tenant_id", "seq"])
    op.execute(
        "CREATE TRIGGER audit_anchors_append_only BEFORE UPDATE OR DELETE "
        "ON audit_anchors FOR EACH ROW EXECUTE FUNCTION tether_audit_rows_append_only()"
    )
    op.execute(
        "CREATE TRIGGER audit_anchors_no_truncate BEFORE TRUNCATE ON audit_anchors "
        "FOR EACH STATEMENT EXECUTE FUNCTION tether_audit_rows_append_only()"
    )
    op.execute("ALTER TABLE audit_anchors ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE audit_anchors FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON audit_anchors "
        f"USING ({TENANT_MATCHES}) WITH CHECK ({TENANT_MATCHES})"
    )
    _grant(
        f"REVOKE ALL ON audit_anchors FROM {APP_ROLE}; "
        f"GRANT SELECT, INSERT ON audit_anchors TO {APP_ROLE};"
    )


def upgrade() -> None:
    _anchors()
    op.execute(ANCHORED)
    op.execute("DROP TRIGGER audit_events_append_only ON audit_events")
    op.execute(
        "CREATE TRIGGER audit_events_append_only BEFORE UPDATE ON audit_events "
        "FOR EACH ROW EXECUTE FUNCTION tether_audit_append_only()"
    )
    op.execute(
        "CREATE TRIGGER audit_events_delete_anchored BEFORE DELETE ON audit_events "
        "FOR EACH ROW EXECUTE FUNCTION tether_audit_delete_anchored()"
    )
    op.execute("DROP TRIGGER audit_access_events_no_delete ON audit_access_events")
    op.execute(
        "CREATE TRIGGER audit_access_events_delete_anchored BEFORE DELETE "
        "ON audit_access_events FOR EACH ROW EXECUTE FUNCTION tether_audit_delete_anchored()"
    )
    op.execute(PRUNE)
    op.execute("REVOKE ALL ON FUNCTION tether_audit_prune(bigint) FROM PUBLIC")
    _grant(f"GRANT EXECUTE ON FUNCTION tether_audit_prune(bigint) TO {APP_ROLE};")
    # Like every definer function (migration 0017), it runs as the system role, which
    # nobody logs in as; the tenant policy still applies to it (no system_jobs policy),
    # so it reaches the current tenant's rows only.
    op.execute(f"GRANT SELECT ON audit_anchors TO {SYSTEM_ROLE}")
    op.execute(f"GRANT SELECT, DELETE ON audit_events, audit_access_events TO {SYSTEM_ROLE}")
    op.execute(f"ALTER FUNCTION tether_audit_prune(bigint) OWNER TO {SYSTEM_ROLE}")


def downgrade() -> None:
    op.execute("DROP FUNCTION tether_audit_prune(bigint)")
    op.execute(f"REVOKE SELECT, DELETE ON audit_events, audit_access_events FROM {SYSTEM_ROLE}")
    op.execute("DROP TRIGGER audit_access_events_delete_anchored ON audit_access_events")
    op.execute(
        "CREATE TRIGGER audit_access_events_no_delete BEFORE DELETE ON audit_access_events "
        "FOR EACH ROW EXECUTE FUNCTION tether_audit_rows_append_only()"
    )
    op.execute("DROP TRIGGER audit_events_delete_anchored ON audit_events")
    op.execute("DROP TRIGGER audit_events_append_only ON audit_events")
    op.execute(
        "CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events "
        "FOR EACH ROW EXECUTE FUNCTION tether_audit_append_only()"
    )
    op.execute("DROP FUNCTION tether_audit_delete_anchored()")
    op.drop_table("audit_anchors")
