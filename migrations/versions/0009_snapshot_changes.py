"""Partition snapshots survive writes: the trigger records which memories a write touched
instead of deleting the snapshot, and a cold read completes the snapshot with those rows
(decision 0014).

A write that inserts memories or moves them into a relationship, or updates anything a
snapshot holds except the text (activity, supersession, soft deletion, kind, layer, time,
visibility, session), appends the ids of the memories it touched to the snapshot's
``changed``; a cold read takes those memories from their rows. A write that deletes a
memory or changes its text or tokens still deletes the snapshot (an edit or an erasure
must not leave the old text in a derived copy), and so does one that takes ``changed``
past ``MAX_CHANGES`` (the read would approach a read from rows anyway), and a memory
moving out deletes the snapshot of the relationship it left (its text would stay there).
The lock protocol of migration 0008 is unchanged.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30 01:30:00
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _migration_0008() -> ModuleType:
    path = Path(__file__).with_name("0008_recall_snapshots.py")
    spec = importlib.util.spec_from_file_location("migration_0008", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_PREVIOUS = _migration_0008()
# The lock and the guarded columns are 0008's; tether.recall.cold keeps the same values
# (a test compares them).
LOCK_CLASS: int = _PREVIOUS.LOCK_CLASS
LOCK_BUCKETS: int = _PREVIOUS.LOCK_BUCKETS
SNAPSHOT_COLUMNS: tuple[str, ...] = _PREVIOUS.SNAPSHOT_COLUMNS
MAX_CHANGES = 256
# Changing these deletes the snapshot rather than recording the memory.
TEXT_COLUMNS = ("content", "tokens")


def _row(alias: str, columns: tuple[str, ...]) -> str:
    return "ROW(" + ", ".join(f"{alias}.{c}" for c in columns) + ")"


_MOVED = f"{_row('o', SNAPSHOT_COLUMNS)} IS DISTINCT FROM {_row('n', SNAPSHOT_COLUMNS)}"
# A memory's text went from a relationship's snapshot if it changed, or if the memory
# left the relationship (its later edits or erasure would not reach this snapshot).
_TEXT_WENT = (
    f"({_row('o', TEXT_COLUMNS)} IS DISTINCT FROM {_row('n', TEXT_COLUMNS)} "
    "OR o.relationship_id IS DISTINCT FROM n.relationship_id "
    "OR o.tenant_id IS DISTINCT FROM n.tenant_id)"
)

# Each branch yields (relationship, memory, whether its text went): an update counts for
# the relationship a memory left and the one it joined (once if it stayed).
WRITTEN = {
    "INSERT": "SELECT relationship_id, id, false FROM new_rows",
    "DELETE": "SELECT relationship_id, id, true FROM old_rows",
    "UPDATE": f"""
      SELECT o.relationship_id, o.id, {_TEXT_WENT} FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE {_MOVED}
      UNION
      SELECT n.relationship_id, n.id, {_TEXT_WENT} FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE {_MOVED}""",
}

# Snapshots of format 1 (migration 0008's readers) do not know about ``changed``: a
# write deletes them, as 0008 did, so a release still running during a rollout never
# reads a snapshot that a write changed.
RECORD = f"""
CREATE OR REPLACE FUNCTION recall_snapshots_forget() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
  rels uuid[];
  ids uuid[];
  text_went boolean[];
  touched uuid[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(w.r), array_agg(w.i), array_agg(w.t) INTO rels, ids, text_went
      FROM ({WRITTEN["INSERT"]}) AS w (r, i, t);
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(w.r), array_agg(w.i), array_agg(w.t) INTO rels, ids, text_went
      FROM ({WRITTEN["DELETE"]}) AS w (r, i, t);
  ELSE
    SELECT array_agg(w.r), array_agg(w.i), array_agg(w.t) INTO rels, ids, text_went
      FROM ({WRITTEN["UPDATE"]}) AS w (r, i, t);
  END IF;
  IF rels IS NULL THEN
    RETURN NULL;
  END IF;
  SELECT array_agg(DISTINCT r ORDER BY r) INTO touched FROM unnest(rels) AS r;
  PERFORM pg_advisory_xact_lock_shared({LOCK_CLASS}, bucket)
    FROM (SELECT DISTINCT hashtext(r::text) & {LOCK_BUCKETS} AS bucket
          FROM unnest(touched) AS r ORDER BY 1) AS buckets;
  -- Snapshot rows locked in one order: statements writing to several relationships do
  -- not deadlock on them.
  PERFORM 1 FROM recall_snapshots WHERE relationship_id = ANY (touched)
    ORDER BY relationship_id FOR UPDATE;
  -- Dropped before anything is appended: a bulk write never builds a long array.
  DELETE FROM recall_snapshots AS s
    USING (SELECT w.r, bool_or(w.t) AS t, count(DISTINCT w.i) AS n
           FROM unnest(rels, ids, text_went) AS w (r, i, t) GROUP BY w.r) AS w
    WHERE s.relationship_id = w.r
      AND (w.t OR s.layout LIKE 'snapshot1:%' OR cardinality(s.changed) + w.n > {MAX_CHANGES});
  UPDATE recall_snapshots AS s
    SET changed = ARRAY(SELECT DISTINCT x FROM unnest(s.changed || w.ids) AS x)
    FROM (SELECT w.r, array_agg(w.i) AS ids FROM unnest(rels, ids) AS w (r, i) GROUP BY w.r)
      AS w
    WHERE s.relationship_id = w.r;
  RETURN NULL;
END $$;
"""


def upgrade() -> None:
    op.add_column(
        "recall_snapshots",
        sa.Column(
            "changed",
            postgresql.ARRAY(sa.UUID()),
            server_default=sa.text("'{}'::uuid[]"),
            nullable=False,
        ),
    )
    op.execute(RECORD)
    # Built by the previous release, which the new reader does not read (another format).
    op.execute("DELETE FROM recall_snapshots")


def downgrade() -> None:
    # Snapshots may carry changes that the 0008 reader would not look at.
    op.execute("DELETE FROM recall_snapshots")
    forget = _PREVIOUS.FORGET
    op.execute(forget.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
    op.drop_column("recall_snapshots", "changed")
