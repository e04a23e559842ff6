"""The ranking view of a set of memories (a relationship's partition, a knowledge base):
built once, ranked many times.

Everything the ranker reads per query sits in numpy arrays aligned with the documents, so
ranking is a handful of vector operations whatever the partition size; the Python-level
work (BM25 postings, stacking vectors, ordering groups) happens here, once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from tether.recall.bm25 import Bm25Index, Bm25Params
from tether.recall.weights import RankWeights

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class RankDoc:
    """What the ranker needs to know about one memory.

    ``tokens`` are the stored output of :func:`tether.recall.text.tokenize`; ``vector`` is
    a unit-length embedding, or None while it is not computed yet. ``importance`` and
    ``confidence`` are in [0, 1]; ``strength`` is 1 for a new memory and grows as recalls
    reinforce it. Datetimes are timezone-aware. ``group`` and ``ordinal`` place the
    memory in the conversation it came from (a session and the turn order within it).
    """

    key: int
    tokens: Sequence[str]
    vector: npt.NDArray[np.float32] | None
    importance: float
    confidence: float
    strength: float
    occurred_at: datetime
    last_recalled_at: datetime | None
    group: str | None = None
    ordinal: int | None = None


@dataclass(frozen=True, slots=True)
class PartitionIndex:
    """The ranking view of a partition; immutable, shareable between concurrent requests.

    Attributes:
        keys: ``RankDoc.key`` of each row.
        bm25: the lexical index.
        matrix: stacked vectors (zero rows where a memory has none), or None when no
            memory has one.
        has_vector: which rows hold a real vector.
        importance, confidence, strength: per-row quality signals.
        reference_time: POSIX seconds of the later of occurred_at and last_recalled_at
            (a recall restarts the forgetting curve).
        neighbours: row numbers of the neighbours in the same group, shape
            ``(n, 2 * window)``: columns ``2(d-1)`` and ``2(d-1)+1`` are the previous and
            next memory ``d`` steps away; ``n`` (one past the last row) where there is none.
    """

    keys: npt.NDArray[np.int64]
    bm25: Bm25Index
    matrix: npt.NDArray[np.float32] | None
    has_vector: npt.NDArray[np.bool_]
    importance: FloatArray
    confidence: FloatArray
    strength: FloatArray
    reference_time: FloatArray
    neighbours: npt.NDArray[np.intp]

    @property
    def size(self) -> int:
        """How many memories the partition holds."""
        return len(self.keys)

    @classmethod
    def build(
        cls, docs: Sequence[RankDoc], weights: RankWeights, bm25: Bm25Index | None = None
    ) -> PartitionIndex:
        """Prepare ``docs`` for ranking.

        Args:
            docs: the partition's memories, in any order.
            weights: supplies the BM25 parameters and the neighbour window.
            bm25: an index already built over the same docs, in the same order, to reuse
                when only recall statistics changed.
        """
        if bm25 is None:
            params = Bm25Params(k1=weights.bm25_k1, b=weights.bm25_b)
            bm25 = Bm25Index.build([doc.tokens for doc in docs], params)
        matrix, has_vector = _stack_vectors(docs)
        ordinals = [doc.ordinal if doc.ordinal is not None else -1 for doc in docs]
        groups = [doc.group if doc.ordinal is not None else None for doc in docs]
        return cls(
            keys=np.fromiter((doc.key for doc in docs), np.int64, len(docs)),
            bm25=bm25,
            matrix=matrix,
            has_vector=has_vector,
            importance=_floats((doc.importance for doc in docs), len(docs)),
            confidence=_floats((doc.confidence for doc in docs), len(docs)),
            strength=_floats((doc.strength for doc in docs), len(docs)),
            reference_time=_floats((_reference_time(doc) for doc in docs), len(docs)),
            neighbours=neighbour_table(
                groups, np.asarray(ordinals, dtype=np.int64), weights.neighbour_window
            ),
        )


def _floats(values: Iterable[float], size: int) -> FloatArray:
    return np.fromiter(values, np.float64, size)


def _reference_time(doc: RankDoc) -> float:
    recalled = doc.last_recalled_at
    moment = recalled if recalled is not None and recalled > doc.occurred_at else doc.occurred_at
    return moment.timestamp()


def _stack_vectors(
    docs: Sequence[RankDoc],
) -> tuple[npt.NDArray[np.float32] | None, npt.NDArray[np.bool_]]:
    has_vector = np.array([doc.vector is not None for doc in docs], dtype=np.bool_)
    first = next((doc.vector for doc in docs if doc.vector is not None), None)
    if first is None:
        return None, has_vector
    matrix = np.zeros((len(docs), first.shape[-1]), dtype=np.float32)
    for row, doc in enumerate(docs):
        if doc.vector is not None:
            matrix[row] = doc.vector
    return matrix, has_vector


def neighbour_table(
    groups: Sequence[str | None], ordinals: npt.NDArray[np.int64], window: int
) -> npt.NDArray[np.intp]:
    """Neighbours by ordinal within each group; rows without a group have none."""
    size = len(groups)
    table = np.full((size, 2 * window), size, dtype=np.intp)
    if size == 0 or window == 0:
        return table
    # Numbered by C-level passes (a cold read of a large partition builds this table).
    codes_by_group = {g: i for i, g in enumerate(dict.fromkeys(groups))}
    codes = np.fromiter(map(codes_by_group.__getitem__, groups), np.int64, size)
    if None in codes_by_group:
        codes[codes == codes_by_group[None]] = -1
    # Rows sorted by (group, ordinal, row): a group's members are consecutive, in order.
    order = np.lexsort((np.arange(size), ordinals, codes))
    sorted_codes = codes[order]
    for distance in range(1, window + 1):
        same = (sorted_codes[distance:] == sorted_codes[:-distance]) & (
            sorted_codes[distance:] >= 0
        )
        later, earlier = order[distance:][same], order[:-distance][same]
        table[later, 2 * distance - 2] = earlier
        table[earlier, 2 * distance - 1] = later
    return table
