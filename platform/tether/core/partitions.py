"""Hash partitioning of large content tables by ``relationship_id``.

One relationship's rows sit in one partition; the same column is the distribution key
a Citus scale-out would use. The partition count is fixed by the migration that
creates a table (changing it means a data migration), so it lives here, not in settings.
"""

from __future__ import annotations

import re

PARTITIONS = 16

_PARTITION_NAME = re.compile(r"_p\d+$")


def partition_by_relationship() -> dict[str, str]:
    """``__table_args__`` entry of a table partitioned by relationship."""
    return {"postgresql_partition_by": "HASH (relationship_id)"}


def partition_names(table: str) -> list[str]:
    return [f"{table}_p{i}" for i in range(PARTITIONS)]


def partition_ddl(table: str) -> list[str]:
    """The CREATE TABLE statements of every partition of ``table``."""
    return [
        f"CREATE TABLE {name} PARTITION OF {table} "
        f"FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {i})"
        for i, name in enumerate(partition_names(table))
    ]


def is_partition(table: str) -> bool:
    """Whether ``table`` is a partition child (Alembic must not treat it as unknown)."""
    return _PARTITION_NAME.search(table) is not None
