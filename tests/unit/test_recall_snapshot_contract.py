"""The snapshot trigger (migration 0009, after 0008) and the cold reader
(tether.recall.cold) agree: same lock and limit, and the trigger reacts to a change of
every column a snapshot holds."""

from __future__ import annotations

import msgspec

from tests.support import load_migration
from tether.recall import cold
from tether.recall.loaded import STATISTICS, PartitionRecord

MIGRATION = "0009_snapshot_changes.py"
# PartitionRecord fields read from a column of another name.
COLUMN_OF = {"key": "id", "group": "source_session_id"}


def test_the_trigger_and_the_reader_share_the_lock_and_the_columns() -> None:
    migration = load_migration(MIGRATION)
    assert (migration.LOCK_CLASS, migration.LOCK_BUCKETS) == (cold.LOCK_CLASS, cold.LOCK_BUCKETS)
    assert migration.MAX_CHANGES == cold.MAX_CHANGES
    assert tuple(migration.SNAPSHOT_COLUMNS) == cold.SNAPSHOT_COLUMNS
    for column in cold.SNAPSHOT_COLUMNS:
        assert f"o.{column}" in migration.RECORD
        assert f"n.{column}" in migration.RECORD


def test_every_record_field_is_either_guarded_by_the_trigger_or_read_from_the_rows() -> None:
    fields = [COLUMN_OF.get(f.name, f.name) for f in msgspec.structs.fields(PartitionRecord)]
    unguarded = set(fields) - set(cold.SNAPSHOT_COLUMNS) - set(STATISTICS) - {"id"}
    assert unguarded == set()
    # Statistics are not guarded: a snapshot is patched with them on every read.
    assert not set(STATISTICS) & set(cold.SNAPSHOT_COLUMNS)
