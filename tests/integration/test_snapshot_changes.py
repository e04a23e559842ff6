"""A snapshot completed with the memories written since it was built (decision 0014)
equals the partition read from rows: Hypothesis draws a partition (English and Chinese,
sessions for neighbours) and a sequence of writes of every kind the trigger sees, each in
its own transaction; after each, a cold read from the snapshot must build exactly what a
read from the rows builds (records, BM25 scores, neighbours, every ranking column), and
the snapshot must be kept for writes that leave the text alone and dropped for those that
change or delete it. A completed snapshot stored in the old one's place (as the fill after
a cold read does) must read back as the rows too."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, Phase, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.ids import RelationshipId, RelationshipScope
from tests.support import MIXED_MEMORIES, assert_same_partition, owner_sessions, resolve_body
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_session
from tether.providers.configured import rank_weights
from tether.recall.cold import MAX_CHANGES, ColdReader
from tether.recall.loaded import LoadedPartition
from tether.recall.text import tokenize

pytestmark = pytest.mark.integration

SENTENCES = [
    *MIXED_MEMORIES,
    "The user drinks green tea every morning",
    "用户在学日语",
    "The user went hiking with the cat",
]
QUERIES = [["cello", "quartet"], ["爬山", "火锅"], ["user"], ["猫", "cat", "tea"], ["日语"]]
SESSIONS = [None, "s-1", "s-2"]
_users = itertools.count()

# (kind, which memory, a sentence or a session) — the writes the trigger sees.
KEPT = [
    "insert",
    "deactivate",
    "supersede",
    "soft delete",
    "type",
    "layer",
    "occurred",
    "private",
    "session",
    "external id",
    "move out",
    "move in",
    "bulk insert",
    "both",
    "expire",
    "unexpire",
    "statistics",
]
DROPPED = ["edit", "retokenize", "hard delete"]
writes = st.tuples(
    st.sampled_from(KEPT + KEPT + DROPPED),  # drops are rarer: they end the interesting part
    st.integers(0, 10_000),
    st.sampled_from(SENTENCES),
    st.sampled_from(SESSIONS),
)
# (sentence, session, minutes after the start, already expired when the snapshot is built)
memories = st.tuples(
    st.sampled_from(SENTENCES),
    st.sampled_from(SESSIONS),
    st.integers(0, 500),
    st.booleans(),
)
DIMENSION = 8


@pytest.fixture(scope="module")
def settings(settings: Settings) -> Settings:
    recall = settings.recall.model_copy(update={"snapshot_min_memories": 2})
    return settings.model_copy(update={"recall": recall})


def _vector(seed: int) -> str:
    values = np.random.default_rng(seed).standard_normal(DIMENSION)
    return "[" + ",".join(f"{v:.4f}" for v in values) + "]"


INSERT = (
    "INSERT INTO memories (relationship_id, id, tenant_id, memory_type, layer, "
    "polarity, content, tokens, importance, confidence, occurred_at, origin, "
    "source_session_id, expires_at, embedding, embedding_dim) VALUES "
)
VALUES = (
    "(:r{n}, :id{n}, :t{n}, 'fact', 'episodic', 'positive', :c{n}, :tokens{n}, 0.5, 0.8, "
    ":at{n}, 'manual', :g{n}, :x{n}, CAST(:e{n} AS halfvec), {dimension})"
)


async def _insert_many(
    session: AsyncSession, rows: list[tuple[RelationshipScope, str, str | None, int, bool]]
) -> list[uuid.UUID]:
    """One INSERT statement of ``rows`` (scope, sentence, session, minutes, expired)."""
    ids = [uuid.uuid4() for _ in rows]
    values: dict[str, Any] = {}
    for n, ((scope, sentence, group, minutes, expired), memory_id) in enumerate(
        zip(rows, ids, strict=True)
    ):
        values |= {
            f"r{n}": scope.relationship_id,
            f"id{n}": memory_id,
            f"t{n}": scope.tenant_id,
            f"c{n}": sentence,
            f"tokens{n}": tokenize(sentence),
            f"at{n}": datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes),
            f"g{n}": group,
            f"x{n}": datetime.now(UTC) - timedelta(minutes=1) if expired else None,
            f"e{n}": _vector(minutes),
        }
    rendered = ", ".join(VALUES.format(n=n, dimension=DIMENSION) for n in range(len(rows)))
    await session.execute(text(INSERT + rendered), values)
    return ids


async def _insert(
    session: AsyncSession,
    scope: RelationshipScope,
    sentence: str,
    group: str | None,
    minutes: int,
    expired: bool = False,
) -> uuid.UUID:
    return (await _insert_many(session, [(scope, sentence, group, minutes, expired)]))[0]


# Fixed statements, chosen by kind (never built from drawn data).
UPDATES = {
    "deactivate": "is_active = false",
    "soft delete": "deleted_at = now(), is_active = false",
    "type": "memory_type = 'preference'",
    "layer": "layer = 'semantic'",
    "occurred": "occurred_at = occurred_at - interval '3 hours'",
    "private": "private_to_creator = NOT private_to_creator",
    "session": "source_session_id = :g",
    "external id": "external_id = 'x-' || left(id::text, 8)",
    "expire": "expires_at = now() - interval '1 minute'",
    "unexpire": "expires_at = NULL",
    "statistics": "strength = strength + 1, importance = 0.9, last_recalled_at = now()",
    # Always a different text (a drawn sentence may be the one the memory holds).
    "edit": "content = content || ' / ' || :c",
    "retokenize": "tokens = tokens || CAST(:tokens AS text[])",
}


class Partition:
    """The relationship under test, a sibling in the same tenant, and the ids of each."""

    def __init__(self, scope: RelationshipScope, sibling: RelationshipScope) -> None:
        self.scope = scope
        self.sibling = sibling
        self.ids: list[uuid.UUID] = []
        self.sibling_ids: list[uuid.UUID] = []

    async def write(
        self, session: AsyncSession, kind: str, n: int, sentence: str, group: Any
    ) -> None:
        if kind == "insert":
            self.ids.append(await _insert(session, self.scope, sentence, group, n % 600))
            return
        if kind == "bulk insert":  # one statement, into both relationships
            rows = [(self.scope, sentence, group, n % 600 + k, False) for k in range(2)]
            ours = await _insert_many(session, [*rows, (self.sibling, sentence, group, 7, False)])
            self.ids.extend(ours[:2])
            self.sibling_ids.append(ours[2])
            return
        if kind == "move in":
            if self.sibling_ids:
                moved = self.sibling_ids.pop(n % len(self.sibling_ids))
                await self._move(session, moved, self.sibling, self.scope)
                self.ids.append(moved)
            return
        if not self.ids:
            return
        target = self.ids[n % len(self.ids)]
        if kind == "move out":
            await self._move(session, target, self.scope, self.sibling)
            self.ids.remove(target)
            self.sibling_ids.append(target)
        elif kind == "hard delete":
            await session.execute(text("DELETE FROM memories WHERE id = :id"), {"id": target})
            self.ids.remove(target)
        elif kind == "both":  # one statement, in both relationships
            theirs = self.sibling_ids[n % len(self.sibling_ids)] if self.sibling_ids else target
            await session.execute(
                text("UPDATE memories SET layer = 'semantic' WHERE id IN (:a, :b)"),
                {"a": target, "b": theirs},
            )
        elif kind == "supersede":
            newer = await _insert(session, self.scope, sentence, group, n % 600)
            self.ids.append(newer)
            await session.execute(
                text("UPDATE memories SET superseded_by = :n, is_active = false WHERE id = :id"),
                {"n": newer, "id": target},
            )
        else:
            await session.execute(
                text(f"UPDATE memories SET {UPDATES[kind]} WHERE id = :id"),  # noqa: S608
                {"id": target, "g": group, "c": sentence, "tokens": tokenize(sentence)[::-1]},
            )

    @staticmethod
    async def _move(
        session: AsyncSession, memory: uuid.UUID, old: RelationshipScope, new: RelationshipScope
    ) -> None:
        await session.execute(
            text(
                "UPDATE memories SET relationship_id = :new "
                "WHERE relationship_id = :old AND id = :id"
            ),
            {"new": new.relationship_id, "old": old.relationship_id, "id": memory},
        )


async def _relationship(
    client: Any, headers: dict[str, str], tenant_id: uuid.UUID
) -> RelationshipScope:
    response = await client.post(
        "/v1/resolve", json=resolve_body(f"changes-{next(_users)}"), headers=headers
    )
    assert response.status_code in {200, 201}, response.text
    rid = uuid.UUID(response.json()["relationship_id"])
    return RelationshipScope(TenantId(tenant_id), RelationshipId(rid))


async def _new_partition(client: Any, make_tenant: Any) -> Partition:
    """A relationship and a sibling in a new tenant, both without memories."""
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    return Partition(
        await _relationship(client, headers, tenant.id),
        await _relationship(client, headers, tenant.id),
    )


async def _store_from_rows(
    reader: ColdReader, resources: Resources, scope: RelationshipScope
) -> bool:
    """Build the relationship's snapshot from its rows and store it; False if it has
    too few active memories for one."""
    async with _reading(resources, scope) as session:
        built = await reader.read_for_snapshot(session, scope)
    if built is None:
        return False
    assert await reader.store_snapshot(resources.sessions, scope, built)
    return True


async def _query_vector() -> npt.NDArray[np.float32]:
    return np.random.default_rng(7).standard_normal(DIMENSION).astype(np.float32)


@asynccontextmanager
async def _reading(resources: Resources, scope: RelationshipScope) -> AsyncIterator[AsyncSession]:
    async with tenant_session(resources.sessions, TenantId(scope.tenant_id)) as session:
        yield session


async def _snapshot_state(resources: Resources, scope: RelationshipScope) -> list[uuid.UUID] | None:
    """The snapshot's recorded changes, or None without a snapshot."""
    async with owner_sessions(resources)() as session:
        row = (
            await session.execute(
                text("SELECT changed FROM recall_snapshots WHERE relationship_id = :r"),
                {"r": scope.relationship_id},
            )
        ).first()
    return None if row is None else list(row[0])


async def _both_ways(
    reader: ColdReader, resources: Resources, scope: RelationshipScope
) -> tuple[LoadedPartition, LoadedPartition]:
    """The partition as a cold read builds it, and as it is built from the rows (the
    snapshot deleted in a transaction that is rolled back)."""
    async with _reading(resources, scope) as session:
        served = await reader.read(session, scope, _query_vector(), "v")
    async with _reading(resources, scope) as session:
        await session.execute(
            text("DELETE FROM recall_snapshots WHERE relationship_id = :r"),
            {"r": scope.relationship_id},
        )
        from_rows = await reader.read(session, scope, _query_vector(), "v")
        await session.rollback()
    assert from_rows.source == "cold"
    return served, from_rows


@hypothesis_settings(
    max_examples=20,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@example(  # an edit that draws the text the memory already holds still changes it
    initial=[(SENTENCES[0], None, 0, False), (SENTENCES[1], None, 1, False)],
    sibling=[],
    steps=[("edit", 0, SENTENCES[0], None), ("retokenize", 1, SENTENCES[1], None)],
    rewrite=1,
)
@given(
    initial=st.lists(memories, min_size=2, max_size=12),
    sibling=st.lists(memories, min_size=0, max_size=3),
    steps=st.lists(writes, min_size=1, max_size=10),
    rewrite=st.integers(1, 4),
)
async def test_a_snapshot_completed_with_its_changes_equals_the_rows(
    settings: Settings,
    client: Any,
    make_tenant: Any,
    resources: Resources,
    initial: list[tuple[str, str | None, int, bool]],
    sibling: list[tuple[str, str | None, int, bool]],
    steps: list[tuple[str, int, str, str | None]],
    rewrite: int,
) -> None:
    partition = await _new_partition(client, make_tenant)
    async with owner_sessions(resources)() as session, session.begin():
        for sentence, group, minutes, expired in initial:
            partition.ids.append(
                await _insert(session, partition.scope, sentence, group, minutes, expired)
            )
        for sentence, group, minutes, _ in sibling:
            partition.sibling_ids.append(
                await _insert(session, partition.sibling, sentence, group, minutes)
            )
    reader = ColdReader(rank_weights(settings), None, 1, rewrite_after_changes=rewrite)
    if not await _store_from_rows(reader, resources, partition.scope):
        assert all(expired for *_, expired in initial)  # nothing active to snapshot
        return
    dropped = False
    for kind, n, sentence, group in steps:
        async with owner_sessions(resources)() as session, session.begin():
            await partition.write(session, kind, n, sentence, group)
        state = await _snapshot_state(resources, partition.scope)
        dropped = dropped or state is None
        served, from_rows = await _both_ways(reader, resources, partition.scope)
        assert_same_partition(served, from_rows, QUERIES)
        assert served.source == ("cold" if dropped else "snapshot"), (kind, state)
        if kind in DROPPED and partition.ids:
            assert state is None, kind
        if state:  # completed with what writes recorded: worth storing from `rewrite` on
            assert (served.merged_from is not None) == (len(state) >= rewrite), state
        if served.merged_from is not None and served.records and n % 2:
            # Stored in its place, as the fill after a cold read does: still the rows.
            assert await reader.store_snapshot(resources.sessions, partition.scope, served)
            assert await _snapshot_state(resources, partition.scope) == []
            again, from_rows = await _both_ways(reader, resources, partition.scope)
            assert again.merged_from is None
            assert_same_partition(again, from_rows, QUERIES)


async def test_past_the_limit_of_changes_the_snapshot_is_dropped(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    partition = await _new_partition(client, make_tenant)
    async with owner_sessions(resources)() as session, session.begin():
        for i, sentence in enumerate(SENTENCES):
            partition.ids.append(await _insert(session, partition.scope, sentence, "s-1", i))
    reader = ColdReader(rank_weights(settings), None, 2)
    assert await _store_from_rows(reader, resources, partition.scope)
    rows = [(partition.scope, SENTENCES[i % len(SENTENCES)], None, i, False) for i in range(50)]
    async with owner_sessions(resources)() as session, session.begin():
        for start in range(0, MAX_CHANGES, 50):  # statements of 50, up to the limit
            await _insert_many(session, rows[: min(50, MAX_CHANGES - start)])
    assert len(await _snapshot_state(resources, partition.scope) or []) == MAX_CHANGES
    served, from_rows = await _both_ways(reader, resources, partition.scope)
    assert served.source == "snapshot"
    assert_same_partition(served, from_rows, QUERIES)
    async with owner_sessions(resources)() as session, session.begin():
        await _insert(session, partition.scope, "用户明天去北京", None, 1)
    assert await _snapshot_state(resources, partition.scope) is None
    # One statement of more than the limit drops a fresh snapshot at once.
    assert await _store_from_rows(reader, resources, partition.scope)
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(
            text(
                "INSERT INTO memories (relationship_id, id, tenant_id, memory_type, layer, "
                "polarity, content, tokens, importance, confidence, occurred_at, origin) "
                "SELECT :r, gen_random_uuid(), :t, 'fact', 'episodic', 'positive', 'bulk', "
                "ARRAY['bulk'], 0.5, 0.8, now(), 'import' FROM generate_series(1, :n)"
            ),
            {"r": partition.scope.relationship_id, "t": partition.scope.tenant_id, "n": 300},
        )
    assert await _snapshot_state(resources, partition.scope) is None
    # The rebuild a writer starts stores a clean one.
    assert await _store_from_rows(reader, resources, partition.scope)
    assert await _snapshot_state(resources, partition.scope) == []
