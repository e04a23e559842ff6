"""The encoded form of a built partition, shared by the Redis copy and the Postgres
snapshot: records, BM25 postings and the per-row columns ranking needs, as flat arrays,
so a reader decodes instead of re-indexing; float16 vectors in the Redis copy only (a
snapshot leaves them in pgvector)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from tether.recall.bm25 import Bm25Index, Bm25Params, Bm25Parts
from tether.recall.loaded import (
    STATISTICS_ROW,
    LoadedPartition,
    PartitionColumns,
    PartitionRecord,
    Vector,
    from_columns,
    occurred_seconds,
    statistics_table,
)
from tether.recall.partition import neighbour_table


class EncodedPartition(msgspec.Struct, array_like=True):
    layout: str  # the format and the ranking parameters the index was built with
    version: str  # the Redis version token it was built under ("" in a snapshot)
    records: tuple[PartitionRecord, ...]
    terms: list[str]
    offsets: bytes  # int64
    postings: bytes  # int32 document rows
    weights: bytes  # float32
    counts: bytes  # int32 term frequency of each posting
    lengths: bytes  # int32 tokens of each document
    keys: bytes  # the ids, 16 bytes each
    statistics: bytes  # STATISTICS_ROW rows as built
    occurred: bytes  # float64 POSIX seconds
    neighbours: bytes  # int32, PartitionIndex.neighbours
    private: bytes  # bool
    dimension: int  # 0: no vectors
    vectors: bytes  # float16 rows, zero rows where a memory has no vector
    has_vector: bytes  # bool, with the vectors

    def bm25(self) -> Bm25Index:
        return Bm25Index.from_parts(
            Bm25Parts(
                self.terms,
                np.frombuffer(self.offsets, dtype=np.int64),
                np.frombuffer(self.postings, dtype=np.int32),
                np.frombuffer(self.weights, dtype=np.float32),
                np.frombuffer(self.counts, dtype=np.int32),
                np.frombuffer(self.lengths, dtype=np.int32),
            )
        )

    def matrix(self) -> Vector | None:
        if not self.dimension or not self.records:
            return None
        halves = np.frombuffer(self.vectors, dtype=np.float16)
        return halves.reshape(len(self.records), self.dimension).astype(np.float32)

    def has_vectors(self) -> npt.NDArray[np.bool_]:
        return np.frombuffer(self.has_vector, dtype=np.bool_)


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(EncodedPartition)


def encode(layout: str, version: str, partition: LoadedPartition, *, vectors: bool) -> bytes:
    records, index = partition.records, partition.index
    matrix = index.matrix if vectors else None
    parts = index.bm25.parts()
    return _encoder.encode(
        EncodedPartition(
            layout=layout,
            version=version,
            records=records,
            terms=parts.terms,
            offsets=parts.offsets.tobytes(),
            postings=parts.docs.tobytes(),
            weights=parts.weights.tobytes(),
            counts=parts.counts.tobytes(),
            lengths=parts.lengths.tobytes(),
            keys=b"".join(r.key for r in records),
            statistics=statistics_table(records).tobytes(),
            occurred=occurred_seconds(records).tobytes(),
            neighbours=index.neighbours.astype(np.int32).tobytes(),
            private=partition.private.tobytes(),
            dimension=0 if matrix is None else int(matrix.shape[1]),
            vectors=b"" if matrix is None else matrix.astype(np.float16).tobytes(),
            has_vector=index.has_vector.tobytes() if vectors else b"",
        )
    )


def decode(raw: bytes) -> EncodedPartition | None:
    """None for a value of another release's layout (it is rebuilt)."""
    try:
        return _decoder.decode(raw)
    except msgspec.DecodeError:
        return None


@dataclass(frozen=True, slots=True)
class Changes:
    """How a partition's current rows differ from an encoded one: row ``i`` is the
    encoded row ``origin[i]``, or where that is -1, the next of ``added`` (read from its
    row, with its tokens in ``added_tokens``)."""

    origin: npt.NDArray[np.intp]
    added: Sequence[PartitionRecord]
    added_tokens: list[list[str]]
    params: Bm25Params  # the BM25 parameters the encoded index was built with


def _as_encoded(encoded: EncodedPartition, window: int) -> PartitionColumns:
    count = len(encoded.records)
    neighbours = np.frombuffer(encoded.neighbours, np.int32).reshape(count, 2 * window)
    return PartitionColumns(
        records=encoded.records,
        built=np.frombuffer(encoded.statistics, dtype=STATISTICS_ROW),
        occurred=np.frombuffer(encoded.occurred, dtype=np.float64),
        private=np.frombuffer(encoded.private, dtype=np.bool_),
        neighbours=neighbours.astype(np.intp),
        bm25=encoded.bm25(),
    )


def _as_changed(encoded: EncodedPartition, changes: Changes, window: int) -> PartitionColumns:
    """The encoded partition with ``changes`` applied: what indexing the current rows
    would build, without indexing the rows it already holds."""
    origin, added = changes.origin, changes.added
    kept = origin >= 0
    from_encoded = origin[kept]
    pending = iter(added)
    records = tuple(encoded.records[row] if row >= 0 else next(pending) for row in origin.tolist())

    def column(raw: npt.NDArray[Any], new: npt.NDArray[Any]) -> npt.NDArray[Any]:
        out = np.empty(len(origin), dtype=raw.dtype)
        out[kept] = raw[from_encoded]
        out[~kept] = new
        return out

    built = column(np.frombuffer(encoded.statistics, dtype=STATISTICS_ROW), statistics_table(added))
    occurred = column(np.frombuffer(encoded.occurred, dtype=np.float64), occurred_seconds(added))
    private = column(
        np.frombuffer(encoded.private, dtype=np.bool_),
        np.fromiter((r.private_to_creator for r in added), np.bool_, len(added)),
    )
    groups = [r.group for r in records]
    return PartitionColumns(
        records=records,
        built=built,
        occurred=occurred,
        private=private,
        neighbours=neighbour_table(groups, np.arange(len(records), dtype=np.int64), window),
        bm25=encoded.bm25().rearranged(origin, changes.added_tokens, changes.params),
    )


def loaded(
    encoded: EncodedPartition,
    version: str,
    source: str,
    window: int,
    *,
    has_vector: npt.NDArray[np.bool_],
    matrix: Vector | None = None,
    similarity: Vector | None = None,
    statistics: npt.NDArray[np.void] | None = None,
    changes: Changes | None = None,
) -> LoadedPartition:
    """The partition ``encoded`` holds, with ``changes`` applied, and ``statistics``
    (``STATISTICS_ROW``, one per current row; as built if None) taken as the current
    ones. ``window``: the neighbour window it was built with (part of its layout)."""
    columns = (
        _as_encoded(encoded, window) if changes is None else _as_changed(encoded, changes, window)
    )
    return from_columns(
        columns,
        version,
        source,
        has_vector=has_vector,
        matrix=matrix,
        similarity=similarity,
        statistics=statistics,
    )
