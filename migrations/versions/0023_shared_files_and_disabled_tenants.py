"""Uploaded files in Postgres, and tenants an operator can disable (decisions 0060, 0063).

- ``knowledge_file_chunks``: the bytes of every uploaded knowledge-base file, in slices,
  so any API or worker pod reads the same file and no pod keeps state of its own. Under
  row-level security that fails closed, as every tenant table (migration 0017). The
  slices are stored uncompressed (``STORAGE EXTERNAL``): PDFs are compressed already,
  and it keeps reads of a slice cheap.
- ``tenants.disabled_at``: set by ``tether tenant disable``; the tenant's keys are then
  refused with a 403.

Files that earlier versions kept on a pod's disk are not carried over (no pod can be
asked for them here): such a document fails on its next index with "the uploaded file is
missing; upload it again".

Expand only (decision 0062): a new table and a nullable column, which the previous
release ignores.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07 18:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None
phase = "expand"

APP_ROLE = "tether_app"
TENANT_MATCHES = "tenant_id::text = current_setting('tether.tenant_id', true)"


def upgrade() -> None:
    op.add_column("tenants", sa.Column("disabled_at", sa.DateTime(timezone=True)))
    op.create_table(
        "knowledge_file_chunks",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("document_id", sa.UUID(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["knowledge_documents.id"],
            name=op.f("fk_knowledge_file_chunks_document_id_knowledge_documents"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_knowledge_file_chunks_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("document_id", "seq", name=op.f("pk_knowledge_file_chunks")),
    )
    op.execute("ALTER TABLE knowledge_file_chunks ALTER COLUMN data SET STORAGE EXTERNAL")
    op.execute(
        f"""
        DO $$
        BEGIN
          IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            REVOKE ALL ON knowledge_file_chunks FROM {APP_ROLE};
            GRANT SELECT, INSERT, DELETE ON knowledge_file_chunks TO {APP_ROLE};
          END IF;
        END $$;
        """
    )
    op.execute("ALTER TABLE knowledge_file_chunks ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE knowledge_file_chunks FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON knowledge_file_chunks "
        f"USING ({TENANT_MATCHES}) WITH CHECK ({TENANT_MATCHES})"
    )


def downgrade() -> None:
    op.execute("DROP POLICY IF EXISTS tenant_isolation ON knowledge_file_chunks")
    op.drop_table("knowledge_file_chunks")
    op.drop_column("tenants", "disabled_at")
