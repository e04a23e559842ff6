"""Partition snapshots are gone (decision 0030): drop their table and the trigger on
``memories`` that kept them.

Since cold requests read only what their query needs (decisions 0017, 0018), snapshots
spoke only for the background fill after a cold read, at the cost of a statement-level
trigger with transition tables on every memory write, an advisory-lock protocol and a
megabyte rewrite per write burst to a large relationship. A fill now reads the rows.
The table held derived data only: nothing is lost.

The downgrade rebuilds the state of revision 0018 (an empty, unlogged table, its
fail-closed policy and grants, the trigger and its function, owned by the system role)
by running the migrations that made it and what 0017 did to them; the next fills of
large relationships would store snapshots again.

Revision ID: 0019
Revises: 0018
Create Date: 2027-01-10 12:00:00
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision = "0019"
down_revision = "0018"

APP_ROLE, SYSTEM_ROLE = "tether_app", "tether_system"
_TENANT = "tenant_id::text = current_setting('tether.tenant_id', true)"
# What migration 0017 did to the table and its trigger function (fails closed).
AS_0017_LEFT_THEM = (
    "ALTER TABLE recall_snapshots FORCE ROW LEVEL SECURITY",
    "DROP POLICY IF EXISTS tenant_isolation ON recall_snapshots",
    f"CREATE POLICY tenant_isolation ON recall_snapshots USING ({_TENANT}) WITH CHECK ({_TENANT})",
    f"REVOKE TRUNCATE, REFERENCES, TRIGGER ON recall_snapshots FROM {APP_ROLE}",
    f"GRANT SELECT, UPDATE, DELETE ON recall_snapshots TO {SYSTEM_ROLE}",
    f"CREATE POLICY system_jobs ON recall_snapshots TO {SYSTEM_ROLE} "
    "USING (true) WITH CHECK (true)",
    f"ALTER FUNCTION recall_snapshots_forget() OWNER TO {SYSTEM_ROLE}",
    "REVOKE ALL ON FUNCTION recall_snapshots_forget() FROM PUBLIC",
)
branch_labels = None
depends_on = None


def upgrade() -> None:
    for event in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER IF EXISTS recall_snapshots_on_{event} ON memories")
    op.execute("DROP FUNCTION IF EXISTS recall_snapshots_forget()")
    op.execute("DROP TABLE IF EXISTS recall_snapshots")


def downgrade() -> None:
    for name in ("0008_recall_snapshots", "0009_snapshot_changes", "0015_unlogged_snapshots"):
        path = Path(__file__).with_name(f"{name}.py")
        spec = importlib.util.spec_from_file_location(f"_migration_{name}", path)
        if spec is None or spec.loader is None:
            raise RuntimeError(f"migration {name} not found")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.upgrade()
    for statement in AS_0017_LEFT_THEM:
        op.execute(statement)
