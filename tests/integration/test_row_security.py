"""Row security fails closed (migration 0017, decision 0032): the service's login, with no
tenant named, reads no row of any table or partition; with a tenant named, exactly that
tenant's rows; and it can neither switch row security off nor become a role that could.

Every relation is found in the catalog, so a table or partition added later is checked
without anyone remembering to list it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from celery import Celery
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from tenancy.access.tokens import digest
from tests.conftest import TenantHandle
from tests.support import resolve_body
from tether.core.redis_client import broker_url
from tether.core.resources import Resources

pytestmark = pytest.mark.integration

# Holds no tenant's data: the schema's revision (read by the health check).
# The token-signing secret (migration 0018) belongs to the deployment, not to a tenant:
# the service login may only read it.
NOT_TENANT_DATA = {"alembic_version", "api_key_signing"}
# Written by the scenario below for both tenants (recall_snapshots needs a relationship
# larger than the scenario's; the test reads it all the same).
POPULATED = {
    "tenants",
    "api_keys",
    "audit_events",
    "audit_chain_heads",
    "audit_access_events",
    "audit_checkpoints",
    "global_users",
    "user_facets",
    "creators",
    "creator_personas",
    "relationships",
    "ownership_events",
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
    "knowledge_file_chunks",
    "tenant_policies",
}
RELATIONS = """
SELECT c.oid::regclass::text, c.relkind::text, c.relispartition,
       c.relrowsecurity, c.relforcerowsecurity,
       EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
               AND a.attname = 'tenant_id' AND NOT a.attisdropped)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
ORDER BY 1
"""


@dataclass(frozen=True)
class Relation:
    name: str
    partition: bool
    column: str  # the tenant column


async def _relations(conn: AsyncConnection) -> list[Relation]:
    """Every relation of the schema that can hold tenant rows, checked to be protected."""
    found = []
    for name, kind, partition, secured, forced, has_tenant in await conn.execute(text(RELATIONS)):
        if name in NOT_TENANT_DATA:
            continue
        assert kind in ("r", "p"), f"{name} is a view or foreign table: row security misses it"
        assert has_tenant or name == "tenants", f"{name} has no tenant_id column"
        assert secured, f"{name}: row security is not enabled"
        assert forced, f"{name}: row security is not forced (its owner would bypass it)"
        found.append(Relation(name, partition, "id" if name == "tenants" else "tenant_id"))
    return found


async def _count(conn: AsyncConnection, relation: Relation, where: str = "true") -> int:
    query = f"SELECT count(*) FROM {relation.name} WHERE {where}"  # noqa: S608 - catalog names
    return int(await conn.scalar(text(query)) or 0)


async def _bind(conn: AsyncConnection, tenant: str) -> None:
    await conn.execute(text("SELECT set_config('tether.tenant_id', :t, true)"), {"t": tenant})


async def _wait_for(client: Any, path: str, headers: Any, ready: Any) -> None:
    deadline = time.monotonic() + 60
    while not ready((await client.get(path, headers=headers)).json()):
        assert time.monotonic() < deadline, f"timed out waiting for {path}"
        await asyncio.sleep(0.2)


async def _populate(client: Any, tenant: TenantHandle, tag: str) -> None:
    """Rows of ``tenant`` in every table of ``POPULATED``, written through the API."""
    gateway = await tenant.key("gateway")
    creator = await tenant.key("creator", f"c-{tag}")
    resolved = await client.post(
        "/v1/resolve", json=resolve_body(f"u-{tag}", f"p-{tag}", f"c-{tag}"), headers=gateway
    )
    rel = resolved.json()
    rid, user, persona = rel["relationship_id"], rel["global_user_id"], rel["creator_persona_id"]
    memories = f"/v1/relationships/{rid}/memories"
    made = await client.post(memories, json={"content": f"{tag} 喜欢喝茶"}, headers=gateway)
    assert made.status_code in (200, 201), made.text
    edit = {"content": f"{tag} likes green tea", "reason": "more precise"}
    await client.patch(f"{memories}/{made.json()['id']}", json=edit, headers=gateway)
    turns = {
        "turns": [{"session_id": "s", "role": "user", "text": "我喜欢吃辣, I love spicy food"}]
    }
    await client.post(f"/v1/relationships/{rid}/turns", json=turns, headers=gateway)
    await client.post(f"/v1/relationships/{rid}/sessions/s/end", headers=gateway)
    profile = {"background": f"{tag} is an astronomer", "tone": "warm"}
    await client.put(
        f"/v1/personas/{persona}/profile", json=profile, headers=creator | {"If-Match": '"0"'}
    )
    field = {"value": "zh-CN", "scope": "profile"}
    await client.put(f"/v1/users/{user}/profile/fields/language", json=field, headers=gateway)
    consent = {"scopes": ["profile"], "source": "signup"}
    await client.put(f"/v1/users/{user}/consent", json=consent, headers=gateway)
    rule = {"role": "compliance", "object": "audit", "action": "read", "effect": "allow"}
    await client.put("/v1/policies/tenant", json={"rules": [rule]}, headers=tenant.admin)
    base = await client.post("/v1/knowledge-bases", json={"name": tag}, headers=tenant.admin)
    documents = f"/v1/knowledge-bases/{base.json()['id']}/documents"
    document = await client.post(
        documents,
        files={"file": (f"{tag}.txt", f"{tag} 的手册: tea".encode())},
        headers=tenant.admin,
    )
    assert document.status_code in (200, 201, 202), document.text
    await client.get(memories, headers=gateway)  # a read: an access event
    made = await client.post("/v1/audit/checkpoints", headers=tenant.admin)  # seals, signs
    assert made.status_code == 201, made.text
    transfer = {"to": {"kind": "pool", "id": f"pool-{tag}"}, "reason": "on leave"}
    await client.post(f"/v1/relationships/{rid}/transfer", json=transfer, headers=tenant.admin)
    await _wait_for(
        client,
        f"{documents}/{document.json()['id']}",
        tenant.admin,
        lambda d: d["status"] == "ready",
    )
    await _wait_for(
        client, f"/v1/relationships/{rid}/consolidations", gateway, lambda page: page["items"]
    )


@pytest.fixture(scope="module")
async def two_tenants(client, make_tenant, celery_worker) -> tuple[TenantHandle, TenantHandle]:  # type: ignore[no-untyped-def]
    a, b = await make_tenant(), await make_tenant()
    await _populate(client, a, "a")
    await _populate(client, b, "b")
    return a, b


@pytest.fixture
async def app_conn(resources: Resources) -> AsyncIterator[AsyncConnection]:
    """A connection as the service's login (the engine the app uses), in a transaction."""
    async with resources.engine.connect() as conn:
        yield conn


async def _owner_counts(
    superuser: AsyncEngine, relations: list[Relation], tenant: str
) -> dict[str, int]:
    async with superuser.connect() as conn:
        return {r.name: await _count(conn, r, f"{r.column} = '{tenant}'") for r in relations}


async def _with_partitions_granted(
    superuser: AsyncEngine, relations: list[Relation], grant: bool
) -> None:
    """Grant (or take back) SELECT on every partition, which the login does not have: what
    row security alone does there, should a privilege be granted by mistake."""
    async with superuser.begin() as conn:
        for relation in relations:
            if relation.partition:
                verb = "GRANT SELECT ON {} TO" if grant else "REVOKE SELECT ON {} FROM"
                await conn.execute(text(f"{verb.format(relation.name)} tether_app"))


async def test_with_no_tenant_the_login_reads_no_row_of_any_table_or_partition(
    two_tenants, resources: Resources, superuser: AsyncEngine
) -> None:
    a, b = two_tenants
    async with resources.engine.connect() as conn:
        assert await conn.scalar(text("SELECT current_user")) == "tether_app"
        relations = await _relations(conn)
    assert {r.name for r in relations} >= POPULATED
    assert sum(r.partition for r in relations) >= 4 * 16  # turns, memories, versions, log
    for tenant in (a, b):
        held = await _owner_counts(superuser, relations, tenant.id)
        assert {name for name, n in held.items() if n} >= POPULATED
    for value in (None, "", "*", "none", "00000000-0000-0000-0000-000000000000"):
        async with resources.engine.connect() as conn:
            if value is not None:
                await _bind(conn, value)
            for relation in relations:
                if relation.partition:
                    with pytest.raises(DBAPIError, match="permission denied"):
                        async with conn.begin_nested():
                            await _count(conn, relation)
                else:
                    assert await _count(conn, relation) == 0, (relation.name, value)


async def test_partitions_hold_their_rows_even_were_they_granted(
    two_tenants, resources: Resources, superuser: AsyncEngine
) -> None:
    a, _ = two_tenants
    async with resources.engine.connect() as conn:
        relations = await _relations(conn)
    held_by_a = await _owner_counts(superuser, relations, a.id)
    assert any(n for name, n in held_by_a.items() if name.startswith("memories_p"))
    await _with_partitions_granted(superuser, relations, grant=True)
    try:
        async with resources.engine.connect() as conn:
            for relation in (r for r in relations if r.partition):
                assert await _count(conn, relation) == 0, relation.name
        async with resources.engine.connect() as conn:
            await _bind(conn, a.id)
            for relation in relations:
                assert await _count(conn, relation) == held_by_a[relation.name], relation.name
                others = f"{relation.column} <> '{a.id}'"
                assert await _count(conn, relation, others) == 0, relation.name
    finally:
        await _with_partitions_granted(superuser, relations, grant=False)


async def test_with_a_tenant_named_the_login_reads_exactly_its_rows(
    two_tenants, resources: Resources, superuser: AsyncEngine
) -> None:
    a, b = two_tenants
    async with resources.engine.connect() as conn:
        relations = [r for r in await _relations(conn) if not r.partition]
    for tenant, other in ((a, b), (b, a)):
        held = await _owner_counts(superuser, relations, tenant.id)
        async with resources.engine.connect() as conn:
            await _bind(conn, tenant.id)
            for relation in relations:
                assert await _count(conn, relation) == held[relation.name], relation.name
                theirs = f"{relation.column} = '{other.id}'"
                assert await _count(conn, relation, theirs) == 0, relation.name
            # Nor may it write a row into the other tenant.
            with pytest.raises(DBAPIError, match="row-level security"):
                await conn.execute(
                    text("UPDATE memories SET tenant_id = :other"), {"other": other.id}
                )


REFUSED = [
    "ALTER TABLE memories DISABLE ROW LEVEL SECURITY",
    "ALTER TABLE memories NO FORCE ROW LEVEL SECURITY",
    "ALTER TABLE memories_p0 DISABLE ROW LEVEL SECURITY",
    "DROP POLICY tenant_isolation ON api_keys",
    "CREATE POLICY everyone ON api_keys USING (true)",
    "ALTER TABLE tenants OWNER TO tether_app",
    "DROP TABLE turns",
    "TRUNCATE consent_records",
    "TRUNCATE memories_p0",
    "DELETE FROM audit_events",
    "UPDATE audit_events SET action = 'x'",
    "DELETE FROM tenants",
    "UPDATE alembic_version SET version_num = '0001'",
    "CREATE TABLE mine (id int)",
    "SET ROLE postgres",
    "SET ROLE tether_system",
    "SET SESSION AUTHORIZATION postgres",
    "ALTER ROLE tether_app BYPASSRLS",
    "ALTER FUNCTION tether_key_tenant(bytea) SECURITY INVOKER",
    "CREATE OR REPLACE FUNCTION memory_terms(uuid, uuid, text[]) RETURNS TABLE (id uuid,"
    " tokens text) LANGUAGE sql AS 'SELECT NULL::uuid, NULL::text'",
]


@pytest.mark.parametrize("statement", REFUSED)
async def test_the_login_cannot_lift_row_security(
    app_conn: AsyncConnection, statement: str
) -> None:
    with pytest.raises(DBAPIError, match=r"permission denied|must be|not permitted"):
        await app_conn.execute(text(statement))


async def test_the_login_owns_nothing_and_bypasses_nothing(app_conn: AsyncConnection) -> None:
    me = (
        await app_conn.execute(
            text(
                "SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb FROM pg_roles "
                "WHERE rolname = current_user"
            )
        )
    ).one()
    assert tuple(me) == (False, False, False, False)
    owned = await app_conn.scalar(
        text(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user) "
            "AND n.nspname NOT LIKE 'pg_temp%'"
        )
    )
    assert owned == 0
    # A member of no role that owns a table, or that the system functions run as.
    roles = await app_conn.scalar(
        text(
            "SELECT count(*) FROM pg_roles r WHERE r.rolname <> current_user "
            "AND pg_has_role(current_user, r.oid, 'MEMBER') "
            "AND (r.rolname = 'tether_system' OR r.rolsuper OR r.rolbypassrls OR EXISTS "
            "(SELECT 1 FROM pg_class c WHERE c.relowner = r.oid))"
        )
    )
    assert roles == 0


async def test_cross_tenant_work_goes_only_through_the_narrow_system_functions(
    two_tenants, app_conn: AsyncConnection
) -> None:
    a, b = two_tenants
    assert await app_conn.scalar(text("SELECT tether_key_tenant(:d)"), {"d": b"x" * 32}) is None
    tenants = set((await app_conn.execute(text("SELECT * FROM tether_tenant_ids()"))).scalars())
    assert {a.id, b.id} <= {str(t) for t in tenants}
    token = a.admin["Authorization"].removeprefix("Bearer ")
    found = await app_conn.scalar(text("SELECT tether_key_tenant(:d)"), {"d": digest(token)})
    assert str(found) == a.id
    # Every one of them runs as the system role, which nobody can log in as, and none
    # is executable by anyone but the service's login.
    functions = (
        await app_conn.execute(
            text(
                "SELECT p.proname, pg_get_userbyid(p.proowner), p.prosecdef, "
                "coalesce(p.proacl::text, '') FROM pg_proc p "
                "JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = 'public' AND p.prosecdef"
            )
        )
    ).all()
    assert {f[0] for f in functions} >= {
        "tether_key_tenant",
        "tether_tenant_ids",
        "tether_idle_sessions",
        "tether_unextracted_sessions",
        "tether_expired_memories",
        "tether_stalled_documents",
        "tether_pending_file_deletions",
        "memory_terms",
    }
    for name, owner, _, acl in functions:
        assert owner == "tether_system", name
        # No ACL means PUBLIC may execute; "=X/..." is PUBLIC's grant.
        grantees = {entry.split("=")[0] for entry in acl.strip("{}").split(",") if "X" in entry}
        assert acl, name
        assert grantees <= {"tether_app", "tether_system"}, (name, acl)
    can_login = await app_conn.scalar(
        text("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'tether_system'")
    )
    assert can_login is False


async def test_every_policy_fails_closed(app_conn: AsyncConnection) -> None:
    """No policy of the service's tables has an "every tenant" branch: the tenant
    policy compares the row's tenant with the setting and nothing else."""
    policies = (
        await app_conn.execute(
            text(
                "SELECT tablename, policyname, roles::text, coalesce(qual, ''), "
                "coalesce(with_check, '') FROM pg_policies WHERE schemaname = 'public'"
            )
        )
    ).all()
    for table, name, roles, qual, check in policies:
        if name == "system_jobs":
            assert roles == "{tether_system}", table
            continue
        assert name == "tenant_isolation", (table, name)
        assert roles == "{public}", table
        column = "id" if table == "tenants" else "tenant_id"
        expected = f"(({column})::text = current_setting('tether.tenant_id'::text, true))"
        assert qual == check == expected, (table, qual, check)


async def _session_state(superuser: AsyncEngine, rid: str, session_id: str) -> tuple[Any, ...]:
    async with superuser.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT end_reason, extracted_at IS NOT NULL FROM chat_sessions "
                    "WHERE relationship_id = :r AND session_id = :s"
                ),
                {"r": rid, "s": session_id},
            )
        ).one()
    return tuple(row)


async def _stored_sessions(superuser: AsyncEngine, sessions: list[tuple[str, str]]) -> int:
    async with superuser.connect() as conn:
        found = await conn.scalar(
            text("SELECT count(*) FROM chat_sessions WHERE relationship_id = ANY (:r)"),
            {"r": list({rid for rid, _ in sessions})},
        )
    return int(found or 0)


async def test_the_session_sweep_serves_every_tenant_through_the_system_functions(
    two_tenants, client, settings, superuser: AsyncEngine
) -> None:
    """The periodic sweep finds idle and unextracted sessions of every tenant (one call
    across tenants each), then closes and extracts each in its own tenant's transaction."""
    sessions: list[tuple[str, str]] = []
    for tenant in two_tenants:
        gateway = await tenant.key("gateway")
        rid = (
            await client.post("/v1/resolve", json=resolve_body("sweep"), headers=gateway)
        ).json()["relationship_id"]
        for session_id in ("idle", "lost"):
            said = f"我喜欢喝茶, I like tea ({session_id})"  # not one text twice: deduplicated
            turn = {"session_id": session_id, "role": "user", "text": said}
            posted = await client.post(
                f"/v1/relationships/{rid}/turns", json={"turns": [turn]}, headers=gateway
            )
            assert posted.status_code == 202, posted.text
            sessions.append((rid, session_id))
    deadline = time.monotonic() + 60
    while await _stored_sessions(superuser, sessions) < len(sessions):  # the worker stores
        assert time.monotonic() < deadline, "the turns were not stored"
        await asyncio.sleep(0.1)
    async with superuser.begin() as conn:  # an hour without a turn; an extraction lost
        await conn.execute(
            text(
                "UPDATE chat_sessions SET last_turn_at = now() - interval '1 hour', "
                "ended_at = CASE session_id WHEN 'lost' THEN now() - interval '1 hour' END, "
                "end_reason = CASE session_id WHEN 'lost' THEN 'explicit' END "
                "WHERE session_id IN ('idle', 'lost') AND relationship_id = ANY (:r)"
            ),
            {"r": [rid for rid, _ in sessions]},
        )
    Celery("test-sender", broker=broker_url(settings.require_redis_url())).send_task(
        "sessions.sweep"  # workers.app.SWEEP_TASK
    )
    deadline = time.monotonic() + 60
    for rid, session_id in sessions:
        expected = ("idle" if session_id == "idle" else "explicit", True)
        while await _session_state(superuser, rid, session_id) != expected:
            assert time.monotonic() < deadline, (rid, session_id)
            await asyncio.sleep(0.2)
