"""A cold read from rows (cold.py reads a partition as one row of aggregates) builds what
the ranking reference builds from the same memories loaded row by row: the records, BM25
scores, neighbours, every ranking column, and Postgres's cosine. The partition holds
every kind of column value a read must carry (NULLs, empty tokens, Chinese, expiry,
recalls, private memories, sessions, memories without vectors) and sits among memories
that must not appear (another relationship's, inactive, superseded, deleted, expired)."""

from __future__ import annotations

import itertools
import json
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import bindparam, case, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.ids import RelationshipId, RelationshipScope
from tests.support import (
    MIXED_MEMORIES,
    assert_same_partition,
    assert_same_ranking_columns,
    owner_sessions,
    resolve_body,
)
from tether.core.database import TENANT_INFO
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_session
from tether.memories.enums import MemoryLayer, MemoryType
from tether.memories.models import QUERY_ROW_FIELDS, Memory
from tether.providers.configured import rank_weights
from tether.recall import wire
from tether.recall.cold import ColdReader
from tether.recall.loaded import LoadedPartition, PartitionRecord
from tether.recall.partition import PartitionIndex, RankDoc
from tether.recall.query_read import QueryPartition
from tether.recall.text import tokenize

pytestmark = pytest.mark.integration

DIMENSION = 8
START = datetime(2026, 3, 1, 8, 30, 15, 123456, tzinfo=UTC)
QUERIES = [["cello"], ["爬山", "火锅"], ["user", "tea"], ["猫"], ["nothing"]]
_users = itertools.count()

INSERT = text(
    "INSERT INTO memories (relationship_id, id, tenant_id, external_id, memory_type, layer, "
    "polarity, content, tokens, importance, confidence, strength, last_recalled_at, "
    "occurred_at, expires_at, is_active, superseded_by, deleted_at, private_to_creator, "
    "source_session_id, origin, embedding, embedding_dim) VALUES (:r, :id, :t, :external, "
    ":kind, 'semantic', 'positive', :content, :tokens, :importance, :confidence, :strength, "
    ":recalled, :occurred, :expires, :active, :superseded, :deleted, :private, :session, "
    "'manual', CAST(:vector AS halfvec), :dimension)"
)


def _vector(seed: int, dimension: int = DIMENSION) -> str:
    values = np.random.default_rng(seed).standard_normal(dimension)
    return "[" + ",".join(f"{v:.4f}" for v in values) + "]"


def _memory(scope: RelationshipScope, n: int, **overrides: Any) -> dict[str, Any]:
    content = [*MIXED_MEMORIES, "The user drinks green tea", "…!?", "用户的猫叫小白"][n % 9]
    values: dict[str, Any] = {
        "r": scope.relationship_id,
        "id": uuid.uuid4(),
        "t": scope.tenant_id,
        "external": f"ext-{uuid.uuid4()}" if n % 3 == 0 else None,
        "kind": "summary" if n % 7 == 3 else "fact",
        "content": content,
        "tokens": tokenize(content),
        "importance": 0.1 + (n % 9) / 10,
        "confidence": 1 / (n + 3),
        "strength": 1.0 + n % 4,
        "recalled": START + timedelta(days=n, microseconds=n) if n % 4 == 1 else None,
        # Two memories share a moment: the id orders them.
        "occurred": START + timedelta(hours=n // 2 * 5, microseconds=7),
        "expires": START + timedelta(days=3650) if n % 5 == 2 else None,
        "active": True,
        "superseded": None,
        "deleted": None,
        "private": n % 6 == 4,
        "session": f"s-{n % 2}" if n % 3 else None,
        "vector": _vector(n) if n % 8 != 5 else None,
        "dimension": DIMENSION if n % 8 != 5 else None,
    }
    return values | overrides


async def _partition(
    client: Any, make_tenant: Any, resources: Resources
) -> tuple[RelationshipScope, list[uuid.UUID]]:
    """A relationship of 24 active memories of every kind, and the ids of the memories
    around it that a read of it must not return."""
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    scopes = []
    for _ in range(2):
        body = resolve_body(f"cold-rows-{next(_users)}")
        response = await client.post("/v1/resolve", json=body, headers=headers)
        assert response.status_code in {200, 201}, response.text
        rid = RelationshipId(uuid.UUID(response.json()["relationship_id"]))
        scopes.append(RelationshipScope(TenantId(tenant.id), rid))
    scope, sibling = scopes
    now = datetime.now(UTC)
    rows = [_memory(scope, n) for n in range(24)]
    rows += [_memory(sibling, n) for n in range(4)]
    rows += [
        _memory(scope, 1, active=False),
        _memory(scope, 2, superseded=rows[0]["id"], active=False),
        _memory(scope, 3, deleted=now),
        _memory(scope, 4, expires=now - timedelta(seconds=1)),
    ]
    async with owner_sessions(resources)() as session, session.begin():
        for row in rows:
            await session.execute(INSERT, row)
    return scope, [row["id"] for row in rows[24:]]


async def _reference(
    resources: Resources, scope: RelationshipScope, settings: Settings
) -> tuple[tuple[PartitionRecord, ...], PartitionIndex, list[Any], bytes]:
    """The partition as the ranking reference builds it from rows loaded one by one."""
    async with owner_sessions(resources)() as session:
        rows = (
            await session.execute(
                text(
                    "SELECT id, external_id, content, memory_type, layer, occurred_at, "
                    "expires_at, importance, confidence, strength, last_recalled_at, "
                    "private_to_creator, source_session_id, tokens, embedding::text, "
                    "uuid_send(id) || int8send(xmin::text::bigint) "
                    "FROM memories WHERE relationship_id = :r AND tenant_id = :t "
                    "AND is_active AND superseded_by IS NULL AND deleted_at IS NULL "
                    "AND (expires_at IS NULL OR expires_at > now()) "
                    "ORDER BY occurred_at, id"
                ),
                {"r": scope.relationship_id, "t": scope.tenant_id},
            )
        ).all()
    records = tuple(PartitionRecord(row[0].bytes, *row[1:13]) for row in rows)
    docs = [
        RankDoc(
            key=i,
            tokens=row.tokens,
            vector=None,
            importance=row.importance,
            confidence=row.confidence,
            strength=row.strength,
            occurred_at=row.occurred_at,
            last_recalled_at=row.last_recalled_at,
            group=row.source_session_id,
            ordinal=i,
        )
        for i, row in enumerate(rows)
    ]
    vectors = [None if row[14] is None else np.array(json.loads(row[14])) for row in rows]
    return (
        records,
        PartitionIndex.build(docs, rank_weights(settings)),
        vectors,
        b"".join(row[15] for row in rows),
    )


async def _read(
    resources: Resources, scope: RelationshipScope, settings: Settings, query: Any
) -> LoadedPartition:
    async def vector() -> Any:
        return query

    reader = ColdReader(rank_weights(settings), None, 1)
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        return await reader.read(session, scope, vector(), "v")


async def _snapshot_stored(
    resources: Resources, scope: RelationshipScope, settings: Settings
) -> None:
    reader = ColdReader(rank_weights(settings), None, 1)
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        built = await reader.read_for_snapshot(session, scope)
    assert built is not None
    assert await reader.store_snapshot(resources.sessions, scope, built)


async def test_a_read_from_rows_builds_what_the_reference_builds(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    scope, _ = await _partition(client, make_tenant, resources)
    records, index, vectors, versions = await _reference(resources, scope, settings)
    query = np.random.default_rng(3).standard_normal(DIMENSION).astype(np.float32)
    read = await _read(resources, scope, settings, query)
    assert read.source == "cold"
    assert len(records) == 24
    assert read.records == records
    assert read.row_versions == versions
    for column in ("importance", "confidence", "strength", "reference_time", "neighbours"):
        assert np.array_equal(getattr(read.index, column), getattr(index, column)), column
    for words in QUERIES:
        assert np.array_equal(read.index.bm25.scores(words), index.bm25.scores(words)), words
    expires = [np.inf if r.expires_at is None else r.expires_at.timestamp() for r in records]
    assert np.array_equal(read.expires_at, expires)
    assert read.private.tolist() == [r.private_to_creator for r in records]
    summaries = [i for i, r in enumerate(records) if r.memory_type == "summary"]
    assert read.latest_summary == max(summaries, key=lambda i: records[i].occurred_at)
    assert read.index.has_vector.tolist() == [v is not None for v in vectors]
    assert read.similarity is not None
    sent = query.astype(np.float16).astype(np.float64)  # the column is a halfvec
    for similarity, vector in zip(read.similarity, vectors, strict=True):
        if vector is not None:
            expected = vector @ sent / (np.linalg.norm(vector) * np.linalg.norm(sent))
            assert similarity == pytest.approx(expected, abs=1e-5)


async def test_the_stored_query_row_is_what_the_models_expression_computes(
    client: Any, make_tenant: Any, resources: Resources
) -> None:
    """The generated column Postgres keeps (as the latest migration that set it left it)
    computes what ``QUERY_ROW_FIELDS`` does, which is built from the kinds and layers the
    code knows: for every kind and layer, one it does not know, and every other column
    value of the partition, inserted and after an update."""
    scope, _ = await _partition(client, make_tenant, resources)
    kinds, layers = [*MemoryType, "unknown"], [*MemoryLayer, "unknown"]
    async with owner_sessions(resources)() as session, session.begin():
        for n, (kind, layer) in enumerate(itertools.product(kinds, layers)):
            row = _memory(scope, n, kind=kind)
            await session.execute(INSERT, row)
            update = text("UPDATE memories SET layer = :layer WHERE id = :id")
            await session.execute(update, {"layer": layer, "id": row["id"]})
        counts = (
            await session.execute(
                text(
                    "SELECT count(*) FILTER (WHERE query_row IS DISTINCT FROM "  # noqa: S608 - a constant
                    f"({QUERY_ROW_FIELDS})), count(*) FROM memories WHERE relationship_id = :r"
                ),
                {"r": scope.relationship_id},
            )
        ).one()
    # The partition's 24 memories, its 4 inactive, superseded, deleted and expired ones.
    assert tuple(counts) == (0, 28 + len(kinds) * len(layers))


async def test_a_read_from_rows_without_a_query_vector_has_no_similarity(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    scope, _ = await _partition(client, make_tenant, resources)
    records, *_ = await _reference(resources, scope, settings)
    read = await _read(resources, scope, settings, None)
    assert read.records == records
    assert read.similarity is None
    assert read.index.has_vector.tolist() == [False] * len(records)


async def test_an_empty_partition_reads_as_empty(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    response = await client.post(
        "/v1/resolve", json=resolve_body(f"cold-rows-{next(_users)}"), headers=headers
    )
    rid = RelationshipId(uuid.UUID(response.json()["relationship_id"]))
    scope = RelationshipScope(TenantId(tenant.id), rid)
    read = await _read(resources, scope, settings, None)
    assert read.records == ()
    assert read.index.bm25.scores(["cello"]).shape == (0,)
    scoped = await _read_for(resources, scope, settings, None, ["cello"])
    assert scoped.keys == b""
    assert scoped.index.bm25.scores(["cello"]).shape == (0,)
    assert scoped.latest_visible_summary(np.ones(0, np.bool_)) is None


async def test_a_snapshot_check_reads_the_texts_of_its_own_changed_memories_only(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    """The ids a snapshot records as changed are joined to the partition's rows: ids of
    another relationship's memories or of inactive ones, and repeated ids, add nothing."""
    scope, others = await _partition(client, make_tenant, resources)
    await _snapshot_stored(resources, scope, settings)
    new = _memory(scope, 25, content="用户刚换了工作", tokens=tokenize("用户刚换了工作"))
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(INSERT, new)  # recorded by the trigger
        await session.execute(
            text(
                "UPDATE recall_snapshots SET changed = changed || CAST(:others AS uuid[]) "
                "|| changed WHERE relationship_id = :r"
            ),
            {"others": others, "r": scope.relationship_id},
        )
    query = np.random.default_rng(5).standard_normal(DIMENSION).astype(np.float32)
    served = await _read(resources, scope, settings, query)
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(
            text("DELETE FROM recall_snapshots WHERE relationship_id = :r"),
            {"r": scope.relationship_id},
        )
    from_rows = await _read(resources, scope, settings, query)
    assert (served.source, from_rows.source) == ("snapshot", "cold")
    records, *_ = await _reference(resources, scope, settings)
    assert from_rows.records == records
    assert_same_partition(served, from_rows, QUERIES)
    assert {r.id for r in served.records}.isdisjoint(others)
    assert "用户刚换了工作" in [r.content for r in served.records]


async def _read_for(
    resources: Resources,
    scope: RelationshipScope,
    settings: Settings,
    query: Any,
    words: list[str],
) -> QueryPartition:
    """A read of the rows for one query, as a request makes it when there is no snapshot."""

    async def vector() -> Any:
        return query

    reader = ColdReader(rank_weights(settings), None, 1)
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        found = await reader.read_for_query(session, scope, vector(), "v", words)
    assert isinstance(found, QueryPartition)
    return found


def _assert_ranks_as(scoped: QueryPartition, full: LoadedPartition, words: list[str]) -> None:
    """``scoped`` holds every ranking column of ``full`` and scores ``words`` (and each
    of its words) bit for bit as ``full`` does."""
    assert_same_ranking_columns(scoped, full)
    if full.similarity is None:
        assert scoped.similarity is None
    else:
        assert scoped.similarity is not None
        assert np.array_equal(scoped.similarity, full.similarity)
    for query in [words, *([w] for w in words)]:
        assert np.array_equal(scoped.index.bm25.scores(query), full.index.bm25.scores(query))
    assert scoped.keys == b"".join(r.key for r in full.records)
    assert [scoped.memory_id(i) for i in range(len(full.records))] == [r.id for r in full.records]


async def test_a_read_for_one_query_ranks_it_as_a_full_read_does(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    """Everything ranking reads is the full read's; the BM25 index scores the query (and
    any query made of its words) bit for bit as the full index does, even when a query
    word is part of a longer one or repeated; the memories around the partition (the
    sibling relationship holds the same texts) weigh nothing."""
    scope, _ = await _partition(client, make_tenant, resources)
    query = np.random.default_rng(5).standard_normal(DIMENSION).astype(np.float32)
    full = await _read(resources, scope, settings, query)
    for words in [*QUERIES, ["green", "tea", "cello", "cello"], ["ea"], ["cell"], []]:
        scoped = await _read_for(resources, scope, settings, query, words)
        assert scoped.source == "cold"
        assert scoped.terms == tuple(words)
        _assert_ranks_as(scoped, full, words)
    without = await _read(resources, scope, settings, None)
    _assert_ranks_as(await _read_for(resources, scope, settings, None, ["tea"]), without, ["tea"])


async def test_a_read_for_one_query_filters_and_finds_summaries_as_a_full_read_does(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    """Kinds and layers travel as codes: every filter, and the newest summary among any
    visible rows, are the full read's (a kind no code names matches no filter)."""
    scope, _ = await _partition(client, make_tenant, resources)
    odd = _memory(scope, 31, kind="not-a-kind")
    # Two summaries at the newest summary's moment: the first in partition order wins.
    ties = [_memory(scope, 17, kind="summary") for _ in range(2)]
    async with owner_sessions(resources)() as session, session.begin():
        for row in (odd, *ties):
            await session.execute(INSERT, row)
    full = await _read(resources, scope, settings, None)
    scoped = await _read_for(resources, scope, settings, None, ["tea"])
    filters: list[list[str] | None] = [None, [], ["fact"], ["summary", "fact"], ["not-a-kind"]]
    for types in filters:
        for layers in [None, ["semantic"], ["episodic"], ["nowhere"]]:
            expected, found = full.allowed(types, layers), scoped.allowed(types, layers)
            if types is None and layers is None:
                assert expected is None
                assert found is None
                continue
            assert expected is not None
            assert found is not None
            if types != ["not-a-kind"] and layers != ["nowhere"]:
                assert np.array_equal(found, expected), (types, layers)
            else:
                assert not found.any()
    rng = np.random.default_rng(9)
    for _ in range(40):
        visible = rng.random(len(full.records)) < 0.6
        assert scoped.latest_visible_summary(visible) == full.latest_visible_summary(visible)
    assert scoped.latest_visible_summary(np.ones(len(full.records), np.bool_)) == (
        full.latest_summary
    )
    newest = [i for i, r in enumerate(full.records) if r.occurred_at == ties[0]["occurred"]]
    assert full.latest_summary == min(i for i in newest if full.records[i].memory_type == "summary")


async def test_the_records_of_a_read_for_one_query_are_the_full_reads(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    """Read afterwards, as of the moment the partition was read (a memory that expires
    in between is still there); a memory made inactive in between has none, and no id
    reaches a memory outside the partition (another relationship's or tenant's, an
    inactive one)."""
    scope, others = await _partition(client, make_tenant, resources)
    _, elsewhere = await _partition(client, make_tenant, resources)  # another tenant
    full = await _read(resources, scope, settings, None)
    scoped = await _read_for(resources, scope, settings, None, ["cello"])
    reader = ColdReader(rank_weights(settings), None, 1)
    rows = [0, 5, 23, 7]
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        found = await reader.records(session, scope, scoped, rows)
        assert await reader.records(session, scope, scoped, []) == {}
    assert found == {row: full.records[row] for row in rows}
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(
            text("UPDATE memories SET is_active = false WHERE relationship_id = :r AND id = :id"),
            {"r": scope.relationship_id, "id": full.records[5].id},
        )
        await session.execute(
            text("UPDATE memories SET expires_at = :at WHERE relationship_id = :r AND id = :id"),
            {
                "r": scope.relationship_id,
                "id": full.records[7].id,
                "at": scoped.read_at + timedelta(microseconds=1),
            },
        )
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        found = await reader.records(session, scope, scoped, rows)
    assert set(found) == {0, 23, 7}
    assert found[7].content == full.records[7].content
    assert found[7].expires_at == scoped.read_at + timedelta(microseconds=1)
    outside = [*others, *elsewhere]
    foreign = replace(scoped, keys=b"".join(other.bytes for other in outside))
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        assert await reader.records(session, scope, foreign, range(len(outside))) == {}


async def test_stored_tokens_must_be_words(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    """The readers' counts and matches rely on it (migration 0010)."""
    scope, _ = await _partition(client, make_tenant, resources)
    for tokens in (["green tea"], ["cello", ""], ["tea", None], [["a"], ["b"]]):
        with pytest.raises(DBAPIError, match="ck_memories_tokens_are_words"):
            async with owner_sessions(resources)() as session, session.begin():
                await session.execute(INSERT, _memory(scope, 40, tokens=tokens))


WIDE = 1536  # wider than ix_memories_recall holds (INDEXED_VECTOR_DIMENSIONS)


async def test_a_read_for_one_query_ranks_memories_with_wide_vectors_as_a_full_read_does(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    """Memories whose vectors are too wide for ix_memories_recall are read from their
    rows (migration 0014) and take their places in partition order among the others,
    for a query of either width: each ranks only the memories of its own width."""
    scope, _ = await _partition(client, make_tenant, resources)
    wide = [
        _memory(scope, n, vector=_vector(n, WIDE), dimension=WIDE)
        for n in (0, 3, 7, 10, 20, 21, 40)
    ]
    async with owner_sessions(resources)() as session, session.begin():
        for row in wide:
            await session.execute(INSERT, row)
    narrow = np.random.default_rng(5).standard_normal(DIMENSION).astype(np.float32)
    broad = np.random.default_rng(6).standard_normal(WIDE).astype(np.float32)
    for query in (narrow, broad, None):
        full = await _read(resources, scope, settings, query)
        assert len(full.records) == 31
        for words in (["cello", "tea"], ["猫"], []):
            _assert_ranks_as(await _read_for(resources, scope, settings, query, words), full, words)
        if query is not None:
            assert full.similarity is not None
            ranked = np.flatnonzero(full.similarity != 0)  # 0: no vector of this width
            wide_ids = {w["id"] for w in wide}
            widths = {WIDE if full.records[i].id in wide_ids else DIMENSION for i in ranked}
            assert widths == {len(query)}


async def test_a_vector_records_its_own_width(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    """The recall indexes decide by ``embedding_dim`` which holds a memory (0014)."""
    scope, _ = await _partition(client, make_tenant, resources)
    for dimension in (None, DIMENSION + 1, WIDE):
        with pytest.raises(DBAPIError, match="ck_memories_vector_dimension_recorded"):
            async with owner_sessions(resources)() as session, session.begin():
                await session.execute(INSERT, _memory(scope, 41, dimension=dimension))


def _plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(n for child in plan.get("Plans", ()) for n in _plan_nodes(child))]


async def test_a_read_for_one_query_reads_no_row_of_the_memories_it_ranks(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources, superuser: AsyncEngine
) -> None:
    """Under row-level security, as the application role reads, Postgres can answer the
    read from ix_memories_recall without visiting the table, and the tokens of the
    memories holding a query word through memory_terms(). The plans are forced (the
    test's partitions are too small for the planner to prefer an index); the bench
    shows what it prefers at scale."""
    scope, _ = await _partition(client, make_tenant, resources)
    async with superuser.connect() as connection:
        autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
        await autocommit.execute(text("VACUUM (ANALYZE) memories"))
        found = await autocommit.execute(
            text(
                "SELECT inhrelid::regclass::text FROM pg_inherits "
                "WHERE inhparent = 'ix_memories_recall'::regclass"
            )
        )
        recall_indexes = set(found.scalars())
        options = await autocommit.scalar(
            text("SELECT reloptions FROM pg_class WHERE relname = 'ix_memories_terms'")
        )
    distance = case(
        (Memory.embedding_dim == DIMENSION, Memory.embedding.cosine_distance(bindparam("q"))),
    )
    statement = wire.for_query(distance)
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        await session.execute(text("SET LOCAL enable_seqscan = off"))
        await session.execute(text("SET LOCAL enable_bitmapscan = off"))
        connection = await session.connection()
        compiled = statement.compile(dialect=connection.dialect)
        values = dict(compiled.params) | wire.partition_params(scope, datetime.now(UTC))
        values |= {"q": _vector(1), wire.QUERY_TERMS.key: ["cello", "tea"]}
        raw = await connection.get_raw_connection()
        explain = "EXPLAIN (ANALYZE, FORMAT JSON) " + compiled.string
        answer = await raw.driver_connection.fetchval(
            explain, *(values[name] for name in compiled.positiontup or ())
        )
    nodes = _plan_nodes(answer[0]["Plan"])  # the engine decodes json
    scans = [n for n in nodes if str(n.get("Relation Name", "")).startswith("memories")]
    read = [n for n in scans if n.get("Index Name") in recall_indexes]
    assert [n["Node Type"] for n in read] == ["Index Only Scan"], scans
    assert read[0]["Actual Rows"] == 24
    assert read[0]["Heap Fetches"] == 0
    others = [n for n in scans if n is not read[0]]
    assert all(n["Node Type"] == "Index Scan" and n["Actual Rows"] == 0 for n in others), others
    functions = [n for n in nodes if n["Node Type"] == "Function Scan"]
    assert [n["Function Name"] for n in functions] == ["memory_terms"]
    assert options == ["fastupdate=off"]  # no pending list for every search to scan
    assert functions[0]["Actual Rows"] == sum("cello" in t or "tea" in t for t in _tokens_of(scope))


async def test_memory_terms_finds_only_the_calling_tenants_memories(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    """memory_terms() runs as the system role, past row-level security: it applies the
    policy's condition itself, so a tenant's session finds nothing of another tenant's
    relationship, whatever it passes, and a session naming no tenant (or '*') nothing."""
    mine, _ = await _partition(client, make_tenant, resources)
    theirs, _ = await _partition(client, make_tenant, resources)
    call = text("SELECT count(*) FROM memory_terms(:r, :t, CAST(:terms AS text[]))")

    async def found(tenant: str, scope: RelationshipScope) -> int:
        async with resources.sessions() as session:
            session.info[TENANT_INFO] = tenant
            values = {"r": scope.relationship_id, "t": scope.tenant_id, "terms": ["cello"]}
            return int(await session.scalar(call, values) or 0)

    expected = sum("cello" in tokens for tokens in _tokens_of(mine))
    assert expected > 0
    assert await found(str(mine.tenant_id), mine) == expected
    assert await found(str(mine.tenant_id), theirs) == 0
    assert await found(str(theirs.tenant_id), mine) == 0
    assert await found("", mine) == 0
    assert await found("*", theirs) == 0
    crossed = RelationshipScope(TenantId(theirs.tenant_id), mine.relationship_id)
    assert await found(str(theirs.tenant_id), crossed) == 0
    async with resources.sessions() as session:
        definition = (
            await session.execute(
                text(
                    "SELECT prosecdef, proconfig, has_function_privilege('public', oid, "
                    "'EXECUTE') FROM pg_proc WHERE proname = 'memory_terms'"
                )
            )
        ).one()
    assert definition == (True, ["search_path=pg_catalog, public"], False)


def _tokens_of(scope: RelationshipScope) -> list[list[str]]:
    """The tokens of ``_partition``'s memories of ``scope`` that memory_terms() reads:
    its 24 active ones and the expired one (it leaves expiry to the read)."""
    return [_memory(scope, n)["tokens"] for n in [*range(24), 4]]
