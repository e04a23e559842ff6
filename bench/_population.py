"""The memories the recall benches load: synthetic English and Chinese sentences from
templates over a shared vocabulary (people, places, foods, hobbies, dates), spread over
relationships with a skew (a few large ones, the rest lognormal: median 15, most 5-50),
imported with COPY straight into ``memories`` in one random order over all
relationships, so a relationship's rows are scattered over the table's pages as memories
written over time are (decision 0022). Each relationship mostly speaks one language;
queries come from the same vocabulary. Tokens are the real tokenizer's; vectors are real
offline embeddings of a pool of sentences per template (``template_vectors``), given to
each memory by its template (latency does not depend on what they mean: ranking is an
exact scan over the partition's vectors)."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np
import numpy.typing as npt
import redis
from _harness import seed
from pgvector.asyncpg import register_vector
from sqlalchemy import text

from tenancy.ids import RelationshipId, RelationshipScope
from tether.core.database import create_engine
from tether.core.ids import TenantId
from tether.core.settings import Settings
from tether.providers.offline import MODEL_DIMENSION, MODEL_NAME, OfflineEmbeddingProvider
from tether.recall.text import tokenize

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


async def bulk_import(
    settings: Settings,
    population: Population,
    maker: RowMaker,
    chunk: int = 20_000,
) -> tuple[float, float]:
    """COPY every memory into Postgres, relationships interleaved (decision 0022);
    returns (seconds generating, seconds copying)."""
    generating = copying = 0.0
    # VACUUM of a million memories outlasts the service's statement timeout.
    unlimited = settings.db.model_copy(update={"statement_timeout_seconds": 0})
    engine = create_engine(settings.model_copy(update={"db": unlimited}))
    async with engine.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        await register_vector(raw)
        rows = _interleaved(population, maker)
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


def _base(population: Population, index: int) -> str:
    scope = population.scope(index)
    return f"{scope.tenant_id}:{scope.relationship_id}"


def invalidate(client: redis.Redis, population: Population, indexes: list[int]) -> None:
    """Delete the version tokens and Redis copies: the next read of each is cold. Matched
    by pattern, so that the copies of a release with another format go too (ab.py)."""
    for i in indexes:
        if found := client.keys(f"tether:*:{_base(population, i)}"):
            client.delete(*found)


def unfilled(client: redis.Redis, population: Population, indexes: list[int]) -> list[int]:
    """The partitions of ``indexes`` without a Redis copy (of any format)."""
    return [i for i in indexes if not client.keys(f"tether:hot*:{_base(population, i)}")]


def settle(client: redis.Redis, population: Population, indexes: list[int]) -> None:
    """Wait (up to 10 s) until the background fills the cold reads of ``indexes`` started
    have stored their hot copies, so one round's fills do not run into the next round."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not unfilled(client, population, indexes):
            return
        time.sleep(0.01)


def populate(
    database_url: str, redis_url: str, sizes: list[int], pools: Pools | None, rng: random.Random
) -> tuple[str, Population, RowMaker]:
    """Relationships of ``sizes`` memories, imported in bulk, the memories table then
    read into Postgres's buffer pool (as in a database in service; a page read in from
    the OS cache costs ~20 µs here, decision 0025). Returns a gateway key's token, the
    population and its row maker."""
    settings = Settings(database_url=database_url, redis_url=redis_url)
    token = asyncio.run(seed(database_url, redis_url, len(sizes), min(100, len(sizes))))
    tenant_id, ids = asyncio.run(relationships(settings))
    population = Population(tenant_id, ids, sizes, [rng.choice(("en", "zh")) for _ in ids])
    maker = RowMaker(tenant_id, pools, rng)
    asyncio.run(bulk_import(settings, population, maker))
    asyncio.run(prewarm(database_url))
    return token, population, maker
