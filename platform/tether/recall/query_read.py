"""A cold read for one query (decision 0017): what ranking needs of every memory of a
partition, without the texts, which are read afterwards for the memories it returns.

A request that finds a partition in no tier ranks it from ``wire.QUERY_ROW``s (each
memory's generated ``query_row`` and its pgvector distance, decision 0018): ids,
distances, statistics, times, kinds and layers as codes, token counts; and sessions, and
the tokens of only the memories that hold a query term. Its BM25 index holds the
query's terms alone and scores them exactly as the index of every term does
(``Bm25Index.for_query``), so it ranks exactly as the partition's other reads do, for
that query only. Such a partition is never kept, stored or used for another query: the
background fill reads the whole partition.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from tether.memories.enums import MemoryLayer, MemoryType
from tether.recall import wire
from tether.recall.bm25 import Bm25Index, Bm25Params
from tether.recall.loaded import (
    NEVER_EXPIRES,
    FloatArray,
    LoadedPartition,
    Vector,
    ranking_index,
    seconds,
    similarity_of,
)
from tether.recall.partition import PartitionIndex, neighbour_table

# A memory's kind and layer travel as 1 + their position here (0: any other value).
MEMORY_TYPES = tuple(MemoryType)
MEMORY_LAYERS = tuple(MemoryLayer)
_SUMMARY = 1 + MEMORY_TYPES.index(MemoryType.SUMMARY)


def _codes(values: Sequence[str], known: Sequence[str]) -> list[int]:
    """The codes of ``values``; a value not in ``known`` has none (no row holds it)."""
    return [1 + known.index(value) for value in values if value in known]


@dataclass(frozen=True, slots=True)
class QueryPartition:
    """A partition read to rank ``terms``: every ranking column of ``LoadedPartition``,
    each memory's id, kind and layer instead of its record, and the moment it was read
    at (its texts are read as of the same moment)."""

    index: PartitionIndex
    keys: bytes  # 16 bytes per row: the memories' ids
    kinds: npt.NDArray[np.int16]
    layers: npt.NDArray[np.int16]
    occurred: npt.NDArray[np.int64]  # microseconds since 1970
    expires_at: FloatArray  # POSIX seconds, inf for never
    private: npt.NDArray[np.bool_]
    similarity: Vector | None
    version: str
    terms: tuple[str, ...]
    read_at: datetime
    source: str = "cold"

    def key(self, row: int) -> bytes:
        return self.keys[16 * row : 16 * row + 16]

    def memory_id(self, row: int) -> uuid.UUID:
        return uuid.UUID(bytes=self.key(row))

    def allowed(
        self, types: Sequence[str] | None, layers: Sequence[str] | None
    ) -> npt.NDArray[np.bool_] | None:
        """Rows of one of ``types`` and ``layers`` (None: no filter)."""
        if types is None and layers is None:
            return None
        allowed = np.ones(len(self.kinds), np.bool_)
        if types is not None:
            allowed &= np.isin(self.kinds, _codes(types, MEMORY_TYPES))
        if layers is not None:
            allowed &= np.isin(self.layers, _codes(layers, MEMORY_LAYERS))
        return allowed

    def latest_visible_summary(self, visible: npt.NDArray[np.bool_]) -> int | None:
        """The row of the newest summary among ``visible`` rows."""
        return _latest_summary(self.kinds, self.occurred, visible)


# What PartitionStore.load returns for a request to rank.
RankedPartition: TypeAlias = LoadedPartition | QueryPartition


def _latest_summary(
    kinds: npt.NDArray[np.int16], occurred: npt.NDArray[np.int64], among: npt.NDArray[np.bool_]
) -> int | None:
    """The row of the newest summary ``among`` those rows (the first of equals, as
    ``LoadedPartition`` finds it)."""
    rows = np.flatnonzero(among & (kinds == _SUMMARY))
    if len(rows) == 0:
        return None
    return int(rows[np.argmax(occurred[rows])])


@dataclass(frozen=True, slots=True)
class QueryRead:
    """How a reader builds a ``QueryPartition``: its BM25 parameters and neighbour window."""

    params: Bm25Params
    window: int

    def partition(
        self,
        values: Sequence[Any],
        terms: tuple[str, ...],
        version: str,
        read_at: datetime,
        has_query: bool,
    ) -> QueryPartition:
        """The partition ``wire.for_query`` sent as ``values``, for ``terms``."""
        rows = np.frombuffer(values[0] or b"", dtype=wire.QUERY_ROW)
        sessions, tokens = list(values[1] or ()), list(values[2] or ())
        if len(sessions) != len(rows) or len(tokens) != len(rows):
            raise ValueError("the arrays read are not those of the rows")
        # A memory's tokens are sent if it holds a query word; NULL (None) otherwise.
        matched = np.flatnonzero([t is not None for t in tokens])
        split = [wire.split_tokens(tokens[i]) for i in matched.tolist()]
        lengths = rows["length"].astype(np.int64)
        bm25 = Bm25Index.for_query(lengths, matched, split, terms, self.params)
        statistics = wire.statistics_of(rows)
        occurred = wire.unix_micros(rows["occurred"])
        similarity, has_vector = similarity_of(rows["distance"].astype(np.float32), has_query)
        ordinals = np.arange(len(rows), dtype=np.int64)
        neighbours = neighbour_table(sessions, ordinals, self.window)
        return QueryPartition(
            index=ranking_index(bm25, statistics, occurred / 1e6, neighbours, has_vector),
            keys=rows["key"].tobytes(),
            kinds=rows["kind"].astype(np.int16),
            layers=rows["layer"].astype(np.int16),
            occurred=occurred,
            expires_at=seconds(statistics["expires_at"].astype(np.int64), NEVER_EXPIRES, np.inf),
            private=rows["private"].copy(),
            similarity=similarity,
            version=version,
            terms=terms,
            read_at=read_at,
        )
