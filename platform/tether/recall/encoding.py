"""The encoded form of a built partition, shared by the Redis copy and the Postgres
snapshot: records and BM25 postings as flat arrays, so a reader decodes instead of
re-indexing; float16 vectors in the Redis copy only (a snapshot leaves them in pgvector)."""

from __future__ import annotations

import msgspec
import numpy as np
import numpy.typing as npt

from tether.recall.bm25 import Bm25Index, Bm25Parts
from tether.recall.loaded import PartitionRecord, Vector


class EncodedPartition(msgspec.Struct, array_like=True):
    layout: str  # the format and the ranking parameters the index was built with
    version: str  # the Redis version token it was built under ("" in a snapshot)
    records: list[PartitionRecord]
    terms: list[str]
    offsets: bytes  # int64
    postings: bytes  # int32 document rows
    weights: bytes  # float32
    dimension: int  # 0: no vectors
    vectors: bytes  # float16 rows, zero rows where a memory has no vector
    has_vector: bytes
    # A snapshot's columns (empty in a Redis copy): what a cold read would otherwise
    # compute per record, and what it compares the rows with.
    keys: bytes = b""  # the ids, 16 bytes each
    statistics: bytes = b""  # STATISTICS_ROW rows as built
    occurred: bytes = b""  # float64 POSIX seconds
    neighbours: bytes = b""  # int32, PartitionIndex.neighbours
    private: bytes = b""  # bool

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


def encoded(
    layout: str,
    version: str,
    records: list[PartitionRecord],
    bm25: Bm25Index,
    matrix: Vector | None,
    has_vector: npt.NDArray[np.bool_] | None,
) -> EncodedPartition:
    parts = bm25.parts()
    return EncodedPartition(
        layout=layout,
        version=version,
        records=records,
        terms=parts.terms,
        offsets=parts.offsets.tobytes(),
        postings=parts.docs.tobytes(),
        weights=parts.weights.tobytes(),
        dimension=0 if matrix is None else int(matrix.shape[1]),
        vectors=b"" if matrix is None else matrix.astype(np.float16).tobytes(),
        has_vector=b"" if has_vector is None else has_vector.tobytes(),
    )


def encode(partition: EncodedPartition) -> bytes:
    return _encoder.encode(partition)


def decode(raw: bytes) -> EncodedPartition | None:
    """None for a value of another release's layout (it is rebuilt)."""
    try:
        return _decoder.decode(raw)
    except msgspec.DecodeError:
        return None
