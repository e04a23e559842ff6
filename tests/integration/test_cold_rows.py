"""Cold reads (cold.py: a partition as one row of aggregates) build what the ranking
reference builds from the same memories loaded row by row: the texts, BM25 scores,
neighbours, every ranking column, the vectors, and Postgres's cosine; a read for one
query ranks it exactly as the whole partition does. The partition holds every kind of
column value a read must carry (NULLs, empty tokens, Chinese, expiry, recalls, private
memories, sessions, memories without vectors) and sits among memories that must not
appear (another relationship's, inactive, superseded, deleted, expired)."""

from __future__ import annotations

import gc
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
    assert_same_ranking_columns,
    owner_sessions,
    resolve_body,
)
from tether.core.database import TENANT_INFO
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_session
from tether.recall import wire
from tether.recall.cold import ColdReader
from tether.recall.enums import MemoryLayer, MemoryType
from tether.recall.index import PartitionIndex, RankDoc
from tether.recall.models import QUERY_ROW_FIELDS, Memory
from tether.recall.partition import Partition
from tether.recall.text import tokenize
from tether.recall.weights import rank_weights

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
) -> tuple[list[Any], PartitionIndex, list[Any]]:
    """The partition's rows loaded one by one, the index the ranking reference builds
    from them, and their vectors."""
    async with owner_sessions(resources)() as session:
        rows = (
            await session.execute(
                text(
                    "SELECT id, external_id, content, memory_type, layer, occurred_at, "
                    "expires_at, importance, confidence, strength, last_recalled_at, "
                    "private_to_creator, source_session_id, tokens, embedding::text "
                    "FROM memories WHERE relationship_id = :r AND tenant_id = :t "
                    "AND is_active AND superseded_by IS NULL AND deleted_at IS NULL "
                    "AND (expires_at IS NULL OR expires_at > now()) "
                    "ORDER BY occurred_at, id"
                ),
                {"r": scope.relationship_id, "t": scope.tenant_id},
            )
        ).all()
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
    return list(rows), PartitionIndex.build(docs, rank_weights(settings)), vectors


async def _whole(
    resources: Resources, scope: RelationshipScope, settings: Settings, model: str | None = None
) -> Partition:
    """The whole partition, with the vectors of ``model`` (None: all; one partition's
    vectors must have one width, as those of one model do)."""
    reader = ColdReader(rank_weights(settings), model)
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        return await reader.whole(session, scope, "v")


async def _read_for(
    resources: Resources,
    scope: RelationshipScope,
    settings: Settings,
    query: Any,
    words: list[str],
) -> Partition:
    """A read for one query, as a request makes it."""

    async def vector() -> Any:
        return query

    reader = ColdReader(rank_weights(settings), None)
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        found = await reader.for_query(session, scope, vector(), "v", words)
    assert found.texts is None
    return found


def _cosines(vectors: list[Any], query: Any) -> list[float | None]:
    """Each vector's cosine to ``query`` as Postgres computes it (the column is a
    halfvec, and so is the query it is compared with)."""
    sent = query.astype(np.float16).astype(np.float64)
    return [
        None
        if v is None or len(v) != len(sent)
        else float(v @ sent / (np.linalg.norm(v) * np.linalg.norm(sent)))
        for v in vectors
    ]


async def test_a_whole_read_builds_what_the_reference_builds(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    scope, _ = await _partition(client, make_tenant, resources)
    rows, index, vectors = await _reference(resources, scope, settings)
    read = await _whole(resources, scope, settings)
    assert (read.source, read.terms, read.similarity) == ("cold", None, None)
    assert len(rows) == 24
    assert read.texts is not None
    texts = read.texts
    assert [read.memory_id(i) for i in range(len(rows))] == [row.id for row in rows]
    assert list(texts.external_ids) == [row.external_id for row in rows]
    assert list(texts.contents) == [row.content for row in rows]
    assert list(texts.types) == [row.memory_type for row in rows]
    assert list(texts.layers) == [row.layer for row in rows]
    gc.collect()  # what a process holds of many partitions, the collector stops walking
    assert not any(map(gc.is_tracked, (texts.external_ids, texts.contents, texts.types)))
    for column in ("importance", "confidence", "strength", "reference_time", "neighbours"):
        assert np.array_equal(getattr(read.index, column), getattr(index, column)), column
    for words in QUERIES:
        assert np.array_equal(read.index.bm25.scores(words), index.bm25.scores(words)), words
    expires = [np.inf if row.expires_at is None else row.expires_at.timestamp() for row in rows]
    assert np.array_equal(read.expires_at, expires)
    assert read.private.tolist() == [row.private_to_creator for row in rows]
    summaries = [i for i, row in enumerate(rows) if row.memory_type == "summary"]
    latest = max(summaries, key=lambda i: rows[i].occurred_at)
    assert read.latest_summary(np.ones(len(rows), np.bool_)) == latest
    recalled = read.recalled(latest)
    assert (recalled.id, recalled.content, recalled.occurred_at) == (
        rows[latest].id,
        rows[latest].content,
        rows[latest].occurred_at,
    )
    assert read.index.has_vector.tolist() == [v is not None for v in vectors]
    assert read.index.matrix is not None
    for stored, vector in zip(read.index.matrix, vectors, strict=True):
        expected = np.zeros(DIMENSION) if vector is None else vector
        assert stored == pytest.approx(expected, abs=1e-3)  # float16 in the column


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


async def test_a_read_for_one_query_has_postgres_cosines_or_none_without_a_vector(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    scope, _ = await _partition(client, make_tenant, resources)
    rows, _, vectors = await _reference(resources, scope, settings)
    query = np.random.default_rng(3).standard_normal(DIMENSION).astype(np.float32)
    read = await _read_for(resources, scope, settings, query, ["cello"])
    assert read.similarity is not None
    assert read.index.has_vector.tolist() == [v is not None for v in vectors]
    for similarity, expected in zip(read.similarity, _cosines(vectors, query), strict=True):
        if expected is not None:
            assert similarity == pytest.approx(expected, abs=1e-5)
    without = await _read_for(resources, scope, settings, None, ["cello"])
    assert without.similarity is None
    assert without.index.has_vector.tolist() == [False] * len(rows)


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
    for read in (
        await _whole(resources, scope, settings),
        await _read_for(resources, scope, settings, None, ["cello"]),
    ):
        assert read.keys == b""
        assert read.index.bm25.scores(["cello"]).shape == (0,)
        assert read.latest_summary(np.ones(0, np.bool_)) is None


def _assert_ranks_as(scoped: Partition, whole: Partition, words: list[str]) -> None:
    """``scoped`` holds every ranking column of ``whole`` and scores ``words`` (and each
    of its words) bit for bit as ``whole`` does."""
    assert_same_ranking_columns(scoped, whole)
    for query in [words, *([w] for w in words)]:
        assert np.array_equal(scoped.index.bm25.scores(query), whole.index.bm25.scores(query))


async def test_a_read_for_one_query_ranks_it_as_the_whole_partition_does(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    """Everything ranking reads is the whole read's; the BM25 index scores the query (and
    any query made of its words) bit for bit as the full index does, even when a query
    word is part of a longer one or repeated; the memories around the partition (the
    sibling relationship holds the same texts) weigh nothing."""
    scope, _ = await _partition(client, make_tenant, resources)
    query = np.random.default_rng(5).standard_normal(DIMENSION).astype(np.float32)
    whole = await _whole(resources, scope, settings)
    for words in [*QUERIES, ["green", "tea", "cello", "cello"], ["ea"], ["cell"], []]:
        scoped = await _read_for(resources, scope, settings, query, words)
        assert scoped.source == "cold"
        assert scoped.terms == tuple(words)
        _assert_ranks_as(scoped, whole, words)
        assert np.array_equal(scoped.index.has_vector, whole.index.has_vector)


async def test_a_read_for_one_query_filters_and_finds_summaries_as_the_whole_does(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    """Kinds and layers travel as codes: every filter, and the newest summary among any
    visible rows, are the whole read's (a kind no code names matches no filter)."""
    scope, _ = await _partition(client, make_tenant, resources)
    odd = _memory(scope, 31, kind="not-a-kind")
    # Two summaries at the newest summary's moment: the first in partition order wins.
    ties = [_memory(scope, 17, kind="summary") for _ in range(2)]
    async with owner_sessions(resources)() as session, session.begin():
        for row in (odd, *ties):
            await session.execute(INSERT, row)
    whole = await _whole(resources, scope, settings)
    scoped = await _read_for(resources, scope, settings, None, ["tea"])
    assert whole.texts is not None
    types_of = whole.texts.types
    filters: list[list[str] | None] = [None, [], ["fact"], ["summary", "fact"], ["not-a-kind"]]
    for types in filters:
        for layers in [None, ["semantic"], ["episodic"], ["nowhere"]]:
            found = scoped.allowed(types, layers)
            assert np.array_equal(found, whole.allowed(types, layers)), (types, layers)
            expected = [
                (types is None or (t in types and t != "not-a-kind"))
                and (layers is None or "semantic" in layers)
                for t in types_of
            ]
            assert found.tolist() == expected, (types, layers)
    rng = np.random.default_rng(9)
    for _ in range(40):
        visible = rng.random(whole.size) < 0.6
        assert scoped.latest_summary(visible) == whole.latest_summary(visible)
    newest = [i for i in range(whole.size) if whole.recalled(i).occurred_at == ties[0]["occurred"]]
    everything = np.ones(whole.size, np.bool_)
    assert whole.latest_summary(everything) == min(i for i in newest if types_of[i] == "summary")


async def test_the_texts_of_a_read_for_one_query_are_the_whole_reads(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    """Read afterwards, as of the moment the partition was read (a memory that expires
    in between is still there, with its new expiry for the caller to check); a memory
    made inactive in between has none, and no id reaches a memory outside the partition
    (another relationship's or tenant's, an inactive one)."""
    scope, others = await _partition(client, make_tenant, resources)
    _, elsewhere = await _partition(client, make_tenant, resources)  # another tenant
    whole = await _whole(resources, scope, settings)
    scoped = await _read_for(resources, scope, settings, None, ["cello"])
    assert scoped.read_at is not None
    reader = ColdReader(rank_weights(settings), None)
    rows = [0, 5, 23, 7]
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        found = await reader.texts(session, scope, scoped, rows)
        assert await reader.texts(session, scope, scoped, []) == {}
    assert found == {row: whole.recalled(row) for row in rows}
    expires = scoped.read_at + timedelta(microseconds=1)
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(
            text("UPDATE memories SET is_active = false WHERE relationship_id = :r AND id = :id"),
            {"r": scope.relationship_id, "id": whole.memory_id(5)},
        )
        await session.execute(
            text("UPDATE memories SET expires_at = :at WHERE relationship_id = :r AND id = :id"),
            {"r": scope.relationship_id, "id": whole.memory_id(7), "at": expires},
        )
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        found = await reader.texts(session, scope, scoped, rows)
    assert set(found) == {0, 23, 7}
    assert found[7].content == whole.recalled(7).content
    assert found[7].expires_at == pytest.approx(expires.timestamp(), abs=1e-6)
    outside = [*others, *elsewhere]
    foreign = replace(scoped, keys=b"".join(other.bytes for other in outside))
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        assert await reader.texts(session, scope, foreign, range(len(outside))) == {}


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
    whole = await _whole(resources, scope, settings, model="of no memory")  # widths mixed
    assert whole.size == 31
    _, _, vectors = await _reference(resources, scope, settings)
    for query in (narrow, broad, None):
        for words in (["cello", "tea"], ["猫"], []):
            scoped = await _read_for(resources, scope, settings, query, words)
            _assert_ranks_as(scoped, whole, words)
        if query is not None:
            assert scoped.similarity is not None
            expected = _cosines(vectors, query)
            assert scoped.index.has_vector.tolist() == [c is not None for c in expected]
            for similarity, cosine in zip(scoped.similarity, expected, strict=True):
                assert similarity == pytest.approx(0.0 if cosine is None else cosine, abs=1e-5)


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
