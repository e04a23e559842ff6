"""Audit checkpoints and anchors carry an Ed25519 signature and name their algorithm
(decision 0073).

``audit_checkpoints`` and ``audit_anchors`` get ``algorithm`` (existing rows:
``hmac-sha256``, what signed them), ``key_id`` (the public key's fingerprint) and
``public_signature`` (the Ed25519 signature, 128 hex digits). ``signature`` keeps the
HMAC on every row, so no column changes type and no existing row is touched (both
tables are append-only).

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-07 22:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
# Three added columns, one with a default: the previous release inserts (its rows get
# "hmac-sha256", which is what it signs with) and still verifies new rows by their
# HMAC in ``signature`` (decision 0062).
phase = "expand"
branch_labels = None
depends_on = None

TABLES = ("audit_checkpoints", "audit_anchors")


def upgrade() -> None:
    for table in TABLES:
        op.add_column(
            table,
            sa.Column(
                "algorithm", sa.String(length=32), nullable=False, server_default="hmac-sha256"
            ),
        )
        op.add_column(table, sa.Column("key_id", sa.String(length=48), nullable=True))
        op.add_column(table, sa.Column("public_signature", sa.String(length=128), nullable=True))


def downgrade() -> None:
    for table in TABLES:
        op.drop_column(table, "public_signature")
        op.drop_column(table, "key_id")
        op.drop_column(table, "algorithm")
