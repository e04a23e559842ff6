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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class Bm25Parts:
    """A built index's arrays: ``terms`` in term-id order, the postings (document and
    weight), and how many documents it indexes."""

    terms: list[str]
    offsets: npt.NDArray[np.int64]
    docs: npt.NDArray[np.int32]
    weights: npt.NDArray[np.float32]
    size: int


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
        lengths = np.fromiter(map(len, docs_tokens), np.int64, len(docs_tokens))
        flat = [term for tokens in docs_tokens for term in tokens]
        return cls.build_flat(flat, lengths, params)

    @classmethod
    def build_flat(
        cls, tokens: Sequence[str], lengths: npt.NDArray[np.int64], params: Bm25Params
    ) -> Bm25Index:
        """Index documents given as one token sequence: document ``i`` is the next
        ``lengths[i]`` tokens."""
        if int(lengths.sum()) != len(tokens):
            raise ValueError("the lengths do not add up to the tokens")
        # Terms are numbered in order of first appearance by C-level passes; counting
        # and sorting happen in numpy (a cold 5,000-memory partition is indexed on the
        # request path).
        vocabulary = {term: i for i, term in enumerate(dict.fromkeys(tokens))}
        terms_per_token = np.fromiter(map(vocabulary.__getitem__, tokens), np.int64, len(tokens))
        docs_per_token = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        terms, docs, counts = _postings(terms_per_token, docs_per_token, len(lengths))
        return cls._indexed(vocabulary, terms, docs, counts, lengths, params)

    @classmethod
    def for_query(
        cls,
        lengths: npt.NDArray[np.int64],
        rows: npt.NDArray[np.intp],
        rows_tokens: Sequence[Sequence[str]],
        query_tokens: Sequence[str],
        params: Bm25Params,
    ) -> Bm25Index:
        """The index of a query's terms alone, over documents of ``lengths`` tokens, given
        the tokens of only the documents that may hold one of them (document ``rows[i]``
        holds ``rows_tokens[i]``; every document holding a query term among them). Its
        scores for any query made of ``query_tokens`` equal those of the index of every
        document, bit for bit: a term's postings, document frequency and weights depend
        on the documents that hold it and on the lengths alone. Other terms score
        nothing: it serves that query only."""
        wanted = set(query_tokens)
        kept = [[t for t in tokens if t in wanted] for tokens in rows_tokens]
        flat = [term for tokens in kept for term in tokens]
        vocabulary = {term: i for i, term in enumerate(dict.fromkeys(flat))}
        terms_per_token = np.fromiter(map(vocabulary.__getitem__, flat), np.int64, len(flat))
        docs_per_token = np.repeat(rows.astype(np.int64), [len(tokens) for tokens in kept])
        terms, docs, counts = _postings(terms_per_token, docs_per_token, len(lengths))
        return cls._indexed(vocabulary, terms, docs, counts, lengths, params)

    @classmethod
    def _indexed(
        cls,
        vocabulary: dict[str, int],
        terms: npt.NDArray[np.int64],
        docs: npt.NDArray[np.int64],
        counts: npt.NDArray[np.int64],
        lengths: npt.NDArray[np.int64],
        params: Bm25Params,
    ) -> Bm25Index:
        """The index of postings sorted by (term, document), one per pair."""
        weights = _weights(terms, docs, counts, lengths, params)
        offsets = np.zeros(len(vocabulary) + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=len(vocabulary)), out=offsets[1:])
        return cls(vocabulary, offsets, docs.astype(np.int32), weights, len(lengths))

    @property
    def nbytes(self) -> int:
        """An estimate of the bytes it holds: its arrays, and ≈ 120 per vocabulary term
        (the string and its dictionary entry)."""
        arrays = (self._offsets, self._docs, self._weights)
        return sum(a.nbytes for a in arrays) + 120 * len(self._vocabulary)

    def parts(self) -> Bm25Parts:
        """The index as plain arrays (for the hot tier), rebuilt by :meth:`from_parts`."""
        return Bm25Parts(
            list(self._vocabulary), self._offsets, self._docs, self._weights, self.size
        )

    @classmethod
    def from_parts(cls, parts: Bm25Parts) -> Bm25Index:
        vocabulary = {term: i for i, term in enumerate(parts.terms)}
        return cls(vocabulary, parts.offsets, parts.docs, parts.weights, parts.size)

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


Postings = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]


def _postings(
    terms_per_token: npt.NDArray[np.int64], docs_per_token: npt.NDArray[np.int64], size: int
) -> Postings:
    """(term, document, count) per distinct pair of the tokens, sorted by term then
    document."""
    width = max(size, 1)
    pairs, counts = np.unique(terms_per_token * width + docs_per_token, return_counts=True)
    return pairs // width, pairs % width, counts.astype(np.int64)


def _weights(
    terms: npt.NDArray[np.int64],
    docs: npt.NDArray[np.int64],
    term_counts: npt.NDArray[np.int64],
    document_lengths: npt.NDArray[np.int64],
    params: Bm25Params,
) -> npt.NDArray[np.float32]:
    counts = term_counts.astype(np.float64)
    lengths = document_lengths.astype(np.float64)
    size = len(lengths)
    document_frequency = np.bincount(terms).astype(np.float64)
    idf = np.log1p((size - document_frequency + 0.5) / (document_frequency + 0.5))
    average = float(lengths.mean()) if size and lengths.sum() else 1.0
    norm = params.k1 * (1.0 - params.b + params.b * lengths[docs] / average)
    return (idf[terms] * counts * (params.k1 + 1.0) / (counts + norm)).astype(np.float32)
