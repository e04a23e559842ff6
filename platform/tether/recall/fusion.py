"""Relevance: BM25 and cosine similarity fused by score, then spread to neighbouring turns.

Both signals are scaled to [0, 1] per query before they are weighted: BM25 divided by the
partition's best score, cosine min-max scaled over the memories that have a vector. Score
fusion keeps how much better the best match is, which rank fusion (RRF) throws away; the
LoCoMo numbers behind this choice are in docs/decisions/0007-bm25-and-fusion.md.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tether.recall.weights import RankWeights

FloatArray = npt.NDArray[np.float64]


def scaled_lexical(scores: npt.NDArray[np.float32]) -> FloatArray:
    """BM25 scores divided by the best one; all zeros when nothing matched."""
    best = float(scores.max(initial=0.0))
    if best <= 0.0:
        return np.zeros(len(scores), dtype=np.float64)
    return scores.astype(np.float64) / best


def scaled_similarity(
    similarity: npt.NDArray[np.float32], has_vector: npt.NDArray[np.bool_]
) -> FloatArray:
    """Cosine min-max scaled over the rows that have a vector; 0 for the others.

    Scaling makes the weight mean the same thing for any embedding model, whose cosine
    ranges differ (USE-multilingual spreads over [-0.2, 0.8], e5 bunches in [0.7, 0.9]).
    """
    scaled = np.zeros(len(similarity), dtype=np.float64)
    present = similarity[has_vector].astype(np.float64)
    if present.size == 0:
        return scaled
    low, high = float(present.min()), float(present.max())
    scaled[has_vector] = (present - low) / (high - low) if high > low else 1.0
    return scaled


def fuse(lexical: FloatArray, vector: FloatArray | None, weights: RankWeights) -> FloatArray:
    """Weighted mean of the scaled signals, in [0, 1]; lexical alone when ``vector`` is None."""
    if vector is None or weights.vector_weight == 0.0:
        return lexical
    if weights.lexical_weight == 0.0:
        return vector
    total = weights.lexical_weight + weights.vector_weight
    fused: FloatArray = (weights.lexical_weight * lexical + weights.vector_weight * vector) / total
    return fused


def _ranks(
    scores: npt.NDArray[np.float32] | FloatArray, present: npt.NDArray[np.bool_]
) -> FloatArray:
    """1-based competition ranks among ``present`` rows (best = 1); inf elsewhere."""
    ranks = np.full(len(scores), np.inf, dtype=np.float64)
    values = np.asarray(scores, dtype=np.float64)[present]
    if values.size:
        ascending = np.sort(values)
        # rank = 1 + how many present rows score strictly higher
        higher = values.size - np.searchsorted(ascending, values, side="right")
        ranks[present] = 1 + higher
    return ranks


def reciprocal_rank_fusion(
    lexical: npt.NDArray[np.float32],
    similarity: npt.NDArray[np.float32] | None,
    has_vector: npt.NDArray[np.bool_],
    weights: RankWeights,
) -> FloatArray:
    """Weighted RRF of the lexical ranking (memories with a BM25 match) and the vector
    ranking, divided by its largest possible value so it lies in [0, 1] like ``fuse``."""
    k = float(weights.rrf_k)
    lexical_weight = weights.lexical_weight
    total = lexical_weight / (k + 1)
    fused = lexical_weight / (k + _ranks(lexical, lexical > 0))
    if similarity is not None and weights.vector_weight > 0:
        fused = fused + weights.vector_weight / (k + _ranks(similarity, has_vector))
        total += weights.vector_weight / (k + 1)
    scaled: FloatArray = fused / total
    return scaled


def neighbour_boost(
    relevance: FloatArray, neighbours: npt.NDArray[np.intp], weight: float
) -> FloatArray:
    """What each memory gains from the best neighbour at each distance in its group.

    ``neighbours`` uses ``len(relevance)`` for "no neighbour", which indexes the zero
    appended here, so missing neighbours need no masking.
    """
    boost = np.zeros(len(relevance), dtype=np.float64)
    if weight == 0.0 or neighbours.shape[1] == 0:
        return boost
    padded = np.append(relevance, 0.0)
    for distance in range(1, neighbours.shape[1] // 2 + 1):
        pair = padded[neighbours[:, 2 * distance - 2 : 2 * distance]]
        boost += weight**distance * pair.max(axis=1)
    return boost


def best_neighbour(
    row: int, relevance: FloatArray, neighbours: npt.NDArray[np.intp], weight: float
) -> int | None:
    """The neighbour row that contributed most to ``row``'s boost (for the explanation)."""
    best: tuple[float, int] | None = None
    for column, neighbour in enumerate(neighbours[row]):
        if neighbour < len(relevance):
            contribution = weight ** (column // 2 + 1) * float(relevance[neighbour])
            if contribution > 0 and (best is None or contribution > best[0]):
                best = (contribution, int(neighbour))
    return None if best is None else best[1]
