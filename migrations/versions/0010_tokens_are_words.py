"""A memory's stored tokens are words: no NULL, no empty string, none with a space.

Every reader takes a memory's tokens as its stored tokens joined by spaces and split on
them (migration 0009, decision 0014). A read for one query (decision 0017) counts them
with ``cardinality`` and finds the memories that hold a query term with ``&&``, which
agree with that split only for tokens like these. The tokenizer never produced others;
rows written by other means are brought to that form first (their tokens as every
reader already split them, empty ones dropped), which drops their snapshots (the
trigger of 0009).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 20:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

NAME = "ck_memories_tokens_are_words"
# tether.memories.models.TOKENS_ARE_WORDS holds the same (a test compares them). CASE,
# because array_position refuses a multidimensional array.
CONDITION = (
    "CASE WHEN array_ndims(tokens) > 1 THEN false "
    "ELSE array_position(tokens, NULL) IS NULL AND array_position(tokens, '') IS NULL "
    "AND strpos(array_to_string(tokens, ''), ' ') = 0 END"
)
AS_SPLIT = (
    "ARRAY(SELECT word FROM unnest(tokens) WITH ORDINALITY AS t(token, n), "
    "unnest(string_to_array(token, ' ')) WITH ORDINALITY AS w(word, m) "
    "WHERE word <> '' ORDER BY n, m)"
)


def upgrade() -> None:
    # Idempotent: a run that failed in its last step may be repeated.
    op.execute(f"ALTER TABLE memories DROP CONSTRAINT IF EXISTS {NAME}")
    # Row locks only; scans the table once.
    op.execute(f"UPDATE memories SET tokens = {AS_SPLIT} WHERE NOT ({CONDITION})")
    # NOT VALID: new writes are checked at once, and the exclusive lock this takes is
    # released at the commit below instead of being held through a scan.
    op.execute(f"ALTER TABLE memories ADD CONSTRAINT {NAME} CHECK ({CONDITION}) NOT VALID")
    with op.get_context().autocommit_block():
        # Scans again under a lock that lets reads and writes go on.
        op.execute(f"ALTER TABLE memories VALIDATE CONSTRAINT {NAME}")


def downgrade() -> None:
    # Tokens the upgrade rewrote stay rewritten: every reader split them so anyway.
    op.execute(f"ALTER TABLE memories DROP CONSTRAINT {NAME}")
