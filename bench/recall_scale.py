"""Recall at scale: POST /v1/context and /search over HTTP on loopback with N memories.

    cd bench && ../.venv/bin/python recall_scale.py --memories 10000,100000
    cd bench && ../.venv/bin/python recall_scale.py --memories 10000,100000,1000000

For each N (a fresh embedded Postgres + Redis each time, the production ASGI app under
uvicorn), memories are bulk-imported with COPY straight into the partitioned ``memories``
table, spread over relationships with a skew: a few relationships hold ``--large-size``
memories (``--large-share`` of N), the rest get lognormal sizes (median 15, most 5-50).
Rows go into the table in one random order over all relationships (``--layout
interleaved``, the default), so a relationship's rows are scattered over the table's
pages as memories written over time are; ``grouped`` stores each relationship's side by
side, as every run before session 15 did (decision 0022). Postgres's buffer pool is the
embedded runtime's (a quarter of the memory) unless ``--shared-buffers-mb`` sets it.
After the load the table and its indexes are read into it (``pg_prewarm``), so that
cold reads are measured with Postgres's pages in its pool, as in a database in service
(a page read in from the OS cache costs ~20 µs here, decision 0025); how much of the pool
holds them is printed after the load, after the prewarm and after the classes
(``--postgres-buffers as-loaded`` skips the prewarm).
Contents are synthetic English and Chinese sentences from templates over a shared
vocabulary (people, places, foods, hobbies, dates); each relationship mostly speaks one
language, and queries come from the same vocabulary. Tokens are computed with the real
tokenizer. Vectors: ``--vectors template`` (default) embeds a pool of sentences per
template with the real offline model and gives each memory a vector from its template's
pool (not of its own text); ``random`` gives unit random vectors. Latency does not depend
on what the vectors mean (ranking is an exact scan over the partition's matrix), so
neither choice flatters the numbers; recall quality is not measured here.

Measured per N (end to end from one client process, and the server's own time from
Server-Timing): p50/p95/p99 of /search and /v1/context for
- hot: the partition was loaded by earlier requests. Measured on one keep-alive
  connection (so one API process) after that process has read each partition of the
  class once; those first reads are printed apart ("first read in the process": from
  Redis where the warm-up loaded the partition in the other process, a cost per
  partition and process, not per request);
- cold: the first request after the relationship's ``tether:pv`` version token and
  ``tether:hot5`` blob were deleted, so it is served from Postgres (Postgres's own
  buffers stay warm: this is the partition store's cold path, not a cold disk). One at
  a time: after each, the bench waits for the background fill it started (its hot copy).
  Every cold request reads the rows for its query (decisions 0017, 0018); a large
  partition that was read before has a snapshot in Postgres (decision 0011), which the
  fill after the request reads, as after an eviction from Redis;
- cold after writes (large only): before each read, a write like an extraction's (three
  memories added at random places in the partition's time order, one superseded)
  committed straight to Postgres, so no writer rebuilds the snapshot: the background
  fill completes the snapshot with the memories written since it was built (decision
  0014), and stores it in its place once it records enough changes (decision 0027);
- cold from rows (large only): the snapshot deleted too, as for a partition that never
  had one or after more changes than a snapshot records: the fill reads every row;
- a cold-large burst: every large relationship invalidated at once, then read back to
  back at c=1, so each read competes with the fills the earlier ones started;
for small (5-50 memories) and large relationships; then /v1/context throughput at
``--concurrency`` on hot partitions, its connections spread over the API processes by
the kernel (one socket each, decision 0029; printed). Every answer is read: ``tier``
(in /search answers) verifies the classification and ``degraded`` reasons are counted;
the median ``timings_ms`` of 8 more requests show where the time goes. No Celery worker runs:
recalls queue their reinforcement tasks, which nothing executes.
Finally p95(N) / p95(smallest N) for every class (the cost should follow the partition,
not the total).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import random
import re
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import asyncpg
import httpx
import numpy as np
import numpy.typing as npt
import redis
from _harness import (
    MachineSpeed,
    MachineWaits,
    Run,
    api_server,
    hot_redis_url,
    load,
    post,
    seed,
    services,
    spread_of,
)
from pgvector.asyncpg import register_vector
from sqlalchemy import text

from tenancy.ids import RelationshipId, RelationshipScope
from tether.core.database import create_engine
from tether.core.ids import TenantId
from tether.core.settings import Settings
from tether.providers.offline import MODEL_DIMENSION, MODEL_NAME, OfflineEmbeddingProvider
from tether.recall.versions import partition_keys
from tether.recall.text import tokenize, warm_up
from tether.runtime.embedded_postgres import default_shared_buffers_mb

Vector = npt.NDArray[np.float32]
Pools = dict[tuple[str, int], Vector]

EN = {
    "p": "Alice Ben Chloe Daniel Emma Felix Grace Henry Isla Jack Kate Leo Mia Noah Olivia "
    "Paul Quinn Ruby Sam Tara Victor Wendy Xavier Yara Zoe Aaron Bella Carlos Diana Ethan",
    "place": "Paris,Tokyo,Berlin,Lisbon,Chengdu,Shanghai,Kyoto,Oslo,Toronto,Seattle,Prague,"
    "Vienna,Dublin,Madrid,Hanoi,Seoul,the night market,the old library,the climbing gym,"
    "the farmers market,grandma's village,the beach,the stadium,the bookstore",
    "food": "dumplings,ramen,sushi,tacos,pizza,hot pot,curry,pho,croissants,paella,kimchi,"
    "mapo tofu,fish and chips,falafel,mango sticky rice,lasagna,peking duck,bibimbap,"
    "cheese fondue,apple pie,oysters,peanuts,shrimp,strawberries",
    "hobby": "hiking,rock climbing,painting,chess,guitar,swimming,photography,yoga,knitting,"
    "gardening,piano,running,cycling,board games,bird watching,calligraphy,pottery,surfing",
    "job": "nurse,software engineer,teacher,architect,chef,designer,accountant,pilot,"
    "journalist,pharmacist,lawyer,barista,data analyst,electrician",
    "pet": "cat dog parrot rabbit hamster turtle",
    "month": "January February March April May June July August September October "
    "November December",
}
ZH = {
    "p": "小明 小红 张伟 王芳 李娜 刘洋 陈静 杨帆 赵磊 黄婷 周杰 吴敏 徐亮 孙悦 马超 朱琳 "
    "妈妈 爸爸 姐姐 弟弟 奶奶 表哥",
    "place": "北京 上海 成都 杭州 西安 重庆 厦门 大理 青岛 广州 深圳 苏州 南京 桂林 哈尔滨 "
    "三亚 老家 夜市 健身房",
    "food": "火锅 饺子 小笼包 烤鸭 麻辣烫 串串 螺蛳粉 煎饼果子 红烧肉 糖醋排骨 臭豆腐 "
    "兰州拉面 奶茶 月饼 粽子 海鲜 花生 芒果 榴莲 香菜",
    "hobby": "爬山 游泳 书法 下围棋 弹钢琴 画画 摄影 跑步 瑜伽 钓鱼 打羽毛球 骑自行车 "
    "养花 看电影 打篮球 唱卡拉OK 做烘焙",
    "job": "护士 程序员 老师 设计师 厨师 会计 医生 记者 律师 销售",
    "pet": "猫 狗 仓鼠 兔子 鹦鹉",
    "month": "1 2 3 4 5 6 7 8 9 10 11 12",
}
PET_NAMES = ["Mochi", "Biscuit", "Luna", "Pepper", "Tofu", "Coco", "Max", "Bean"]

# (memory_type, template); slots ending in 2 draw a second value of the same kind.
TEMPLATES = {
    "en": [
        ("preference", "{p} really loves {food}, especially the one near {place}."),
        ("preference", "I prefer {hobby} over {hobby2} on weekends."),
        ("fact", "I have been allergic to {food} since I was a kid."),
        ("fact", "{p}'s birthday is on {month} {day}."),
        ("fact", "I work as a {job} in {place}, for {years} years now."),
        ("fact", "My {pet} is called {name} and sleeps by the window."),
        ("event", "On {month} {day} I went to {place} with {p} and we had {food}."),
        ("event", "{p} started {hobby} lessons in {month} and already won a prize."),
        ("event", "We are planning a trip to {place} in {month} to try {food}."),
        ("commitment", "I promised {p} to go {hobby} together in {month}."),
    ],
    "zh": [
        ("preference", "{p}特别喜欢吃{food}，尤其是{place}那家。"),
        ("preference", "周末我更喜欢{hobby}，不太喜欢{hobby2}。"),
        ("fact", "我从小就对{food}过敏。"),
        ("fact", "{p}的生日是{month}月{day}日。"),
        ("fact", "我在{place}当{job}，已经{years}年了。"),
        ("fact", "我家的{pet}叫{name}，最喜欢晒太阳。"),
        ("event", "{month}月{day}日我和{p}去了{place}，吃了{food}。"),
        ("event", "{p}从{month}月开始学{hobby}，进步很快。"),
        ("event", "我们打算{month}月去{place}旅游，顺便尝尝{food}。"),
        ("commitment", "我答应了{p}{month}月一起去{hobby}。"),
    ],
}
QUERIES = {
    "en": [
        "what does {p} like to eat",
        "when is {p}'s birthday",
        "what am I allergic to",
        "trip to {place}",
        "do I still do {hobby}",
        "what is my job",
        "{food} with {p}",
        "what is my {pet} called",
    ],
    "zh": [
        "{p}喜欢吃什么",
        "{p}的生日是哪天",
        "我对什么过敏",
        "去{place}旅游",
        "{hobby}",
        "我是做什么工作的",
        "和{p}一起吃{food}",
        "我家{pet}叫什么",
    ],
}


def _words(vocabulary: dict[str, str]) -> dict[str, list[str]]:
    return {k: v.split(",") if "," in v else v.split() for k, v in vocabulary.items()}


WORDS = {"en": _words(EN), "zh": _words(ZH)}


def fill(template: str, language: str, rng: random.Random) -> str:
    words = WORDS[language]
    slots = {kind: rng.choice(values) for kind, values in words.items()}
    slots |= {"hobby2": rng.choice(words["hobby"]), "name": rng.choice(PET_NAMES)}
    slots |= {"day": str(rng.randint(1, 28)), "years": str(rng.randint(1, 20))}
    return template.format(**slots)


def relationship_sizes(
    n: int, large_size: int, large_share: float, rng: random.Random
) -> list[int]:
    """``n`` memories split into relationship sizes: a few of ``large_size``, the rest
    lognormal (median 15, clipped to 1..1000)."""
    large = max(1, round(n * large_share / large_size)) if n >= 2 * large_size else 0
    sizes, left = [large_size] * large, n - large * large_size
    while left > 0:
        size = min(left, max(1, min(1000, round(rng.lognormvariate(math.log(15), 0.9)))))
        sizes.append(size)
        left -= size
    rng.shuffle(sizes)
    return sizes


@dataclass
class Population:
    tenant_id: uuid.UUID
    ids: list[uuid.UUID]
    sizes: list[int]
    languages: list[str]

    def scope(self, index: int) -> RelationshipScope:
        return RelationshipScope(TenantId(self.tenant_id), RelationshipId(self.ids[index]))

    def pick(self, low: int, high: int, count: int, rng: random.Random) -> list[int]:
        """Indexes of up to ``count`` relationships with ``low <= size <= high``."""
        eligible = [i for i, s in enumerate(self.sizes) if low <= s <= high]
        return rng.sample(eligible, min(count, len(eligible)))


async def template_vectors(per_template: int, rng: random.Random) -> Pools:
    """Real embeddings of ``per_template`` sentences drawn from each template."""
    embedder = OfflineEmbeddingProvider()
    pools: Pools = {}
    for language, templates in TEMPLATES.items():
        for index, (_, template) in enumerate(templates):
            sentences = [fill(template, language, rng) for _ in range(per_template)]
            pools[(language, index)] = await embedder.embed(sentences)
    await embedder.aclose()
    return pools


COLUMNS = [
    "relationship_id",
    "id",
    "tenant_id",
    "memory_type",
    "layer",
    "polarity",
    "content",
    "tokens",
    "embedding",
    "embedding_model",
    "embedding_dim",
    "importance",
    "confidence",
    "occurred_at",
    "origin",
    "source_session_id",
]


@dataclass
class RowMaker:
    """Memory rows of one relationship, ready for COPY."""

    tenant_id: uuid.UUID
    pools: Pools | None  # None: random unit vectors
    rng: random.Random
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    token_cache: dict[str, list[str]] = field(default_factory=dict)

    def vector(self, language: str, index: int) -> Vector:
        if self.pools is None:
            raw = np.random.default_rng(self.rng.getrandbits(32)).standard_normal(MODEL_DIMENSION)
            return (raw / np.linalg.norm(raw)).astype(np.float32)
        pool = self.pools[(language, index)]
        return pool[self.rng.randrange(len(pool))]

    def tokens(self, content: str) -> list[str]:
        cached = self.token_cache.get(content)
        if cached is None:
            cached = tokenize(content)
            if len(self.token_cache) < 200_000:  # bounded: at 1M most texts are unique
                self.token_cache[content] = cached
        return cached

    def rows(self, rid: uuid.UUID, size: int, language: str) -> Iterator[tuple[object, ...]]:
        for k in range(size):
            # Mostly the relationship's language, sometimes the other one.
            lang = language if self.rng.random() < 0.9 else ("zh" if language == "en" else "en")
            index = self.rng.randrange(len(TEMPLATES[lang]))
            memory_type, template = TEMPLATES[lang][index]
            content = fill(template, lang, self.rng)
            age = timedelta(days=730 * (1 - (k + self.rng.random()) / size))
            yield (
                rid, uuid.uuid4(), self.tenant_id, memory_type, "semantic", "affirmed",
                content, self.tokens(content), self.vector(lang, index), MODEL_NAME,
                MODEL_DIMENSION, self.rng.uniform(0.2, 0.9), self.rng.uniform(0.6, 1.0),
                self.now - age, "manual", f"s-{k // 6}",
            )  # fmt: skip


def _interleaved(population: Population, maker: RowMaker) -> Iterator[tuple[object, ...]]:
    """Every relationship's rows, in one random order over all of them: as memories come
    in when every relationship writes now and then, so that a partition's rows are
    scattered over the table's pages, not stored side by side as a relationship's own
    import would store them. Each relationship's rows keep their order."""
    streams = [
        maker.rows(rid, size, language)
        for rid, size, language in zip(
            population.ids, population.sizes, population.languages, strict=True
        )
    ]
    turns = [i for i, size in enumerate(population.sizes) for _ in range(size)]
    maker.rng.shuffle(turns)
    for i in turns:
        yield next(streams[i])


def _grouped(population: Population, maker: RowMaker) -> Iterator[tuple[object, ...]]:
    for rid, size, language in zip(
        population.ids, population.sizes, population.languages, strict=True
    ):
        yield from maker.rows(rid, size, language)


# How bulk_import orders the rows it copies (--layout).
LAYOUTS: dict[str, Callable[[Population, RowMaker], Iterator[tuple[object, ...]]]] = {
    "interleaved": _interleaved,
    "grouped": _grouped,
}


async def bulk_import(
    settings: Settings,
    population: Population,
    maker: RowMaker,
    chunk: int = 20_000,
    layout: str = "interleaved",
) -> tuple[float, float]:
    """COPY every memory into Postgres; returns (seconds generating, seconds copying).
    ``layout``: a key of ``LAYOUTS``: "grouped" (each relationship's rows side by side)
    or "interleaved" (:func:`_interleaved`)."""
    generating = copying = 0.0
    # VACUUM of a million memories outlasts the service's statement timeout.
    unlimited = settings.db.model_copy(update={"statement_timeout_seconds": 0})
    engine = create_engine(settings.model_copy(update={"db": unlimited}))
    async with engine.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        await register_vector(raw)
        rows = LAYOUTS[layout](population, maker)
        while True:
            started = time.perf_counter()
            batch = list(itertools.islice(rows, chunk))
            generating += time.perf_counter() - started
            if not batch:
                break
            started = time.perf_counter()
            await raw.copy_records_to_table("memories", records=batch, columns=COLUMNS)
            copying += time.perf_counter() - started
        started = time.perf_counter()
        # VACUUM as well: otherwise autovacuum processes the freshly loaded partitions
        # (and the first reads set their hint bits) while the classes are measured. A
        # table in service is in the vacuumed state, not the just-loaded one.
        await raw.execute("VACUUM (ANALYZE) memories")
        # And the load's dirty pages written now, not by a checkpoint spread over the
        # first minutes of measurement.
        await raw.execute("CHECKPOINT")
        copying += time.perf_counter() - started
    await engine.dispose()
    return generating, copying


# The memories table's partitions and every index on them.
_MEMORY_RELATIONS = """
SELECT relid FROM pg_partition_tree('memories') WHERE isleaf
UNION ALL
SELECT indexrelid FROM pg_index
WHERE indrelid IN (SELECT relid FROM pg_partition_tree('memories') WHERE isleaf)
"""


async def prewarm(database_url: str) -> int:
    """Read the memories table and its indexes into Postgres's buffer pool; returns the
    blocks read. A page a cold read touches first is otherwise copied from the OS cache,
    at ~20 µs each on this machine, and a 5,000-memory read touches 2,000-7,000 (see
    docs/benchmarks.md#recall-buffers)."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        relations = [row[0] for row in await connection.fetch(_MEMORY_RELATIONS)]
        blocks = await connection.fetchval(
            "SELECT sum(pg_prewarm(r)) FROM unnest($1::regclass[]) r", relations
        )
        return int(blocks or 0)
    finally:
        await connection.close()


# What Postgres does in the background that a class could run into.
_BACKGROUND_LOG = re.compile(r"automatic (vacuum|analyze) of table|checkpoint (starting|complete)")


async def log_background_work(database_url: str) -> str:
    """Have Postgres log its autovacuum runs and checkpoints; returns its log file."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("ALTER SYSTEM SET log_autovacuum_min_duration = 0")
        await connection.execute("ALTER SYSTEM SET log_checkpoints = on")
        await connection.execute("SELECT pg_reload_conf()")
        return str(await connection.fetchval("SHOW data_directory")) + "/log"
    finally:
        await connection.close()


def background_work(log_file: str, since: str) -> list[str]:
    """The autovacuum runs and checkpoints logged from ``since`` (UTC, "HH:MM:SS") on,
    each as its time and what it did."""
    lines = []
    with open(log_file, errors="replace") as log:
        for line in log:
            if _BACKGROUND_LOG.search(line) and line[11:19] >= since:
                what = line.split("LOG:", 1)[-1].strip()
                lines.append(f"{line[11:19]} {what[:160]}")
    return lines


async def pool_in_use(database_url: str) -> str:
    """How much of Postgres's buffer pool holds pages, and how much of memories."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("CREATE EXTENSION IF NOT EXISTS pg_buffercache")
        used, total = await connection.fetchrow(
            "SELECT buffers_used, buffers_used + buffers_unused FROM pg_buffercache_summary()"
        )
        relations = [row[0] for row in await connection.fetch(_MEMORY_RELATIONS)]
        held = await connection.fetchval(
            "SELECT count(*) FROM pg_buffercache WHERE relfilenode = ANY("
            "SELECT pg_relation_filenode(r) FROM unnest($1::regclass[]) r)",
            relations,
        )
        # Whether the pool is on huge pages (docs/scaling.md): 4 kB pages make a read
        # over a large pool walk page tables, slowly so on a virtual machine.
        huge = await connection.fetchval("SHOW huge_pages_status")
        return (
            f"Postgres buffer pool: {used * 8 / 1024:,.0f} of {total * 8 / 1024:,.0f} MB in use,"
            f" {held * 8 / 1024:,.0f} MB of them memories and its indexes; huge pages {huge}"
        )
    finally:
        await connection.close()


async def relationships(settings: Settings) -> tuple[uuid.UUID, list[uuid.UUID]]:
    engine = create_engine(settings)
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT tenant_id, id FROM relationships"))).all()
    await engine.dispose()
    return rows[0][0], sorted(r[1] for r in rows)


def query(language: str, rng: random.Random) -> str:
    return fill(rng.choice(QUERIES[language]), language, rng)


def search_body(population: Population, i: int, rng: random.Random) -> tuple[str, bytes]:
    body = {"query": query(population.languages[i], rng), "k": 5}
    return f"/v1/relationships/{population.ids[i]}/search", json.dumps(body).encode()


def context_body(population: Population, i: int, rng: random.Random) -> tuple[str, bytes]:
    body = {
        "relationship_id": str(population.ids[i]),
        "query": query(population.languages[i], rng),
        "recent_turns": 0,
    }
    return "/v1/context", json.dumps(body).encode()


BODIES = {"search": search_body, "context": context_body}


async def _drop_snapshot(database_url: str, relationship_id: uuid.UUID) -> None:
    """Delete the snapshot, first waiting (up to 10 s) for the one the previous read's
    background fill stores, so it does not land after the delete."""
    connection = await asyncpg.connect(database_url)
    query = "SELECT count(*) FROM recall_snapshots WHERE relationship_id = $1"
    try:
        deadline = time.monotonic() + 10
        while not await connection.fetchval(query, relationship_id):
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.01)
        await connection.execute(
            "DELETE FROM recall_snapshots WHERE relationship_id = $1", relationship_id
        )
    finally:
        await connection.close()


async def _write_like_extraction(
    database_url: str, rows: list[tuple[object, ...]], relationship_id: uuid.UUID
) -> None:
    """Add ``rows`` and supersede one active memory by the first, in one transaction
    (what an extraction commits), without telling the API (so nothing is rebuilt)."""
    connection = await asyncpg.connect(database_url)
    try:
        await register_vector(connection)
        async with connection.transaction():
            await connection.copy_records_to_table("memories", records=rows, columns=COLUMNS)
            await connection.execute(
                "UPDATE memories SET is_active = false, superseded_by = $2 "
                "WHERE relationship_id = $1 AND id = (SELECT id FROM memories "
                "WHERE relationship_id = $1 AND is_active AND id <> ALL($3) LIMIT 1)",
                relationship_id,
                rows[0][1],
                [row[1] for row in rows],
            )
    finally:
        await connection.close()


def invalidate(client: redis.Redis, population: Population, indexes: list[int]) -> None:
    """Delete the version tokens and hot blobs: the next read of each is cold."""
    client.delete(*(key for i in indexes for key in partition_keys(population.scope(i))))


def unfilled(client: redis.Redis, population: Population, indexes: list[int]) -> list[int]:
    """The partitions of ``indexes`` without a Redis copy."""
    return [i for i in indexes if not client.exists(partition_keys(population.scope(i))[1])]


def settle(client: redis.Redis, population: Population, indexes: list[int]) -> None:
    """Wait (up to 10 s) until the background fills the cold reads of ``indexes`` started
    have stored their hot copies, so one round's fills do not run into the next round."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not unfilled(client, population, indexes):
            return
        time.sleep(0.01)


_LENGTH = re.compile(rb"content-length: (\d+)", re.IGNORECASE)
_TIMING = re.compile(rb"server-timing: app;dur=([0-9.]+)", re.IGNORECASE)
_TIER = re.compile(rb'"tier":"([a-z]+)"')
_DEGRADED = re.compile(rb'"degraded":\[([^\]]*)\]')
_TIMINGS = re.compile(rb'"timings_ms":(\{[^}]*\})')
# The answers slower than this keep their timings_ms, printed with the class.
SLOW_MS = 60.0


@dataclass
class Seen:
    """A load run plus what every answer said: its tier (/search) and what degraded."""

    run: Run = field(default_factory=Run)
    tiers: Counter[str] = field(default_factory=Counter)
    degraded: Counter[str] = field(default_factory=Counter)
    slow: list[tuple[float, float, str]] = field(default_factory=list)  # ms, time(), timings
    began: float = field(default_factory=time.time)  # time(), printed as the class start
    ended: float = 0.0

    def note(self, body: bytes, latency_ms: float = 0.0) -> None:
        if latency_ms > SLOW_MS and (timings := _TIMINGS.search(body)):
            self.slow.append((latency_ms, time.time(), timings.group(1).decode()))
        if tier := _TIER.search(body):
            self.tiers[tier.group(1).decode()] += 1
        if (reasons := _DEGRADED.search(body)) and reasons.group(1):
            self.degraded.update(r.strip('"') for r in reasons.group(1).decode().split(","))

    def absorb(self, other: Seen) -> None:
        self.run.latencies_ms += other.run.latencies_ms
        self.run.server_ms += other.run.server_ms
        self.run.seconds += other.run.seconds
        self.run.statuses.update(Counter(self.run.statuses) + Counter(other.run.statuses))
        self.tiers += other.tiers
        self.degraded += other.degraded
        self.slow += other.slow
        self.began = min(self.began, other.began)
        self.ended = max(self.ended, other.ended)

    def summary(self, name: str) -> str:
        tiers = dict(self.tiers) or "n/a (context answers carry none)"
        slowest = "".join(
            f"\n    slower than {SLOW_MS:.0f} ms: {ms:.1f} at "
            f"{datetime.fromtimestamp(at, UTC):%H:%M:%S}, {_machine(at - 1, at)} {timings}"
            for ms, at, timings in sorted(self.slow, reverse=True)[:3]
        )
        began = datetime.fromtimestamp(self.began, UTC)
        return (
            f"{self.run.summary(name)}\n    from {began:%H:%M:%S} "
            f"tiers={tiers} degraded={dict(self.degraded)}; "
            f"{_machine(self.began, self.ended or time.time())}{slowest}"
        )


# What the machine waited for, and how fast it ran a fixed piece of work, sampled
# during the run (main() starts both).
WAITS: MachineWaits | None = None
SPEED: MachineSpeed | None = None


def _machine(since: float, until: float) -> str:
    """What the machine did between two time()s: see MachineWaits and MachineSpeed."""
    if WAITS is None or SPEED is None:
        return "machine not sampled"
    return f"{WAITS.during(since, until)}; {SPEED.slowdown(since, until)}"


async def _client(port: int, next_request: Callable[[], tuple[bytes, Seen] | None]) -> None:
    # The harness's load() discards bodies; this one reads tier and degraded from each.
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while (next_one := next_request()) is not None:
            request, seen = next_one
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = _LENGTH.search(head)
            body = await reader.readexactly(int(length.group(1)) if length else 0)
            seen.run.latencies_ms.append((time.perf_counter() - started) * 1000)
            status = int(head[9:12])
            seen.run.statuses[status] = seen.run.statuses.get(status, 0) + 1
            if timing := _TIMING.search(head):
                seen.run.server_ms.append(float(timing.group(1)))
            seen.note(body, seen.run.latencies_ms[-1])
    finally:
        writer.close()


def load_seen(
    port: int,
    requests: list[bytes],
    concurrency: int,
    seconds: float = 0,
    first: tuple[int, Seen] | None = None,
) -> Seen:
    """Like the harness's load(): each request once, or cycled for ``seconds`` when > 0.
    ``first``: how many of the first requests to record apart, and where."""
    seen, index = Seen(), 0
    deadline = time.monotonic() + seconds

    def next_request() -> tuple[bytes, Seen] | None:
        nonlocal index
        if (seconds <= 0 and index >= len(requests)) or (seconds and time.monotonic() > deadline):
            return None
        index += 1
        apart = first is not None and index <= first[0]
        return requests[(index - 1) % len(requests)], first[1] if first and apart else seen

    async def main() -> None:
        clients = (_client(port, next_request) for _ in range(concurrency))
        await asyncio.gather(*clients, *([spread_of(port, seen.run)] if seconds else []))

    started = time.perf_counter()
    asyncio.run(main())
    seen.run.seconds = time.perf_counter() - started
    seen.ended = time.time()
    return seen


@dataclass
class Bench:
    port: int
    token: str
    population: Population
    redis_client: redis.Redis  # the hot tier's Redis (version tokens, copies)
    rng: random.Random
    database_url: str
    maker: RowMaker

    def requests(self, endpoint: str, indexes: list[int], count: int) -> list[bytes]:
        make = BODIES[endpoint]
        chosen = [indexes[j % len(indexes)] for j in range(count)]
        bodies = (make(self.population, i, self.rng) for i in chosen)
        return [post(path, self.token, body) for path, body in bodies]

    def warm(self, endpoint: str, indexes: list[int]) -> None:
        """Load every partition of ``indexes`` into both tiers (and, likely, every worker),
        and wait until the background fills those first reads started are done. A process
        with ``FILLS_AT_ONCE + FILLS_WAITING`` fills pending starts no more, so a burst of
        cold reads can leave partitions unfilled (7 of 50 large ones at 1M in one run):
        those are read again, so that the hot classes measure hot partitions."""
        load(self.port, self.requests(endpoint, indexes, 3 * len(indexes)), 8)
        settle(self.redis_client, self.population, indexes)
        for _ in range(3):
            if not (missing := unfilled(self.redis_client, self.population, indexes)):
                return
            load(self.port, self.requests(endpoint, missing, len(missing)), 1)
            settle(self.redis_client, self.population, missing)

    def hot(self, endpoint: str, indexes: list[int], count: int) -> tuple[Seen, Seen]:
        """``count`` requests at c=1 on one connection, so one API process, after that
        process has read each partition once (returned apart: from Redis if the
        warm-up loaded it in the other process, else from its own copy)."""
        self.warm(endpoint, indexes)
        first = Seen()
        once = self.requests(endpoint, indexes, len(indexes))
        measured = load_seen(
            self.port, once + self.requests(endpoint, indexes, count), 1, 0, (len(once), first)
        )
        first.run.seconds = sum(first.run.latencies_ms) / 1000  # back to back, at c=1
        measured.run.seconds -= first.run.seconds
        first.began, first.ended = measured.began, measured.began + first.run.seconds
        measured.began = first.ended
        return measured, first

    def cold(self, endpoint: str, indexes: list[int], count: int, before: str = "") -> Seen:
        """One cold read at a time, each after the previous one's background fill is done
        (``burst`` measures them back to back). ``before`` each read: "writes" (three
        memories added, one superseded) or "drop" (the snapshot deleted)."""
        seen = Seen()
        for j in range(count):
            i = indexes[j % len(indexes)]
            self.make_cold(i, before)
            seen.absorb(load_seen(self.port, self.requests(endpoint, [i], 1), 1))
            settle(self.redis_client, self.population, [i])
        return seen

    def make_cold(self, i: int, before: str) -> None:
        """Relationship ``i`` out of the hot tiers, after ``before`` (see ``cold``)."""
        rid = self.population.ids[i]
        if before == "writes":
            rows = list(self.maker.rows(rid, 3, self.population.languages[i]))
            asyncio.run(_write_like_extraction(self.database_url, rows, rid))
        invalidate(self.redis_client, self.population, [i])
        if before == "drop":
            asyncio.run(_drop_snapshot(self.database_url, rid))

    def burst(self, endpoint: str, indexes: list[int]) -> Seen:
        """Every partition of ``indexes`` cold at once, then read back to back at c=1: each
        read competes with the background fills the earlier ones started."""
        invalidate(self.redis_client, self.population, indexes)
        seen = load_seen(self.port, self.requests(endpoint, indexes, len(indexes)), 1)
        settle(self.redis_client, self.population, indexes)
        return seen

    def throughput(self, indexes: list[int], concurrency: int, seconds: float) -> Seen:
        self.warm("context", indexes)
        requests = self.requests("context", indexes, 5_000)
        return load_seen(self.port, requests, concurrency, seconds)

    def timings(self, endpoint: str, indexes: list[int], cold: bool, before: str = "") -> str:
        """Median timings_ms of a few requests (cumulative from the start of each step);
        ``cold``: each made cold first, after ``before`` (see ``cold``)."""
        timings: dict[str, list[float]] = {}
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        url = f"http://127.0.0.1:{self.port}"
        with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
            for i in (indexes[j % len(indexes)] for j in range(8)):
                if cold:
                    self.make_cold(i, before)
                path, body = BODIES[endpoint](self.population, i, self.rng)
                answer = client.post(path, content=body).raise_for_status().json()
                if cold:
                    settle(self.redis_client, self.population, [i])
                for key, value in answer["timings_ms"].items():
                    timings.setdefault(key, []).append(value)
        medians = " ".join(f"{k}={statistics.median(v):.1f}" for k, v in timings.items())
        return f"    timings_ms median of 8: {medians}"


def populate(
    database_url: str,
    redis_url: str,
    n: int,
    pools: Pools | None,
    rng: random.Random,
    layout: str = "interleaved",
) -> tuple[str, Population, RowMaker]:
    """``n`` memories with the default skew (a quarter of them in 5,000-memory
    relationships), imported in bulk: for the benchmarks that compare settings or trees
    on one database. Returns the API key's token, the population and its row maker."""
    sizes = relationship_sizes(n, 5_000, 0.25, rng)
    settings = Settings(database_url=database_url, redis_url=redis_url)
    token = asyncio.run(seed(database_url, redis_url, len(sizes), min(100, len(sizes))))
    tenant_id, ids = asyncio.run(relationships(settings))
    population = Population(tenant_id, ids, sizes, [rng.choice(("en", "zh")) for _ in ids])
    maker = RowMaker(tenant_id, pools, rng)
    asyncio.run(bulk_import(settings, population, maker, layout=layout))
    return token, population, maker


def run_scale(n: int, args: argparse.Namespace, pools: Pools | None) -> dict[str, float]:
    """Load ``n`` memories, measure; returns p95 (end to end) per class."""
    rng = random.Random(n)
    sizes = relationship_sizes(n, args.large_size, args.large_share, rng)
    p95: dict[str, float] = {}
    with services(args.shared_buffers_mb) as (database_url, redis_url):
        settings = Settings(database_url=database_url, redis_url=redis_url)
        log_file = asyncio.run(log_background_work(database_url))
        started = time.perf_counter()
        token = asyncio.run(seed(database_url, redis_url, len(sizes), min(100, len(sizes))))
        tenant_id, ids = asyncio.run(relationships(settings))
        languages = [rng.choice(("en", "zh")) for _ in ids]
        population = Population(tenant_id, ids, sizes, languages)
        maker = RowMaker(tenant_id, pools, rng)
        generating, copying = asyncio.run(
            bulk_import(settings, population, maker, layout=args.layout)
        )
        large = sum(1 for s in sizes if s == args.large_size)
        pool = asyncio.run(pool_in_use(database_url))
        if args.postgres_buffers == "warm":
            blocks = asyncio.run(prewarm(database_url))
            pool += f"\n# prewarmed {blocks * 8 / 1024:,.0f} MB, then: "
            pool += asyncio.run(pool_in_use(database_url))
        print(
            f"\n## N={n:,} memories in {len(sizes):,} relationships ({large} with "
            f"{args.large_size:,}, median {statistics.median(sizes):.0f}, "
            f"{sum(5 <= s <= 50 for s in sizes) / len(sizes):.0%} with 5-50); loaded in "
            f"{time.perf_counter() - started:.1f} s (generate+tokenize {generating:.1f} s, "
            f"COPY+VACUUM+CHECKPOINT {copying:.1f} s); load average {os.getloadavg()[0]:.1f}"
            f" on {os.cpu_count()} CPUs (other processes share them)\n# after the load: {pool}"
        )
        # As production connects: row-level security, and the plans made under it.
        with api_server(database_url, redis_url, args.workers, app_role=True) as port:
            client = redis.Redis.from_url(hot_redis_url())  # the hot tier's
            bench = Bench(port, token, population, client, rng, database_url, maker)
            measuring = datetime.now(UTC).strftime("%H:%M:%S")
            p95 |= measure(bench, args)
        for line in background_work(log_file, measuring):
            print(f"# postgres in the background at {line}")
        print(f"# after the classes: {asyncio.run(pool_in_use(database_url))}")
    return p95


def measure(bench: Bench, args: argparse.Namespace) -> dict[str, float]:
    """Every latency class at c=1, then throughput; returns p95 (end to end) per class."""
    rng, population = bench.rng, bench.population
    small = population.pick(5, 50, args.small, rng)
    large = population.pick(args.large_size, args.large_size, args.small, rng)
    hot_small, cold_small = small[: len(small) // 2], small[len(small) // 2 :]
    sets = {("hot", "small"): hot_small, ("cold", "small"): cold_small}
    sets |= {("hot", "large"): large, ("cold", "large"): large}
    counts = {"hot": args.requests, "cold": args.cold_requests}
    p95: dict[str, float] = {}
    for endpoint in BODIES:
        for (temperature, size), indexes in sets.items():
            name = f"{endpoint} {temperature}-{size}"
            if temperature == "hot":
                measured, first = bench.hot(endpoint, indexes, counts["hot"])
                print(first.summary(f"{endpoint} {size}, first read in the process"))
            else:
                count = args.cold_large_requests if size == "large" else counts["cold"]
                measured = bench.cold(endpoint, indexes, count)
            p95[name] = measured.run.pct(measured.run.latencies_ms, 0.95)
            print(measured.summary(name))
            print(bench.timings(endpoint, indexes, temperature == "cold"))
        for before, label in (("writes", "after writes"), ("drop", "from rows")):
            measured = bench.cold(endpoint, large, args.cold_large_requests, before)
            name = f"{endpoint} cold-large {label}"
            p95[name] = measured.run.pct(measured.run.latencies_ms, 0.95)
            print(measured.summary(name))
            print(bench.timings(endpoint, large, True, before))
        burst = bench.burst(endpoint, large)
        print(burst.summary(f"{endpoint} cold-large burst of {len(large)}"))
    for size, indexes in (("small", hot_small), ("large", large)):
        measured = bench.throughput(indexes, args.concurrency, args.seconds)
        print(measured.summary(f"context hot-{size} throughput (c={args.concurrency})"))
    return p95


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", default="10000,100000", help="comma-separated N")
    parser.add_argument("--large-size", type=int, default=5_000)
    parser.add_argument("--large-share", type=float, default=0.25, help="of N, in large ones")
    parser.add_argument("--small", type=int, default=300, help="small relationships sampled")
    parser.add_argument("--requests", type=int, default=400, help="per latency class")
    parser.add_argument("--cold-requests", type=int, default=150, help="per cold class")
    parser.add_argument("--cold-large-requests", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=10, help="per throughput run")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--vectors", choices=("template", "random"), default="template")
    parser.add_argument(
        "--local-megabytes",
        type=int,
        default=2048,
        help="TETHER_RECALL__LOCAL_MEGABYTES of the API processes: the 50 large partitions "
        "at 1M take ≈ 850 MB in a process, more than the default 384 (sized for the "
        "chart's 1 GiB container)",
    )
    parser.add_argument(
        "--shared-buffers-mb",
        type=int,
        default=None,
        help="Postgres's buffer pool (default: the embedded runtime's, a quarter of memory)",
    )
    parser.add_argument(
        "--postgres-buffers",
        choices=("warm", "as-loaded"),
        default="warm",
        help="warm: the memories table and its indexes read into Postgres's buffer pool "
        "after the load (pg_prewarm), as in a database in service; as-loaded: the pool "
        "as the bulk load leaves it",
    )
    parser.add_argument(
        "--layout",
        choices=tuple(LAYOUTS),
        default="interleaved",
        help="interleaved: the relationships' rows in one random order, scattered over the "
        "table as memories written over time are; grouped: each relationship's side by side",
    )
    args = parser.parse_args()
    scales = [int(n) for n in args.memories.split(",")]
    os.environ["TETHER_RECALL__LOCAL_MEGABYTES"] = str(args.local_megabytes)
    warm_up()
    rng = random.Random(1)
    pools = asyncio.run(template_vectors(64, rng)) if args.vectors == "template" else None
    print(
        f"# {args.workers} API processes (a socket each) as tether_app (row-level security), "
        "vectors: "
        + ("real USE-m embeddings of 64 sentences per template" if pools else "random unit")
        + f"; latency classes at c=1, {args.requests} requests each; 1 client process"
        + f"; Postgres shared_buffers {args.shared_buffers_mb or default_shared_buffers_mb()} MB"
        + f" ({args.postgres_buffers}); rows {args.layout}"
        + f"; process copies up to {args.local_megabytes} MB"
    )
    global WAITS, SPEED
    WAITS, SPEED = MachineWaits(), MachineSpeed()
    try:
        results = {n: run_scale(n, args, pools) for n in scales}
    finally:
        WAITS.stop()
        SPEED.stop()
    base = scales[0]
    print(f"\n## p95 end to end (ms) and ratio to N={base:,}")
    for name in results[base]:
        cells = "  ".join(
            f"{n:>9,}: {results[n][name]:6.2f} ({results[n][name] / results[base][name]:.2f}x)"
            for n in scales
            if name in results[n]
        )
        print(f"{name:22} {cells}")


if __name__ == "__main__":
    main()
