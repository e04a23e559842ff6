"""Every number the ranker uses, with its default and what it does.

The values come from settings (``TETHER_RECALL__...``); the defaults are the ones measured
on LoCoMo and argued for in docs/decisions/0007-bm25-and-fusion.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tether.core.settings import Settings


@dataclass(frozen=True, slots=True)
class RankWeights:
    """How lexical, vector, neighbour, time and quality signals combine into one score.

    Attributes:
        fusion: how the lexical and vector rankings combine: ``score`` (weighted scaled
            scores, the default, measured better on LoCoMo) or ``rrf`` (weighted
            Reciprocal Rank Fusion). Both are reported in every explanation.
        rrf_k: the RRF constant: a memory at rank r contributes ``weight / (rrf_k + r)``.
        min_similarity: the raw cosine a memory without a lexical match needs to count as
            relevant (USE-multilingual puts unrelated sentences mostly below 0.3).
        bm25_k1: BM25 term-frequency saturation (applied when a partition is indexed).
        bm25_b: BM25 document-length normalisation (applied when a partition is indexed).
        lexical_weight: share of the BM25 score (divided by the partition's best) in the
            fused relevance.
        vector_weight: share of the cosine similarity (min-max scaled over the partition)
            in the fused relevance. Lexical 2 : vector 1 because the offline embedding
            (USE-multilingual) is the weaker signal on chat turns; 0 disables vectors.
        neighbour_weight: a memory gains ``neighbour_weight ** d`` times the relevance of
            its best neighbour ``d`` steps away in the same group (session), for every
            ``d`` up to ``neighbour_window``: the answer to a question usually sits next
            to the turn that matches it. 0 disables it.
        neighbour_window: how many steps on each side the spreading reaches.
        period_boost: a memory that occurred within the period a query names ("in May
            2023", "last month", 上个月; ``period.py``) ranks ``1 + period_boost`` times
            higher (decision 0091). 0 disables it.
        decay_half_life_days: the age (since the memory happened or was last recalled) at
            which retention halves for a memory of strength 1; strength multiplies it.
        decay_floor: the smallest time factor: an old memory keeps at least this share of
            its relevance, so a strong old match still beats a weak fresh one. 1 disables
            time decay.
        importance_floor: time-independent factor ``floor + (1 - floor) * importance``.
        confidence_floor: factor ``floor + (1 - floor) * confidence`` (uncertain, e.g.
            inferred, memories rank lower but are never hidden).
    """

    fusion: Literal["score", "rrf"] = "score"
    rrf_k: int = 60
    min_similarity: float = 0.3
    bm25_k1: float = 0.9
    bm25_b: float = 0.4
    lexical_weight: float = 1.0
    vector_weight: float = 0.5
    neighbour_weight: float = 0.6
    neighbour_window: int = 2
    period_boost: float = 1.0
    decay_half_life_days: float = 90.0
    decay_floor: float = 0.7
    importance_floor: float = 0.6
    confidence_floor: float = 0.7

    def __post_init__(self) -> None:
        for name in ("decay_floor", "importance_floor", "confidence_floor", "neighbour_weight"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within [0, 1]")
        if self.lexical_weight < 0 or self.vector_weight < 0:
            raise ValueError("fusion weights must be non-negative")
        if self.lexical_weight + self.vector_weight == 0:
            raise ValueError("at least one fusion weight must be positive")
        if self.period_boost < 0:
            raise ValueError("period_boost must be non-negative")
        if self.rrf_k < 1:
            raise ValueError("rrf_k must be at least 1")
        if self.decay_half_life_days <= 0 or self.neighbour_window < 0:
            raise ValueError("decay_half_life_days must be positive, neighbour_window >= 0")


def rank_weights(settings: Settings) -> RankWeights:
    """The weights ``settings`` configure (``TETHER_RECALL__...``)."""
    r = settings.recall
    return RankWeights(
        fusion=r.fusion,
        rrf_k=r.rrf_k,
        min_similarity=r.min_similarity,
        bm25_k1=r.bm25_k1,
        bm25_b=r.bm25_b,
        lexical_weight=r.lexical_weight,
        vector_weight=r.vector_weight,
        neighbour_weight=r.neighbour_weight,
        neighbour_window=r.neighbour_window,
        period_boost=r.period_boost,
        decay_half_life_days=r.decay_half_life_days,
        decay_floor=r.decay_floor,
        importance_floor=r.importance_floor,
        confidence_floor=r.confidence_floor,
    )
