"""Row security that fails closed (decision 0032).

Before: the content tables' policy let a transaction that named no tenant, or named
``*``, see every tenant; the hash partitions had no row security at all (a policy on a
partitioned table binds queries of the parent only), and the application role could read
them directly; the identity tables (tenants, keys, users, facets, creators, personas,
relationships, ownership events, the audit log) had none either.

After: every table with a tenant column (``tenant_id``, or ``tenants.id``) and every
partition of one has row security enabled and forced (so even its owner is held to it)
and one policy, ``tenant_isolation``: a row is visible and writable only in a
transaction whose ``tether.tenant_id`` names its tenant. Unset or empty matches nothing.
The tables are found in the catalog, so a table a migration merged before this one
added is covered too; ``tests/integration/test_row_security.py`` fails for any later
one left out.

The work that must look across tenants goes through ``SECURITY DEFINER`` functions with
one narrow purpose each, owned by ``tether_system`` (a role nobody logs in as, which
alone has a second policy on the few tables they read) and executable by
``tether_app`` only: which tenant a key digest belongs to (authentication), the tenant
ids (``tether reindex``), and the due work of the periodic sweeps (idle and unextracted
sessions, expired memories, stalled documents) as ids and times, never content. The two
definer functions of earlier migrations, ``memory_terms`` and the snapshot trigger's
``recall_snapshots_forget``, move to the same owner: as the tables' owner they would be
held to the forced policy, which would cost ``memory_terms`` the index it exists for.

``tether_app`` loses what it never needs: every privilege on the partitions (queries go
through the parents), writes to ``alembic_version``, and deleting tenants or audit chain
heads (audit events stay append-only as before).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04 16:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

APP_ROLE = "tether_app"
SYSTEM_ROLE = "tether_system"
SETTING = "current_setting('tether.tenant_id', true)"
# The same, as a literal inside a format() string.
_SETTING_QUOTED = SETTING.replace("'", "''")

# Every table of the schema holding tenant rows: its name and tenant column.
TENANT_TABLES = """
SELECT c.oid::regclass AS rel, c.relispartition AS partition,
       CASE WHEN c.relname = 'tenants' THEN 'id' ELSE 'tenant_id' END AS col
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
  AND (c.relname = 'tenants' OR EXISTS (
    SELECT 1 FROM pg_attribute a
    WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped))
"""

ROLES = f"""
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
    RAISE EXCEPTION 'role {APP_ROLE} is missing: create it as docs/security.md says';
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}'
             AND (rolsuper OR rolbypassrls)) THEN
    RAISE EXCEPTION 'role {APP_ROLE} is a superuser or bypasses row security: it must not';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{SYSTEM_ROLE}') THEN
    IF (SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user) THEN
      CREATE ROLE {SYSTEM_ROLE} NOLOGIN;
    ELSE
      RAISE EXCEPTION 'role {SYSTEM_ROLE} is missing: create it as docs/security.md says';
    END IF;
  END IF;
  IF pg_has_role('{APP_ROLE}', '{SYSTEM_ROLE}', 'MEMBER') THEN
    RAISE EXCEPTION 'role {APP_ROLE} may act as {SYSTEM_ROLE}: revoke that membership';
  END IF;
  -- To hand it the definer functions.
  IF NOT pg_has_role(current_user, '{SYSTEM_ROLE}', 'MEMBER') THEN
    EXECUTE 'GRANT {SYSTEM_ROLE} TO ' || quote_ident(current_user);
  END IF;
END $$
"""

PROTECT = f"""
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN {TENANT_TABLES} LOOP
    EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', t.rel);
    EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', t.rel);
    EXECUTE format('DROP POLICY IF EXISTS tenant_isolation ON %s', t.rel);
    EXECUTE format(
      'CREATE POLICY tenant_isolation ON %1$s USING (%2$I::text = {_SETTING_QUOTED}) '
      'WITH CHECK (%2$I::text = {_SETTING_QUOTED})', t.rel, t.col);
    IF t.partition THEN
      EXECUTE format('REVOKE ALL ON %s FROM {APP_ROLE}', t.rel);
    END IF;
  END LOOP;
END $$
"""

# What the application role may no longer do.
REVOKES = (
    f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON alembic_version FROM {APP_ROLE}",
    f"REVOKE DELETE, TRUNCATE ON tenants FROM {APP_ROLE}",
    f"REVOKE DELETE, TRUNCATE ON audit_chain_heads FROM {APP_ROLE}",
    f"REVOKE UPDATE, DELETE, TRUNCATE ON audit_events FROM {APP_ROLE}",
    f"REVOKE TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA public FROM {APP_ROLE}",
)

# The tables the system role reads (and, for the snapshot trigger, writes), past the
# tenant policy: each definer function applies its own narrow condition.
SYSTEM_READS = ("api_keys", "tenants", "chat_sessions", "memories", "knowledge_documents")
SYSTEM_WRITES = ("recall_snapshots",)

_DEFINER = "LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public"

# name(argument types) -> body. Ids and times only: none returns content.
FUNCTIONS = {
    "tether_key_tenant(bytea)": f"""
CREATE FUNCTION tether_key_tenant(key_digest bytea) RETURNS uuid {_DEFINER} AS $$
  SELECT k.tenant_id FROM public.api_keys AS k WHERE k.key_hash = key_digest
$$""",
    "tether_tenant_ids()": f"""
CREATE FUNCTION tether_tenant_ids() RETURNS SETOF uuid {_DEFINER} AS $$
  SELECT t.id FROM public.tenants AS t ORDER BY t.id
$$""",
    "tether_idle_sessions(timestamp with time zone, integer)": f"""
CREATE FUNCTION tether_idle_sessions(idle_before timestamptz, max_rows integer)
RETURNS TABLE (tenant_id uuid, relationship_id uuid, session_id text) {_DEFINER} AS $$
  SELECT s.tenant_id, s.relationship_id, s.session_id::text FROM public.chat_sessions AS s
  WHERE s.ended_at IS NULL AND s.last_turn_at < idle_before
  ORDER BY s.last_turn_at LIMIT max_rows
$$""",
    "tether_unextracted_sessions(timestamp with time zone, integer)": f"""
CREATE FUNCTION tether_unextracted_sessions(ended_before timestamptz, max_rows integer)
RETURNS TABLE (tenant_id uuid, relationship_id uuid, session_id text) {_DEFINER} AS $$
  SELECT s.tenant_id, s.relationship_id, s.session_id::text FROM public.chat_sessions AS s
  WHERE s.ended_at IS NOT NULL AND s.extracted_at IS NULL AND s.ended_at < ended_before
  ORDER BY s.ended_at LIMIT max_rows
$$""",
    "tether_expired_memories(timestamp with time zone, integer)": f"""
CREATE FUNCTION tether_expired_memories(due timestamptz, max_rows integer)
RETURNS TABLE (tenant_id uuid, relationship_id uuid, memory_id uuid) {_DEFINER} AS $$
  SELECT m.tenant_id, m.relationship_id, m.id FROM public.memories AS m
  WHERE m.is_active AND m.expires_at IS NOT NULL AND m.expires_at <= due
  LIMIT max_rows
$$""",
    "tether_stalled_documents(timestamp with time zone, text[], integer)": f"""
CREATE FUNCTION tether_stalled_documents(unchanged_since timestamptz, statuses text[],
                                         max_rows integer)
RETURNS TABLE (tenant_id uuid, document_id uuid, generation integer, requeues integer,
               unqueued boolean) {_DEFINER} AS $$
  SELECT d.tenant_id, d.id, d.generation, d.requeues, d.unqueued
  FROM public.knowledge_documents AS d
  WHERE d.status = ANY (statuses) AND d.deleted_at IS NULL
    AND (d.updated_at < unchanged_since OR d.unqueued)
  ORDER BY d.updated_at LIMIT max_rows
$$""",
}

# memory_terms of migration 0014, under the policy's new condition.
MEMORY_TERMS = f"""
CREATE OR REPLACE FUNCTION memory_terms(relationship uuid, tenant uuid, terms text[])
RETURNS TABLE (id uuid, tokens text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
  SELECT m.id, coalesce(array_to_string(m.tokens, ' '), '')
  FROM public.memories AS m
  WHERE m.relationship_id = relationship AND m.tenant_id = tenant
    AND m.is_active AND m.superseded_by IS NULL AND m.deleted_at IS NULL
    AND m.tokens && terms AND m.tenant_id::text = {SETTING}
$$
"""
INHERITED = ("memory_terms(uuid, uuid, text[])", "recall_snapshots_forget()")


def _system_role() -> None:
    op.execute(
        f"""
        DO $$
        BEGIN
          -- It owns the definer functions, which needs CREATE where they live.
          GRANT USAGE, CREATE ON SCHEMA public TO {SYSTEM_ROLE};
        EXCEPTION WHEN insufficient_privilege THEN
          RAISE NOTICE 'could not grant CREATE on schema public to {SYSTEM_ROLE}';
        END $$
        """
    )
    for table in SYSTEM_READS:
        op.execute(f"GRANT SELECT ON {table} TO {SYSTEM_ROLE}")
        op.execute(f"CREATE POLICY system_jobs ON {table} FOR SELECT TO {SYSTEM_ROLE} USING (true)")
    for table in SYSTEM_WRITES:
        op.execute(f"GRANT SELECT, UPDATE, DELETE ON {table} TO {SYSTEM_ROLE}")
        op.execute(
            f"CREATE POLICY system_jobs ON {table} TO {SYSTEM_ROLE} USING (true) WITH CHECK (true)"
        )


def _functions() -> None:
    op.execute(MEMORY_TERMS)
    for signature, body in FUNCTIONS.items():
        op.execute(body)
        op.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {signature} TO {APP_ROLE}")
    for signature in (*FUNCTIONS, *INHERITED):
        op.execute(f"ALTER FUNCTION {signature} OWNER TO {SYSTEM_ROLE}")
    # A trigger's function is not called directly; no one needs to.
    op.execute("REVOKE ALL ON FUNCTION recall_snapshots_forget() FROM PUBLIC")


def upgrade() -> None:
    op.execute(ROLES)
    op.execute(PROTECT)
    for statement in REVOKES:
        op.execute(statement)
    _system_role()
    _functions()


# What 0004-0008 had: content tables visible to their tenant or to '*'.
OLD_RLS_TABLES = (
    "turns",
    "chat_sessions",
    "memories",
    "memory_versions",
    "consolidation_log",
    "persona_profile_versions",
    "global_profile_fields",
    "consent_records",
    "knowledge_bases",
    "knowledge_documents",
    "knowledge_chunks",
    "tenant_policies",
    "recall_snapshots",
)
OLD_MATCHES = f"{SETTING} = '*' OR tenant_id::text = {SETTING}"

UNPROTECT = f"""
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN {TENANT_TABLES} LOOP
    EXECUTE format('DROP POLICY IF EXISTS tenant_isolation ON %s', t.rel);
    EXECUTE format('ALTER TABLE %s NO FORCE ROW LEVEL SECURITY', t.rel);
    EXECUTE format('ALTER TABLE %s DISABLE ROW LEVEL SECURITY', t.rel);
    IF t.partition THEN
      EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO {APP_ROLE}', t.rel);
    END IF;
  END LOOP;
END $$
"""


def downgrade() -> None:
    for signature in INHERITED:
        op.execute(f"ALTER FUNCTION {signature} OWNER TO CURRENT_USER")
    for signature in FUNCTIONS:
        op.execute(f"DROP FUNCTION IF EXISTS {signature}")
    op.execute(MEMORY_TERMS.replace(f"m.tenant_id::text = {SETTING}", f"({OLD_MATCHES})"))
    for table in (*SYSTEM_READS, *SYSTEM_WRITES):
        op.execute(f"DROP POLICY IF EXISTS system_jobs ON {table}")
        op.execute(f"REVOKE ALL ON {table} FROM {SYSTEM_ROLE}")
    op.execute(UNPROTECT)
    for table in OLD_RLS_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING ({OLD_MATCHES}) WITH CHECK ({OLD_MATCHES})"
        )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON alembic_version TO {APP_ROLE}")
    op.execute(f"GRANT DELETE ON tenants, audit_chain_heads TO {APP_ROLE}")
