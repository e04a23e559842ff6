"""The encoded form of a built partition, shared by the Redis copy and the Postgres
snapshot: records, BM25 postings and the per-row columns ranking needs, as flat arrays,
so a reader decodes instead of re-indexing; float16 vectors in the Redis copy only (a
snapshot leaves them in pgvector)."""

from __future__ import annotations

import msgspec
import numpy as np
import numpy.typing as npt

from tether.recall.bm25 import Bm25Index, Bm25Parts
from tether.recall.loaded import (
    NEVER_EXPIRES,
    NEVER_RECALLED,
    STATISTICS_ROW,
    LoadedPartition,
    PartitionRecord,
    Vector,
    assemble,
    occurred_seconds,
    seconds,
    statistics_table,
    statistics_values,
)
from tether.recall.partition import PartitionIndex


class EncodedPartition(msgspec.Struct, array_like=True):
    layout: str  # the format and the ranking parameters the index was built with
    version: str  # the Redis version token it was built under ("" in a snapshot)
    records: list[PartitionRecord]
    terms: list[str]
    offsets: bytes  # int64
    postings: bytes  # int32 document rows
    weights: bytes  # float32
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
                len(self.records),
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


def _patched(
    records: list[PartitionRecord], built: npt.NDArray[np.void], now: npt.NDArray[np.void]
) -> list[PartitionRecord]:
    """``records`` with the statistics of the rows that differ from the built ones."""
    width = STATISTICS_ROW.itemsize
    differs = built.view(np.uint8).reshape(-1, width) != now.view(np.uint8).reshape(-1, width)
    for i in np.flatnonzero(differs.any(axis=1)):
        records[i] = msgspec.structs.replace(records[i], **statistics_values(now[i]))
    return records


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
) -> LoadedPartition:
    """The partition ``encoded`` holds, with ``statistics`` (``STATISTICS_ROW``; as built
    if None) taken as the current ones. ``window``: the neighbour window it was built
    with (part of its layout)."""
    count = len(encoded.records)
    built = np.frombuffer(encoded.statistics, dtype=STATISTICS_ROW)
    records = encoded.records
    if statistics is None:
        statistics = built
    else:
        records = _patched(records, built, statistics)
    recalled = seconds(statistics["last_recalled_at"].astype(np.int64), NEVER_RECALLED, -np.inf)
    occurred = np.frombuffer(encoded.occurred, dtype=np.float64)
    neighbours = np.frombuffer(encoded.neighbours, np.int32).reshape(count, 2 * window)
    index = PartitionIndex(
        keys=np.arange(count, dtype=np.int64),
        bm25=encoded.bm25(),
        matrix=matrix,
        has_vector=has_vector,
        importance=statistics["importance"].astype(np.float64),
        confidence=statistics["confidence"].astype(np.float64),
        strength=statistics["strength"].astype(np.float64),
        # A recall restarts the forgetting curve.
        reference_time=np.maximum(occurred, recalled),
        neighbours=neighbours.astype(np.intp),
    )
    expires_at = seconds(statistics["expires_at"].astype(np.int64), NEVER_EXPIRES, np.inf)
    return assemble(
        records,
        index,
        version,
        source,
        similarity,
        expires_at=expires_at,
        private=np.frombuffer(encoded.private, dtype=np.bool_),
    )
