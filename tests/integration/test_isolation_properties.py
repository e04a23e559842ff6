"""Isolation as a property: in random worlds (Hypothesis draws tenants' users, facets,
personas, relationships, memories and a sequence of operations), search and context for
relationship R return R's memories, turns and persona profile only — through the hot
tier, after evictions and flushes, after ownership transfers and under concurrency.

All content carries a marker naming its owner (``zzm<world>t<tenant>r<rel>n<i>``; ``zzu``
turns, ``zzp`` profiles); both tenants use the same external ids; queries borrow other
relationships' markers and shared words. Two API replicas share Postgres and Redis; the
second keeps one in-process partition, so it keeps evicting and reads the Redis tier."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.ids import RelationshipId, RelationshipScope
from tests.support import resolve_body, wait_for_hot_copy
from tether.app import bind_resources, create_app, with_outer_middleware
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.recall.versions import partition_keys

pytestmark = pytest.mark.integration

MARKER = re.compile(r"zz[mpu]\d+t\d+[rp]\d+(?:n\d+)?")
WORDS = ["coffee", "hiking", "cat", "piano", "tea", "beach", "novel", "garden", "猫", "咖啡"]
FACETS = ["default", "work"]
POOLS = ["pool-0", "pool-1"]
_worlds = itertools.count()

Headers = dict[str, str]


@dataclass
class Rel:
    """One relationship in one tenant, and everything the test knows it owns."""

    tenant: int
    index: int
    user: str
    facet: str
    persona: str
    creator: str
    rid: str = ""
    persona_id: str = ""
    active: dict[str, bool] = field(default_factory=dict)  # memory id -> private
    active_markers: dict[str, str] = field(default_factory=dict)  # memory id -> marker
    ever: set[str] = field(default_factory=set)  # every memory id it ever had
    markers: set[str] = field(default_factory=set)  # every memory and turn marker
    operator: str | None = None  # the pool operating it; None while its creator does
    counter: itertools.count[int] = field(default_factory=itertools.count)

    def marker(self, world: int, kind: str = "m") -> str:
        return f"zz{kind}{world}t{self.tenant}r{self.index}n{next(self.counter)}"

    def visible(self, private_ok: bool) -> set[str]:
        return {i for i, private in self.active.items() if private_ok or not private}


@dataclass
class Tenant:
    handle: Any
    gateway: Headers
    creators: dict[str, Headers]
    operators: dict[str, Headers]
    profiles: dict[str, str] = field(default_factory=dict)  # persona external id -> marker


@dataclass
class World:
    number: int
    apis: list[httpx.AsyncClient]  # two API replicas over the same stores
    redis: Redis
    sessions: async_sessionmaker[AsyncSession]
    tenants: list[Tenant] = field(default_factory=list)
    rels: list[list[Rel]] = field(default_factory=list)  # per tenant, the same external ids

    def rel(self, tenant: int, index: int) -> Rel:
        rels = self.rels[tenant % 2]
        return rels[index % len(rels)]

    def all_rels(self) -> list[Rel]:
        return [r for rels in self.rels for r in rels]

    def profile(self, rel: Rel) -> str | None:  # R's persona's profile marker, if it has one
        return self.tenants[rel.tenant].profiles.get(rel.persona)


@pytest.fixture(scope="module")
async def replica(settings: Settings, resources: Resources) -> AsyncIterator[httpx.AsyncClient]:
    """A second API process whose in-process tier holds a single partition."""
    recall = settings.recall.model_copy(update={"local_partitions": 1})
    own = dataclasses.replace(resources, settings=settings.model_copy(update={"recall": recall}))
    app = create_app(own.settings)
    bind_resources(app, own)
    transport = httpx.ASGITransport(app=with_outer_middleware(app))
    async with httpx.AsyncClient(transport=transport, base_url="http://tether") as http:
        yield http


# --- strategies ----------------------------------------------------------------------------

words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)
memory_specs = st.lists(st.tuples(words, st.booleans()), min_size=1, max_size=4)
# Shared words, indices of other relationships' markers to borrow, and whether to add one
# of R's own markers.
queries = st.tuples(words, st.lists(st.integers(0, 99), max_size=4), st.booleans())
tenant_ix, rel_ix, api_ix = st.integers(0, 1), st.integers(0, 9), st.integers(0, 1)
bursts = st.lists(st.tuples(tenant_ix, rel_ix, st.integers(0, 3)), min_size=6, max_size=16)

operations = st.one_of(
    st.tuples(st.just("search"), tenant_ix, rel_ix, api_ix, st.booleans(), queries),
    st.tuples(st.just("context"), tenant_ix, rel_ix, api_ix, st.booleans(), queries),
    st.tuples(
        st.just("evict"),
        tenant_ix,
        rel_ix,
        st.sampled_from(["blob", "version", "both"]),
    ),
    st.tuples(st.just("add"), tenant_ix, rel_ix, api_ix, words, st.booleans()),
    st.tuples(st.just("delete"), tenant_ix, rel_ix, api_ix, st.integers(0, 9)),
    st.tuples(st.just("transfer"), tenant_ix, rel_ix, st.sampled_from([*POOLS, "creator"])),
    st.tuples(st.just("turn"), tenant_ix, rel_ix, api_ix, words),
    st.tuples(st.just("flush")),
    st.tuples(st.just("burst"), bursts),
)


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    users, personas = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    creator_of = draw(st.lists(st.integers(0, 1), min_size=personas, max_size=personas))
    ids = st.tuples(
        st.integers(0, users - 1), st.sampled_from(FACETS), st.integers(0, personas - 1)
    )
    triples = draw(st.lists(ids, min_size=2, max_size=4, unique=True))
    n = len(triples)
    # Every world goes through a transfer, a flush, an eviction and a burst; then more.
    required = [
        ("transfer", draw(tenant_ix), draw(rel_ix), draw(st.sampled_from(POOLS))),
        ("flush",),
        ("evict", draw(tenant_ix), draw(rel_ix), "version"),
        ("burst", draw(bursts)),
    ]
    return {
        "rels": [(f"u-{u}", f, f"p-{p}", f"c-{creator_of[p]}") for u, f, p in triples],
        "memories": [draw(st.lists(memory_specs, min_size=n, max_size=n)) for _ in range(2)],
        "profiles": [
            {f"p-{p}" for p in draw(st.sets(st.integers(0, personas - 1)))} for _ in range(2)
        ],
        "ops": draw(st.permutations([*required, *draw(st.lists(operations, max_size=8))])),
    }


# --- requests ------------------------------------------------------------------------------


async def _ok(response: Awaitable[httpx.Response], status: int = 200) -> dict[str, Any]:
    got = await response
    assert got.status_code == status, got.text
    return got.json() if got.content else {}


async def _search(
    api: httpx.AsyncClient, headers: Headers, rel: Rel, query: str, k: int = 20
) -> httpx.Response:
    body = {"query": query, "k": k}
    return await api.post(f"/v1/relationships/{rel.rid}/search", json=body, headers=headers)


async def _context(
    api: httpx.AsyncClient, headers: Headers, rel: Rel, query: str, by_ids: bool = True
) -> httpx.Response:
    body: dict[str, Any] = {"query": query, "recent_turns": 50}
    if by_ids:
        body["relationship_id"] = rel.rid
    else:
        body |= resolve_body(rel.user, rel.persona, rel.creator, rel.facet)
    return await api.post("/v1/context", json=body, headers=headers)


# --- building the world --------------------------------------------------------------------


async def _build(world: World, make_tenant: Any, spec: dict[str, Any]) -> None:
    creators = sorted({c for *_, c in spec["rels"]})
    for t in range(2):
        handle = await make_tenant()
        keys = await asyncio.gather(
            handle.key("gateway"),
            *(handle.key("creator", c) for c in creators),
            *(handle.key("operator", p) for p in POOLS),
        )
        split = 1 + len(creators)
        by_creator = dict(zip(creators, keys[1:split], strict=True))
        tenant = Tenant(handle, keys[0], by_creator, dict(zip(POOLS, keys[split:], strict=True)))
        world.tenants.append(tenant)
        world.rels.append([Rel(t, i, *ids) for i, ids in enumerate(spec["rels"])])
        for rel, memories in zip(world.rels[t], spec["memories"][t], strict=True):
            body = resolve_body(rel.user, rel.persona, rel.creator, rel.facet)
            resolved = await world.apis[0].post("/v1/resolve", json=body, headers=tenant.gateway)
            assert resolved.status_code in (200, 201), resolved.text
            rel.rid = str(resolved.json()["relationship_id"])
            rel.persona_id = str(resolved.json()["creator_persona_id"])
            await _add(world, rel, memories, api=rel.index)
        with_profile = {r.persona: r for r in world.rels[t] if r.persona in spec["profiles"][t]}
        for rel in with_profile.values():
            await _profile(world, tenant, rel)


async def _add(world: World, rel: Rel, memories: list[tuple[list[str], bool]], api: int) -> None:
    """One batch through R's creator, who may write private notes too."""
    markers = [rel.marker(world.number) for _ in memories]
    rel.markers.update(markers)
    body = {
        "memories": [
            {"content": f"The user likes {' '.join(text)} {marker}", "private_to_creator": private}
            for (text, private), marker in zip(memories, markers, strict=True)
        ]
    }
    headers = world.tenants[rel.tenant].creators[rel.creator]
    url = f"/v1/relationships/{rel.rid}/memories/batch"
    created = await _ok(world.apis[api % 2].post(url, json=body, headers=headers))
    for item in created["results"]:
        memory_id = str(item["id"])
        rel.active[memory_id] = memories[item["index"]][1]
        rel.active_markers[memory_id] = markers[item["index"]]
        rel.ever.add(memory_id)


async def _profile(world: World, tenant: Tenant, rel: Rel) -> None:
    marker = f"zzp{world.number}t{rel.tenant}p{rel.persona[2:]}"
    body = {"background": f"{marker} loves coffee and cat stories", "tone": "warm"}
    body |= {"taboos": [], "scripts": [], "notes": ""}
    headers = tenant.creators[rel.creator] | {"If-Match": '"0"'}
    url = f"/v1/personas/{rel.persona_id}/profile"
    await _ok(world.apis[rel.index % 2].put(url, json=body, headers=headers))
    tenant.profiles[rel.persona] = marker


async def _check_hot_tier(world: World) -> None:
    """A partition one replica loaded serves the other from Redis, and only R's."""
    for rel in world.all_rels():
        gateway = world.tenants[rel.tenant].gateway
        query = " ".join([*WORDS, *rel.active_markers.values()])
        first = await _ok(_search(world.apis[0], gateway, rel, query, k=50))
        await wait_for_hot_copy(world.redis, rel.rid)
        second = await _ok(_search(world.apis[1], gateway, rel, query, k=50))
        assert first["tier"] == "cold"
        assert second["tier"] == "hot"
        for body in (first, second):
            assert _hits(rel, body, private_ok=False, where="hot") == rel.visible(False)


# --- checks --------------------------------------------------------------------------------


def _marks(text: str) -> set[str]:
    return set(MARKER.findall(text))


def _hits(rel: Rel, body: dict[str, Any], *, private_ok: bool, where: str) -> set[str]:
    ids = set()
    for hit in body["items"]:
        assert hit["id"] in rel.ever, f"{where}: {hit['content']!r} is not {rel.rid}'s memory"
        assert _marks(hit["content"]) <= rel.markers, f"{where}: foreign {hit['content']!r}"
        assert private_ok or not rel.active.get(hit["id"], False), f"{where}: private leaked"
        ids.add(hit["id"])
    return ids


def _check_context(world: World, rel: Rel, body: dict[str, Any], where: str) -> None:
    assert body["relationship_id"] == rel.rid, where
    profile = world.profile(rel)
    allowed = rel.markers | ({profile} if profile else set())
    assert _marks(body["context"]) <= allowed, f"{where}: {_marks(body['context']) - allowed}"
    for item in body["items"]:
        found = _marks(item["text"])
        if item["section"] == "memory":
            assert item["id"] in rel.ever, f"{where}: {item['text']!r} is not R's memory"
            assert not rel.active.get(item["id"], False), f"{where}: private note leaked"
            assert found <= rel.markers, f"{where}: foreign memory {item['text']!r}"
        elif item["section"] == "profile":
            assert found <= {profile}, f"{where}: foreign profile {item['text']!r}"
        else:
            assert found <= rel.markers, f"{where}: foreign {item['section']} {item['text']!r}"
    if profile is not None:
        assert profile in body["context"], f"{where}: R's own profile is missing"


def _query(world: World, rel: Rel, spec: tuple[list[str], list[int], bool]) -> str:
    text, borrow, own = spec
    foreign = sorted(
        {m for o in world.all_rels() if o is not rel for m in o.markers}
        | {p for t in world.tenants for p in t.profiles.values()}
    )
    parts = [*text, *(foreign[i % len(foreign)] for i in borrow if foreign)]
    if own and rel.active_markers:
        parts.append(min(rel.active_markers.values()))
    return " ".join(parts)


# --- operations ----------------------------------------------------------------------------


async def _op_search(world: World, t: int, r: int, api: int, creator: bool, q: Any) -> None:
    rel = world.rel(t, r)
    tenant = world.tenants[rel.tenant]
    headers = tenant.creators[rel.creator] if creator else tenant.gateway
    query = _query(world, rel, q)
    body = await _ok(_search(world.apis[api], headers, rel, query))
    ids = _hits(rel, body, private_ok=creator, where=f"search {query!r}")
    wanted = {i for i, m in rel.active_markers.items() if m in query.split()}
    assert wanted & rel.visible(creator) <= ids, "R's own marker was not found"


async def _op_context(world: World, t: int, r: int, api: int, by_ids: bool, q: Any) -> None:
    rel = world.rel(t, r)
    query = _query(world, rel, q)
    headers = world.tenants[rel.tenant].gateway
    body = await _ok(_context(world.apis[api], headers, rel, query, by_ids))
    _check_context(world, rel, body, f"context {query!r}")


async def _evict(world: World, t: int, r: int, how: str) -> None:
    rel = world.rel(t, r)
    scope = RelationshipScope(
        TenantId(world.tenants[rel.tenant].handle.id), RelationshipId(uuid.UUID(rel.rid))
    )
    version_key, blob_key = partition_keys(scope)
    both = [blob_key, version_key]
    keys = {"blob": [blob_key], "version": [version_key], "both": both}
    await world.redis.delete(*keys[how])


async def _op_add(world: World, t: int, r: int, api: int, text: list[str], private: bool) -> None:
    await _add(world, world.rel(t, r), [(text, private)], api)


async def _delete(world: World, t: int, r: int, api: int, index: int) -> None:
    # Only the gateway deletes, and it cannot see (so cannot delete) private notes.
    rel = world.rel(t, r)
    public = sorted(rel.visible(private_ok=False))
    if not public:
        return
    memory_id = public[index % len(public)]
    url = f"/v1/relationships/{rel.rid}/memories/{memory_id}"
    await _ok(world.apis[api].delete(url, headers=world.tenants[rel.tenant].gateway), 204)
    del rel.active[memory_id], rel.active_markers[memory_id]


async def _transfer(world: World, t: int, r: int, to: str) -> None:
    rel = world.rel(t, r)
    kind, target = ("creator", rel.creator) if to == "creator" else ("pool", to)
    body = {"to": {"kind": kind, "id": target}, "reason": "property test"}
    admin = world.tenants[rel.tenant].handle.admin
    url = f"/v1/relationships/{rel.rid}/transfer"
    await _ok(world.apis[rel.index % 2].post(url, json=body, headers=admin), 201)
    rel.operator = None if to == "creator" else to
    await _check_operators(world, rel)


async def _check_operators(world: World, rel: Rel) -> None:
    """Only the pool now operating R, in R's tenant, may read R — and not its private part.
    Both tenants have operators with the same pool ids."""
    query = " ".join(["coffee", *rel.active_markers.values()])
    keys = [
        (t, p, h) for t, tenant in enumerate(world.tenants) for p, h in tenant.operators.items()
    ]
    calls = [_search(world.apis[t], h, rel, query, k=50) for t, _, h in keys]
    calls += [_context(world.apis[1 - t], h, rel, query) for t, _, h in keys]
    responses = await asyncio.gather(*calls)
    for (t, pool, _), search, context in zip(keys, responses, responses[len(keys) :]):  # noqa: B905
        where = f"operator {pool} of tenant {t} on {rel.rid} (operated by {rel.operator})"
        if t == rel.tenant and pool == rel.operator:
            assert search.status_code == 200, f"{where}: {search.text}"
            ids = _hits(rel, search.json(), private_ok=False, where=where)
            assert ids == rel.visible(private_ok=False), where
            assert context.status_code == 200, f"{where}: {context.text}"
            _check_context(world, rel, context.json(), where)
        else:
            assert (search.status_code, context.status_code) == (404, 404), where


async def _turn(world: World, t: int, r: int, api: int, text: list[str]) -> None:
    rel = world.rel(t, r)
    marker = rel.marker(world.number, "u")
    rel.markers.add(marker)
    turn = {"session_id": f"s-{world.number}", "role": "user", "text": f"{' '.join(text)} {marker}"}
    headers = world.tenants[rel.tenant].gateway
    url = f"/v1/relationships/{rel.rid}/turns"
    await _ok(world.apis[api].post(url, json={"turns": [turn]}, headers=headers), 202)
    body = await _ok(_context(world.apis[1 - api], headers, rel, " ".join(text)))
    _check_context(world, rel, body, "context after a turn")
    assert marker in body["context"], "the turn just sent is not among R's recent turns"


async def _burst(world: World, plan: list[tuple[int, int, int]]) -> None:
    """Searches, contexts, evictions and writes over many relationships at once, through
    both replicas; checked afterwards against the final model (writes raced the reads)."""
    checks: list[Callable[[], object]] = []

    async def one(n: int, t: int, r: int, mode: int) -> None:
        rel, api = world.rel(t, r), world.apis[n % 2]
        gateway = world.tenants[rel.tenant].gateway
        query = _query(world, rel, (["coffee", "cat"], [n, t + r], True))
        if mode == 0:
            body = await _ok(_search(api, gateway, rel, query))
            checks.append(lambda: _hits(rel, body, private_ok=False, where="burst search"))
        elif mode == 1:
            body = await _ok(_context(api, gateway, rel, query))
            checks.append(lambda: _check_context(world, rel, body, "burst context"))
        elif mode == 2:
            await _evict(world, t, r, "both")
        else:
            await _add(world, rel, [(["tea", "beach"], False)], api=n)

    every = [(t, r, m) for t in range(2) for r in range(len(world.rels[t])) for m in (0, 1)]
    await asyncio.gather(*(one(n, *step) for n, step in enumerate([*plan, *every])))
    for check in checks:
        check()


OPERATIONS: dict[str, Callable[..., Awaitable[None]]] = {
    "search": _op_search,
    "context": _op_context,
    "evict": _evict,
    "add": _op_add,
    "delete": _delete,
    "transfer": _transfer,
    "turn": _turn,
    "flush": lambda world: world.redis.flushdb(),
    "burst": _burst,
}


async def _sweep(world: World) -> None:
    """Every relationship at once, from every angle: exactly its own, nobody else's."""
    await asyncio.gather(*(_sweep_one(world, rel) for rel in world.all_rels()))


async def _sweep_one(world: World, rel: Rel) -> None:
    tenant, other = world.tenants[rel.tenant], world.tenants[1 - rel.tenant]
    borrowed = _query(world, rel, (["coffee"], list(range(0, 99, 12)), False))
    query = " ".join([*rel.active_markers.values(), borrowed])
    where = f"sweep of {rel.rid} ({rel.user}/{rel.facet}/{rel.persona}) q={query!r}"
    # Another relationship's memory, addressed through R, does not exist.
    others = sorted(i for o in world.all_rels() if o is not rel for i in o.ever)
    lost = f"/v1/relationships/{rel.rid}/memories/{others[rel.index % len(others)]}"
    # Keys of the other tenant hold the very same external ids: R does not exist for them.
    strangers = [h for c, h in tenant.creators.items() if c != rel.creator]
    strangers += [other.creators[rel.creator], other.gateway]
    a, b = world.apis[rel.index % 2], world.apis[1 - rel.index % 2]
    gateway, creator, context, listed, twin_context, *denied = await asyncio.gather(
        _search(a, tenant.gateway, rel, query, k=50),
        _search(b, tenant.creators[rel.creator], rel, query, k=50),
        _context(a, tenant.gateway, rel, query),
        a.get(f"/v1/relationships/{rel.rid}/memories", headers=tenant.gateway),
        _context(a, other.gateway, rel, query, by_ids=False),
        _context(b, other.gateway, rel, query),
        a.get(lost, headers=tenant.gateway),
        b.delete(lost, headers=tenant.gateway),
        *(_search(b, h, rel, query) for h in strangers),
    )
    assert _hits(rel, gateway.json(), private_ok=False, where=where) == rel.visible(False)
    assert _hits(rel, creator.json(), private_ok=True, where=where) == rel.visible(True)
    assert context.status_code == 200, context.text
    _check_context(world, rel, context.json(), where)
    assert {m["id"] for m in listed.json()["items"]} <= rel.visible(False), where
    # Resolving R's external ids in the other tenant gets that tenant's own relationship.
    assert twin_context.status_code == 200, twin_context.text
    twin = world.rel(1 - rel.tenant, rel.index)
    _check_context(world, twin, twin_context.json(), f"twin of {where}")
    assert [r.status_code for r in denied] == [404] * len(denied), where


# --- the property --------------------------------------------------------------------------


@hypothesis_settings(
    max_examples=6,
    deadline=None,
    database=None,
    # No shrinking: an example costs a second or two of real requests, and a failure
    # prints its whole world and operation list, which is enough to replay it.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(spec=worlds())
async def test_search_and_context_return_only_the_relationships_own_memory(
    client: httpx.AsyncClient,
    replica: httpx.AsyncClient,
    resources: Resources,
    make_tenant: Any,
    spec: dict[str, Any],
) -> None:
    world = World(next(_worlds), [client, replica], resources.hot_redis, resources.sessions)
    await _build(world, make_tenant, spec)
    await _check_hot_tier(world)
    for kind, *args in spec["ops"]:
        await OPERATIONS[kind](world, *args)
    await _sweep(world)


@hypothesis_settings(max_examples=3, deadline=None, database=None, phases=[Phase.generate])
@given(external_id=st.text("abcxyz-_0123456789", min_size=1, max_size=20), secret=words)
async def test_reusing_an_external_id_never_reveals_a_private_note(
    client: httpx.AsyncClient, make_tenant: Any, external_id: str, secret: list[str]
) -> None:
    tenant = await make_tenant()
    gateway, creator = await asyncio.gather(tenant.key("gateway"), tenant.key("creator", "c-1"))
    resolved = await client.post("/v1/resolve", json=resolve_body(), headers=gateway)
    url = f"/v1/relationships/{resolved.json()['relationship_id']}/memories"
    note = {"content": f"zzsecret {' '.join(secret)}", "private_to_creator": True}
    await _ok(client.post(url, json=note | {"external_id": external_id}, headers=creator), 201)
    reuse = {"content": "hello", "external_id": external_id}
    answer = await client.post(url, json=reuse, headers=gateway)
    assert "zzsecret" not in answer.text, f"the gateway got the private note: {answer.text}"
    assert answer.status_code == 409
    batch = await client.post(f"{url}/batch", json={"memories": [reuse]}, headers=gateway)
    assert batch.status_code == 409  # not even the note's id


async def test_a_private_note_never_surfaces_through_its_neighbours(
    client: httpx.AsyncClient, make_tenant: Any
) -> None:
    """A private note next to ordinary memories in one session neither lends them
    relevance nor is named in their explanation, and a private summary stays out of the
    gateway's context."""
    tenant = await make_tenant()
    gateway, creator = await asyncio.gather(tenant.key("gateway"), tenant.key("creator", "c-1"))
    resolved = await client.post("/v1/resolve", json=resolve_body("u-neighbours"), headers=gateway)
    rid = resolved.json()["relationship_id"]
    session = {"session_id": "s-1"}
    memories = [
        {"content": "We talked about the rainy weather", **session},
        {"content": "zzquokka escape plan for the gala", "private_to_creator": True, **session},
        {"content": "Lunch was a bowl of noodles", **session},
        {"content": "zzquokka gala recap", "memory_type": "summary", "private_to_creator": True},
    ]
    url = f"/v1/relationships/{rid}/memories/batch"
    created = await _ok(client.post(url, json={"memories": memories}, headers=creator))
    private = {
        str(item["id"])
        for item in created["results"]
        if memories[item["index"]].get("private_to_creator")
    }
    search, query = f"/v1/relationships/{rid}/search", {"query": "zzquokka gala", "k": 10}
    found = await _ok(client.post(search, json=query, headers=gateway))
    for hit in found["items"]:
        assert str(hit["id"]) not in private
        assert hit["explanation"]["neighbour_id"] not in private
        assert hit["explanation"]["neighbour_boost"] == 0.0
    own = await _ok(client.post(search, json=query, headers=creator))
    assert private <= {str(hit["id"]) for hit in own["items"]}  # the creator still finds them
    body = {"relationship_id": rid, "query": "what happened at the gala?"}
    context = await _ok(client.post("/v1/context", json=body, headers=gateway))
    assert "zzquokka" not in context["context"]
