"""The pgvector extension and the identity plane (tenants, keys, users, facets,
creators, personas, relationships, ownership events, persona profile versions).

Revision ID: 0001
Revises:
Create Date: 2026-11-29 14:40:05.895635
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.create_table(
        "tenants",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("region", sa.String(length=64), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenants")),
        sa.UniqueConstraint("name", name=op.f("uq_tenants_name")),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column(
            "role",
            sa.Enum(
                "admin",
                "gateway",
                "creator",
                "operator",
                "compliance",
                name="api_key_role",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("subject", sa.String(length=128), nullable=True),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("key_hash", sa.LargeBinary(length=32), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_api_keys_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    op.create_index("ix_api_keys_tenant_id", "api_keys", ["tenant_id"], unique=False)
    op.create_table(
        "creators",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("external_id", sa.String(length=512), nullable=False),
        sa.Column("display_name", sa.String(length=256), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_creators_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_creators")),
        sa.UniqueConstraint(
            "tenant_id", "external_id", name=op.f("uq_creators_tenant_id_external_id")
        ),
    )
    op.create_table(
        "global_users",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("external_id", sa.String(length=512), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_global_users_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_global_users")),
        sa.UniqueConstraint(
            "tenant_id", "external_id", name=op.f("uq_global_users_tenant_id_external_id")
        ),
    )
    op.create_table(
        "creator_personas",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("creator_id", sa.UUID(), nullable=False),
        sa.Column("external_id", sa.String(length=512), nullable=False),
        sa.Column("display_name", sa.String(length=256), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["creator_id"],
            ["creators.id"],
            name=op.f("fk_creator_personas_creator_id_creators"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_creator_personas_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_creator_personas")),
        sa.UniqueConstraint(
            "tenant_id",
            "creator_id",
            "external_id",
            name=op.f("uq_creator_personas_tenant_id_creator_id_external_id"),
        ),
    )
    op.create_table(
        "user_facets",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("global_user_id", sa.UUID(), nullable=False),
        sa.Column("name", sa.String(length=512), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["global_user_id"],
            ["global_users.id"],
            name=op.f("fk_user_facets_global_user_id_global_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_user_facets_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_facets")),
        sa.UniqueConstraint(
            "tenant_id",
            "global_user_id",
            "name",
            name=op.f("uq_user_facets_tenant_id_global_user_id_name"),
        ),
    )
    op.create_table(
        "persona_profile_versions",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("creator_persona_id", sa.UUID(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("background", sa.Text(), nullable=False),
        sa.Column("tone", sa.Text(), nullable=False),
        sa.Column("taboos", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("scripts", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("edited_by_key_id", sa.UUID(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["creator_persona_id"],
            ["creator_personas.id"],
            name=op.f("fk_persona_profile_versions_creator_persona_id_creator_personas"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_persona_profile_versions_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_persona_profile_versions")),
        sa.UniqueConstraint(
            "tenant_id",
            "creator_persona_id",
            "version",
            name=op.f("uq_persona_profile_versions_tenant_id_creator_persona_id_version"),
        ),
    )
    op.create_table(
        "relationships",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("user_facet_id", sa.UUID(), nullable=False),
        sa.Column("creator_persona_id", sa.UUID(), nullable=False),
        sa.Column("global_user_id", sa.UUID(), nullable=False),
        sa.Column("creator_id", sa.UUID(), nullable=False),
        sa.Column(
            "operator_kind",
            sa.Enum(
                "creator",
                "pool",
                name="operator_kind",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("operator_id", sa.String(length=512), nullable=False),
        sa.Column(
            "ownership_changed_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "privacy_mode",
            sa.Enum(
                "normal",
                "raw_only",
                "off",
                name="privacy_mode",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("last_active_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["creator_id"],
            ["creators.id"],
            name=op.f("fk_relationships_creator_id_creators"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["creator_persona_id"],
            ["creator_personas.id"],
            name=op.f("fk_relationships_creator_persona_id_creator_personas"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["global_user_id"],
            ["global_users.id"],
            name=op.f("fk_relationships_global_user_id_global_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_relationships_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_facet_id"],
            ["user_facets.id"],
            name=op.f("fk_relationships_user_facet_id_user_facets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_relationships")),
        sa.UniqueConstraint(
            "tenant_id",
            "user_facet_id",
            "creator_persona_id",
            name=op.f("uq_relationships_tenant_id_user_facet_id_creator_persona_id"),
        ),
    )
    op.create_index(
        "ix_relationships_tenant_creator",
        "relationships",
        ["tenant_id", "creator_id"],
        unique=False,
    )
    op.create_index(
        "ix_relationships_tenant_persona",
        "relationships",
        ["tenant_id", "creator_persona_id"],
        unique=False,
    )
    op.create_index(
        "ix_relationships_tenant_user",
        "relationships",
        ["tenant_id", "global_user_id"],
        unique=False,
    )
    op.create_table(
        "ownership_events",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.UUID(), nullable=False),
        sa.Column("relationship_id", sa.UUID(), nullable=False),
        sa.Column(
            "from_kind",
            sa.Enum(
                "creator",
                "pool",
                name="operator_kind_from",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("from_id", sa.String(length=512), nullable=False),
        sa.Column(
            "to_kind",
            sa.Enum(
                "creator",
                "pool",
                name="operator_kind_to",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("to_id", sa.String(length=512), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("actor_key_id", sa.UUID(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["relationship_id"],
            ["relationships.id"],
            name=op.f("fk_ownership_events_relationship_id_relationships"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_ownership_events_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ownership_events")),
    )
    op.create_index(
        "ix_ownership_events_relationship",
        "ownership_events",
        ["tenant_id", "relationship_id", "created_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_ownership_events_relationship", table_name="ownership_events")
    op.drop_table("ownership_events")
    op.drop_index("ix_relationships_tenant_user", table_name="relationships")
    op.drop_index("ix_relationships_tenant_persona", table_name="relationships")
    op.drop_index("ix_relationships_tenant_creator", table_name="relationships")
    op.drop_table("relationships")
    op.drop_table("persona_profile_versions")
    op.drop_table("user_facets")
    op.drop_table("creator_personas")
    op.drop_table("global_users")
    op.drop_table("creators")
    op.drop_index("ix_api_keys_tenant_id", table_name="api_keys")
    op.drop_table("api_keys")
    op.drop_table("tenants")
    op.execute("DROP EXTENSION IF EXISTS vector")
