"""API key lifecycle and tenant limits (decisions 0035, 0036).

- ``api_keys``: an optional expiry, the last use, the key a rotation replaced it with,
  and whether its token is signed. Keys issued before this revision are not.
- ``api_key_signing``: the secret that signs new tokens, made here once, so a forged
  token is refused without a query. ``legacy_tokens`` says whether unsigned keys existed
  (then they are still looked up in Postgres; a new install has none).
- ``tenant_limits``: the operator's allowance and the tenant admin's choice, per tenant,
  under row-level security that fails closed, as every tenant table (migration 0017).
- ``tether_tenant_by_name(name)``: the id of the tenant with this name, for the
  operator's CLI (``tether tenant limits NAME``), which knows no tenant before it asks;
  a system function as those of 0017 (an id, never content).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

APP_ROLE = "tether_app"
SYSTEM_ROLE = "tether_system"
TENANT_MATCHES = "tenant_id::text = current_setting('tether.tenant_id', true)"
TENANT_BY_NAME = """
CREATE FUNCTION tether_tenant_by_name(tenant_name text) RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
  SELECT t.id FROM public.tenants AS t WHERE t.name = tenant_name
$$"""
# 32 bytes from Postgres's strong random source (gen_random_uuid: 122 random bits each).
STRONG_RANDOM_32_BYTES = (
    "decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex')"
)


def _grant(table: str, privileges: str = "SELECT, INSERT, UPDATE, DELETE") -> None:
    # Explicit, in case this migration runs as another user than 0004 (see 0006).
    op.execute(
        f"""
        DO $$
        BEGIN
          IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            REVOKE ALL ON {table} FROM {APP_ROLE};
            GRANT {privileges} ON {table} TO {APP_ROLE};
          END IF;
        END $$;
        """
    )


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("expires_at", sa.DateTime(timezone=True)))
    op.add_column("api_keys", sa.Column("last_used_at", sa.DateTime(timezone=True)))
    op.add_column("api_keys", sa.Column("replaced_by", sa.UUID()))
    op.add_column(
        "api_keys",
        sa.Column("signed", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )
    op.create_table(
        "api_key_signing",
        sa.Column("id", sa.SmallInteger(), nullable=False),
        sa.Column("secret", sa.LargeBinary(length=32), nullable=False),
        sa.Column("legacy_tokens", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_key_signing")),
    )
    op.execute(
        f"INSERT INTO api_key_signing (id, secret, legacy_tokens) "
        f"SELECT 1, {STRONG_RANDOM_32_BYTES}, EXISTS (SELECT 1 FROM api_keys)"
    )
    # The application only reads it.
    _grant("api_key_signing", "SELECT")
    op.create_table(
        "tenant_limits",
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column(
            "allowance",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default="{}",
            nullable=False,
        ),
        sa.Column(
            "chosen", postgresql.JSONB(astext_type=sa.Text()), server_default="{}", nullable=False
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_tenant_limits_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_tenant_limits")),
    )
    _grant("tenant_limits")
    op.execute("ALTER TABLE tenant_limits ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE tenant_limits FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON tenant_limits "
        f"USING ({TENANT_MATCHES}) WITH CHECK ({TENANT_MATCHES})"
    )
    op.execute(TENANT_BY_NAME)
    op.execute("REVOKE ALL ON FUNCTION tether_tenant_by_name(text) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION tether_tenant_by_name(text) TO {APP_ROLE}")
    op.execute(f"ALTER FUNCTION tether_tenant_by_name(text) OWNER TO {SYSTEM_ROLE}")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS tether_tenant_by_name(text)")
    op.execute("DROP POLICY IF EXISTS tenant_isolation ON tenant_limits")
    op.drop_table("tenant_limits")
    op.drop_table("api_key_signing")
    op.drop_column("api_keys", "signed")
    op.drop_column("api_keys", "replaced_by")
    op.drop_column("api_keys", "last_used_at")
    op.drop_column("api_keys", "expires_at")
