"""The pieces of a base's in-memory view: source labels, vector decoding, the LRU."""

from __future__ import annotations

import struct
import uuid

import numpy as np

from tether.knowledge.builtin import knowledge_weights
from tether.knowledge.index_cache import ChunkRecord, _Lru, _vector
from tether.recall.weights import RankWeights


def record(page: int | None = None, section: str | None = None) -> ChunkRecord:
    return ChunkRecord.of(uuid.uuid4(), uuid.uuid4(), "manual.pdf", page, section, "text")


def test_sources_cite_the_page_or_the_section() -> None:
    assert record(page=12).source == "manual.pdf#page=12"
    assert record(section="Setup").source == "manual.pdf#Setup"
    assert record().source == "manual.pdf"


def test_pgvector_binary_vectors_decode() -> None:
    values = [0.25, -1.5, 3.0]
    raw = struct.pack(">hh3f", 3, 0, *values)
    assert np.array_equal(_vector(raw), np.array(values, dtype=np.float32))
    assert _vector(None) is None


def test_the_lru_drops_the_least_recently_used_past_its_weight() -> None:
    lru: _Lru[str, int] = _Lru(limit=10)
    lru.put("a", 1, 4)
    lru.put("b", 2, 4)
    assert lru.get("a") == 1  # "b" is now the least recently used
    lru.put("c", 3, 4)
    assert (lru.get("a"), lru.get("b"), lru.get("c")) == (1, None, 3)
    lru.put("huge", 4, 50)  # one entry over the limit on its own is still kept
    assert lru.get("huge") == 4
    assert lru.get("a") is None


def test_documents_rank_without_decay_or_neighbours() -> None:
    weights = knowledge_weights(RankWeights())
    assert (weights.decay_floor, weights.neighbour_weight) == (1.0, 0.0)
    assert weights.vector_weight == RankWeights().vector_weight
