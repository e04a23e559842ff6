"""Session agent flags (decision 0051): whether a session's turns become memories and
whether its context may use knowledge bases, per session, per persona and per tenant,
and per turn as the turn was captured.

NULL on a session or persona means "inherit"; the tenant's values are the defaults.
``keep_turns_without_memory`` false: turns captured with memory off are not stored.

Revision ID: 0021
Revises: 0020
Create Date: 2027-01-20 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
# Only adds: the previous release runs on this schema (decision 0062).
phase = "expand"


def upgrade() -> None:
    for name, default in (
        ("session_memory_enabled", sa.true()),
        ("session_knowledge_enabled", sa.false()),
        ("keep_turns_without_memory", sa.true()),
    ):
        op.add_column(
            "tenants", sa.Column(name, sa.Boolean(), server_default=default, nullable=False)
        )
    for table in ("creator_personas", "chat_sessions"):
        op.add_column(table, sa.Column("memory_enabled", sa.Boolean(), nullable=True))
        op.add_column(table, sa.Column("knowledge_enabled", sa.Boolean(), nullable=True))
    # On the partitioned parent: every partition gets it (no rewrite: no default).
    op.add_column("turns", sa.Column("memory_enabled", sa.Boolean(), nullable=True))


def downgrade() -> None:
    op.drop_column("turns", "memory_enabled")
    for table in ("chat_sessions", "creator_personas"):
        op.drop_column(table, "knowledge_enabled")
        op.drop_column(table, "memory_enabled")
    for name in (
        "keep_turns_without_memory",
        "session_knowledge_enabled",
        "session_memory_enabled",
    ):
        op.drop_column("tenants", name)
