"""What decision 0054 adds to the hot path of a search, measured in process (no server):

- ``expand``: the query expansion, per query;
- ``rank``: ranking one partition of N memories for a query, with the query's own tokens
  and with the expanded ones (more BM25 terms), and a query nothing is relevant to
  (the nearest-memories fallback).

    .venv/bin/python bench/plain_questions.py [N]      # N memories (default 2000)
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import numpy as np

from tether.recall.expansion import expand
from tether.recall.index import PartitionIndex, RankDoc
from tether.recall.ranker import rank
from tether.recall.text import tokenize
from tether.recall.weights import RankWeights

QUERIES = [
    "What is my job?",
    "what should I drink?",
    "Can I eat peanut butter?",
    "我是做什么工作的？",
    "我该喝点什么？",
    "我能吃花生酱吗？",
    "What did I paint lately?",
    "她还吃辣吗？",
]
WORDS = [
    "user",
    "likes",
    "tea",
    "coffee",
    "works",
    "nurse",
    "hospital",
    "dog",
    "cat",
    "trip",
    "paris",
    "painting",
    "喜欢",
    "绿茶",
    "咖啡",
    "护士",
    "医院",
    "狗",
    "猫",
    "旅行",
    "画画",
    "过敏",
    "花生",
    "工作",
    "住在",
    "深圳",
    "spicy",
    "辣",
    "family",
    "妈妈",
    "sister",
    "music",
    "音乐",
]
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _timed(run: Callable[[], object], repeat: int) -> float:
    """Median microseconds of one call."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1e6)
    return statistics.median(samples)


def _partition(size: int, weights: RankWeights) -> PartitionIndex:
    rng = random.Random(7)
    vectors = np.random.default_rng(7).normal(size=(size, 512)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    docs = [
        RankDoc(
            i,
            tokenize(" ".join(rng.choices(WORDS, k=8))),
            vectors[i],
            0.5,
            0.85,
            1.0,
            NOW - timedelta(days=rng.randint(0, 400)),
            None,
        )
        for i in range(size)
    ]
    return PartitionIndex.build(docs, weights)


def main() -> None:
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    weights = RankWeights()
    index = _partition(size, weights)
    vector = np.random.default_rng(1).normal(size=512).astype(np.float32)
    vector /= np.linalg.norm(vector)
    plain = [tokenize(q) for q in QUERIES]
    expanded = [expand(t) for t in plain]
    per_expand = _timed(lambda: [expand(t) for t in plain], 2000) / len(plain)
    print(f"expand: {per_expand:.1f} µs per query")
    for name, tokens in (("own tokens", plain), ("expanded", expanded)):
        cost = _timed(lambda t=tokens: [rank(q, vector, index, 10, NOW, weights) for q in t], 50)
        print(f"rank {size} memories, {name}: {cost / len(QUERIES):.0f} µs per query")
    strict = RankWeights(min_similarity=0.99)
    fallback = _timed(lambda: rank(["zzz"], vector, index, 10, NOW, strict), 50)
    print(f"rank {size} memories, nothing relevant (nearest-memories fallback): {fallback:.0f} µs")


if __name__ == "__main__":
    main()
