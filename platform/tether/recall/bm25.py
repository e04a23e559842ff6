"""Exact Okapi BM25 over one partition, built once and scored many times.

The index is a compressed inverted file in three numpy arrays: for every term, the
documents that hold it and that posting's precomputed BM25 weight
``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))``. Scoring a query is one
slice-and-add per distinct query term, so it costs what the query's postings cost, not
the partition size (0007 has the numbers against rank-bm25).

IDF is the non-negative form ``ln(1 + (N - n + 0.5) / (n + 0.5))``: in a two-person chat
a name appears in half the turns, and the classic Okapi IDF would make it worth zero or
less (rank-bm25 patches that with an epsilon floor).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class Bm25Params:
    """``k1``: term-frequency saturation; ``b``: document-length normalisation.

    The defaults suit short documents such as chat turns (see 0007); ``RankWeights``
    carries the configured values.
    """

    k1: float = 0.9
    b: float = 0.4


class Bm25Index:
    """One partition's BM25 postings; immutable once built, safe to share across requests."""

    __slots__ = ("_docs", "_offsets", "_vocabulary", "_weights", "size")

    def __init__(
        self,
        vocabulary: dict[str, int],
        offsets: npt.NDArray[np.int64],
        docs: npt.NDArray[np.int32],
        weights: npt.NDArray[np.float32],
        size: int,
    ) -> None:
        self._vocabulary = vocabulary
        self._offsets = offsets
        self._docs = docs
        self._weights = weights
        self.size = size

    @classmethod
    def build(
        cls, docs_tokens: Sequence[Sequence[str]], params: Bm25Params = Bm25Params()
    ) -> Bm25Index:
        """Index pre-tokenized documents; row ``i`` of every score vector is ``docs_tokens[i]``."""
        vocabulary: dict[str, int] = {}
        term_ids: list[int] = []
        doc_ids: list[int] = []
        counts: list[int] = []
        for doc_id, tokens in enumerate(docs_tokens):
            for term, count in Counter(tokens).items():
                term_ids.append(vocabulary.setdefault(term, len(vocabulary)))
                doc_ids.append(doc_id)
                counts.append(count)
        size = len(docs_tokens)
        lengths = np.fromiter((len(tokens) for tokens in docs_tokens), np.float64, size)
        terms = np.asarray(term_ids, dtype=np.int64)
        postings_docs = np.asarray(doc_ids, dtype=np.int32)
        weights = _weights(terms, postings_docs, np.asarray(counts, np.float64), lengths, params)
        order = np.argsort(terms, kind="stable")
        offsets = np.zeros(len(vocabulary) + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=len(vocabulary)), out=offsets[1:])
        return cls(vocabulary, offsets, postings_docs[order], weights[order], size)

    def scores(self, query_tokens: Sequence[str]) -> npt.NDArray[np.float32]:
        """BM25 score of every document (0 where no query term occurs).

        Each distinct query term counts once: a repeated word in a chat message is
        emphasis, not a second concept.
        """
        scores = np.zeros(self.size, dtype=np.float32)
        for term in dict.fromkeys(query_tokens):
            term_id = self._vocabulary.get(term)
            if term_id is not None:
                start, end = self._offsets[term_id], self._offsets[term_id + 1]
                scores[self._docs[start:end]] += self._weights[start:end]
        return scores


def _weights(
    terms: npt.NDArray[np.int64],
    docs: npt.NDArray[np.int32],
    counts: npt.NDArray[np.float64],
    lengths: npt.NDArray[np.float64],
    params: Bm25Params,
) -> npt.NDArray[np.float32]:
    size = len(lengths)
    document_frequency = np.bincount(terms).astype(np.float64)
    idf = np.log1p((size - document_frequency + 0.5) / (document_frequency + 0.5))
    average = float(lengths.mean()) if size and lengths.sum() else 1.0
    norm = params.k1 * (1.0 - params.b + params.b * lengths[docs] / average)
    return (idf[terms] * counts * (params.k1 + 1.0) / (counts + norm)).astype(np.float32)
