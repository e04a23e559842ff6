"""Audit signatures name their algorithm (decision 0073).

``audit_checkpoints`` and ``audit_anchors`` get ``algorithm`` (existing rows:
``hmac-sha256``, what signed them) and ``key_id`` (the public key's fingerprint for
``ed25519`` rows), and ``signature`` widens to 128 characters (an Ed25519 signature in
hex). Both tables stay append-only: no existing row is touched.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-07 22:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
# Two columns with defaults and a widened varchar: the previous release still inserts
# (its rows get "hmac-sha256", which is what it signs with) and reads (decision 0062).
phase = "expand"
branch_labels = None
depends_on = None

TABLES = ("audit_checkpoints", "audit_anchors")


def upgrade() -> None:
    for table in TABLES:
        op.alter_column(
            table, "signature", type_=sa.String(length=128), existing_type=sa.String(length=64)
        )
        op.add_column(
            table,
            sa.Column(
                "algorithm",
                sa.String(length=32),
                nullable=False,
                server_default="hmac-sha256",
            ),
        )
        op.add_column(table, sa.Column("key_id", sa.String(length=48), nullable=True))


def downgrade() -> None:
    # ``signature`` stays 128 wide: Ed25519 rows cannot be shortened, and cannot be
    # removed from an append-only table either.
    for table in TABLES:
        op.drop_column(table, "key_id")
        op.drop_column(table, "algorithm")
