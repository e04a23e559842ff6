"""Rank one partition for a query: fused relevance, neighbour context, time and quality.

``final = (fused + neighbour_boost) * period * decay * importance * confidence`` where
``fused`` is the weighted mean of scaled BM25 and scaled cosine (see ``fusion.py``),
``period`` is ``1 + period_boost`` for a memory that occurred within the period the query
names ("in May 2023", 上个月; ``period.py``) and 1 otherwise, and the last three factors
have floors (see ``decay.py``). ``query_vector=None`` (embedding provider down)
ranks by BM25 alone; the caller reports the degraded mode. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from tether.recall.decay import quality_factor, time_factor
from tether.recall.fusion import (
    best_neighbour,
    fuse,
    neighbour_boost,
    reciprocal_rank_fusion,
    scaled_lexical,
    scaled_similarity,
)
from tether.recall.index import PartitionIndex
from tether.recall.weights import RankWeights

FloatArray = npt.NDArray[np.float64]
# When no memory is relevant to a query, at most this many of the nearest memories by
# cosine are returned instead of nothing: "What is my job?" shares no word with "The
# user works as a nurse" and may fall under the similarity floor, yet a plain question
# should get the closest evidence there is (decision 0054).
NEAREST_WHEN_NONE_RELEVANT = 5


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a memory ranked where it did.

    Ranks are 1-based among memories with a lexical match (resp. a vector); None when the
    memory had none. ``rrf_score`` is the (weighted, scaled to [0, 1]) Reciprocal Rank
    Fusion of the two rankings, always reported; ``fused_score`` is the relevance the
    configured fusion gave (the RRF score itself when ``fusion`` is ``rrf``), in [0, 1];
    ``neighbour_boost`` what it borrowed from ``neighbour_key``; ``period``, ``decay``,
    ``importance`` and ``confidence`` are the factors applied; ``final_score`` the
    product that ordered the results.
    """

    lexical_rank: int | None
    lexical_score: float | None
    vector_rank: int | None
    vector_similarity: float | None
    rrf_score: float
    fused_score: float
    neighbour_boost: float
    neighbour_key: int | None
    decay: float
    importance: float
    confidence: float
    final_score: float
    # False for the nearest memories returned only because none was relevant (0054).
    relevant: bool = True
    # 1 + period_boost when the query named a period the memory occurred in, else 1.
    period: float = 1.0


@dataclass(frozen=True, slots=True)
class _Signals:
    lexical: npt.NDArray[np.float32]
    similarity: npt.NDArray[np.float32] | None
    relevant: npt.NDArray[np.bool_]
    fused: FloatArray
    boost: FloatArray
    period: FloatArray
    decay: FloatArray
    importance: FloatArray
    confidence: FloatArray
    final: FloatArray
    lending: FloatArray  # the relevance a row lends its neighbours


def rank(
    query_tokens: Sequence[str],
    query_vector: npt.NDArray[np.float32] | None,
    index: PartitionIndex,
    k: int,
    now: datetime,
    weights: RankWeights,
    *,
    similarity: npt.NDArray[np.float32] | None = None,
    allowed: npt.NDArray[np.bool_] | None = None,
    in_period: npt.NDArray[np.bool_] | None = None,
) -> list[tuple[int, Explanation]]:
    """The top ``k`` memories of the partition as ``(key, explanation)``, best first.

    A memory is returned if it is relevant itself (a lexical match, or a cosine
    similarity of at least ``weights.min_similarity``) or next to one that is. When none
    is, the nearest allowed memories with a vector are returned, by cosine, at most
    ``NEAREST_WHEN_NONE_RELEVANT`` of them (none without a query vector).
    Ties keep partition order, so results are deterministic.

    ``similarity``: the query's cosine to each row, when it was computed elsewhere
    (pgvector, for a partition loaded without its vectors); ``query_vector`` is then
    unused. ``allowed``: rows the caller may receive; the others are neither returned
    nor lend relevance to their neighbours. ``in_period``: rows that occurred within the
    period the query names (None: it names none); they rank ``1 + period_boost`` times
    higher, which makes no memory relevant that is not.
    """
    if index.size == 0 or k <= 0:
        return []
    signals = _signals(
        query_tokens, query_vector, index, now, weights, similarity, allowed, in_period
    )
    candidates = signals.relevant | (signals.boost > 0.0)
    if allowed is not None:
        candidates &= allowed
    rows = _top(signals.final, candidates, k)
    if rows.size == 0 and signals.similarity is not None:
        nearest = index.has_vector if allowed is None else index.has_vector & allowed
        by_cosine = signals.similarity.astype(np.float64)
        rows = _top(by_cosine, nearest, min(k, NEAREST_WHEN_NONE_RELEVANT))
    return [(int(index.keys[row]), _explain(int(row), signals, index, weights)) for row in rows]


def _signals(
    query_tokens: Sequence[str],
    query_vector: npt.NDArray[np.float32] | None,
    index: PartitionIndex,
    now: datetime,
    weights: RankWeights,
    precomputed: npt.NDArray[np.float32] | None,
    allowed: npt.NDArray[np.bool_] | None,
    in_period: npt.NDArray[np.bool_] | None,
) -> _Signals:
    lexical = index.bm25.scores(query_tokens)
    if precomputed is not None:
        similarity = precomputed if weights.vector_weight != 0.0 else None
    else:
        similarity = _similarity(query_vector, index, weights)
    scaled = None if similarity is None else scaled_similarity(similarity, index.has_vector)
    relevant = lexical > 0.0
    if similarity is not None:
        relevant = relevant | (index.has_vector & (similarity >= weights.min_similarity))
    if weights.fusion == "rrf":
        fused = reciprocal_rank_fusion(lexical, similarity, index.has_vector, weights)
    else:  # the explanation derives each hit's RRF score from its two ranks
        fused = fuse(scaled_lexical(lexical), scaled, weights)
    # Only a memory that is relevant itself lends relevance to its neighbours.
    # Only a memory the caller may receive lends relevance to its neighbours: a private
    # note must not surface (nor be named in an explanation) through its neighbour.
    lenders = relevant if allowed is None else relevant & allowed
    lending = fused * lenders
    boost = neighbour_boost(lending, index.neighbours, weights.neighbour_weight)
    decay = time_factor(index.reference_time, index.strength, now.timestamp(), weights)
    importance = quality_factor(index.importance, weights.importance_floor)
    confidence = quality_factor(index.confidence, weights.confidence_floor)
    period = np.ones(index.size, dtype=np.float64)
    if in_period is not None and weights.period_boost > 0.0:
        period[in_period] += weights.period_boost
    final = (fused + boost) * period * decay * importance * confidence
    return _Signals(
        lexical,
        similarity,
        relevant,
        fused,
        boost,
        period,
        decay,
        importance,
        confidence,
        final,
        lending,
    )


def _similarity(
    query_vector: npt.NDArray[np.float32] | None, index: PartitionIndex, weights: RankWeights
) -> npt.NDArray[np.float32] | None:
    if query_vector is None or index.matrix is None or weights.vector_weight == 0.0:
        return None
    query = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(query))
    if norm == 0.0:
        return None
    similarity: npt.NDArray[np.float32] = index.matrix @ (query / norm)
    return similarity


def _top(final: FloatArray, eligible: npt.NDArray[np.bool_], k: int) -> npt.NDArray[np.intp]:
    """Rows of the ``k`` best eligible scores, best first, ties by row; O(n) selection."""
    rows = np.flatnonzero(eligible)
    if rows.size > k:
        scores = final[rows]
        kth = np.partition(scores, rows.size - k)[rows.size - k]
        above = rows[scores > kth]
        tied = rows[scores == kth][: k - above.size]
        rows = np.concatenate((above, tied))
    ordered: npt.NDArray[np.intp] = rows[np.lexsort((rows, -final[rows]))]
    return ordered


def rrf_of(
    lexical_rank: int | None, vector_rank: int | None, with_vectors: bool, weights: RankWeights
) -> float:
    """One memory's weighted RRF score from its two ranks, scaled like
    ``reciprocal_rank_fusion`` (a rank of None contributes nothing)."""
    k = float(weights.rrf_k)
    total = weights.lexical_weight / (k + 1)
    score = 0.0 if lexical_rank is None else weights.lexical_weight / (k + lexical_rank)
    if with_vectors and weights.vector_weight > 0:
        total += weights.vector_weight / (k + 1)
        if vector_rank is not None:
            score += weights.vector_weight / (k + vector_rank)
    return score / total


def _explain(
    row: int, signals: _Signals, index: PartitionIndex, weights: RankWeights
) -> Explanation:
    lexical = float(signals.lexical[row])
    lexical_rank = 1 + int(np.count_nonzero(signals.lexical > lexical)) if lexical > 0 else None
    vector_rank, similarity = None, None
    if signals.similarity is not None and index.has_vector[row]:
        similarity = float(signals.similarity[row])
        present = signals.similarity[index.has_vector]
        vector_rank = 1 + int(np.count_nonzero(present > similarity))
    neighbour = None
    if signals.boost[row] > 0.0:
        found = best_neighbour(row, signals.lending, index.neighbours, weights.neighbour_weight)
        neighbour = None if found is None else int(index.keys[found])
    return Explanation(
        lexical_rank=lexical_rank,
        lexical_score=lexical if lexical > 0 else None,
        vector_rank=vector_rank,
        vector_similarity=similarity,
        rrf_score=rrf_of(lexical_rank, vector_rank, signals.similarity is not None, weights),
        fused_score=float(signals.fused[row]),
        neighbour_boost=float(signals.boost[row]),
        neighbour_key=neighbour,
        decay=float(signals.decay[row]),
        importance=float(signals.importance[row]),
        confidence=float(signals.confidence[row]),
        final_score=float(signals.final[row]),
        relevant=bool(signals.relevant[row] or signals.boost[row] > 0.0),
        period=float(signals.period[row]),
    )
