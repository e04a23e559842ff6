"""Session defaults move into the tenant settings document (decision 0086).

A tenant whose ``tenants.session_*`` / ``keep_turns_without_memory`` columns differ from
the defaults gets a new settings version: its newest document plus a ``sessions``
section with those values (``actor_key_id`` NULL: written by this migration). A tenant
on the defaults gets nothing: a document without the section reads as the defaults.

Expand only: the columns stay (the previous release reads them, and this release keeps
writing them); a later contract migration drops them.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07 22:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0028"
down_revision = "0027"
# Only adds rows: the previous release runs on this schema (decision 0062).
phase = "expand"

COPY = """
DO $$
DECLARE t uuid;
BEGIN
  -- Row security fails closed (0017): list tenants through the definer function, then
  -- act as each tenant for its own rows.
  FOR t IN SELECT tether_tenant_ids() LOOP
    PERFORM set_config('tether.tenant_id', t::text, true);
    INSERT INTO tenant_settings (tenant_id, version, document, actor_key_id)
    SELECT tn.id,
           coalesce(newest.version, 0) + 1,
           coalesce(newest.document, '{}'::jsonb) || jsonb_build_object('sessions',
             jsonb_build_object('memory_enabled', tn.session_memory_enabled,
                                'knowledge_enabled', tn.session_knowledge_enabled,
                                'keep_turns_without_memory', tn.keep_turns_without_memory)),
           NULL
    FROM tenants tn
    LEFT JOIN LATERAL (
      SELECT version, document FROM tenant_settings s
      WHERE s.tenant_id = tn.id ORDER BY version DESC LIMIT 1
    ) newest ON true
    WHERE tn.id = t
      AND (NOT tn.session_memory_enabled OR tn.session_knowledge_enabled
           OR NOT tn.keep_turns_without_memory)
      AND NOT coalesce(newest.document ? 'sessions', false);
  END LOOP;
  PERFORM set_config('tether.tenant_id', '', true);
END $$
"""


def upgrade() -> None:
    op.execute(COPY)


def downgrade() -> None:
    # The copied versions stay: they are history, and the columns still hold the values.
    pass
