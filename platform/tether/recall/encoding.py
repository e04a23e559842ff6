"""A whole partition as its Redis copy: every column and the built BM25 postings as flat
arrays, the vectors as float16, so that another process decodes it instead of reading
Postgres and indexing again (a 5,000-memory copy is a few megabytes)."""

from __future__ import annotations

import msgspec
import numpy as np

from tether.recall.bm25 import Bm25Index, Bm25Parts
from tether.recall.index import PartitionIndex
from tether.recall.partition import Partition, Texts


class Blob(msgspec.Struct, array_like=True):
    layout: str  # the format and the ranking parameters it was built with
    version: str  # the version token it was built under
    keys: bytes
    kinds: bytes  # int16
    layers: bytes  # int16
    occurred: bytes  # int64 microseconds
    expires_at: bytes  # float64 seconds
    private: bytes  # bool
    texts: tuple[tuple[str | None, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]
    terms: list[str]
    offsets: bytes  # int64
    postings: bytes  # int32 rows
    weights: bytes  # float32
    importance: bytes  # float64, and so are the next three
    confidence: bytes
    strength: bytes
    reference_time: bytes
    neighbours: bytes  # int32, PartitionIndex.neighbours
    has_vector: bytes  # bool
    dimension: int  # 0: no vectors
    vectors: bytes  # float16 rows, zero where a memory has none
    # The model of the vectors ("": any or none); last, so older copies still decode.
    embedding_model: str = ""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Blob)


def encode(layout: str, partition: Partition) -> bytes:
    """The Redis copy of a whole partition (one with texts)."""
    texts, index = partition.texts, partition.index
    if texts is None:
        raise ValueError("only a whole partition is stored")
    parts, matrix = index.bm25.parts(), index.matrix
    return _encoder.encode(
        Blob(
            layout=layout,
            version=partition.version,
            keys=partition.keys,
            kinds=partition.kinds.tobytes(),
            layers=partition.layers.tobytes(),
            occurred=partition.occurred.tobytes(),
            expires_at=partition.expires_at.tobytes(),
            private=partition.private.tobytes(),
            texts=(texts.external_ids, texts.contents, texts.types, texts.layers),
            terms=parts.terms,
            offsets=parts.offsets.tobytes(),
            postings=parts.docs.tobytes(),
            weights=parts.weights.tobytes(),
            importance=index.importance.tobytes(),
            confidence=index.confidence.tobytes(),
            strength=index.strength.tobytes(),
            reference_time=index.reference_time.tobytes(),
            neighbours=index.neighbours.astype(np.int32).tobytes(),
            has_vector=index.has_vector.tobytes(),
            dimension=0 if matrix is None else int(matrix.shape[1]),
            vectors=b"" if matrix is None else matrix.astype(np.float16).tobytes(),
            embedding_model=partition.embedding_model or "",
        )
    )


def decode(raw: bytes, layout: str, window: int) -> Partition | None:
    """The partition of a Redis copy; None for a copy of another layout (another
    release, other ranking parameters), which is then rebuilt."""
    try:
        blob = _decoder.decode(raw)
    except msgspec.DecodeError:
        return None
    if blob.layout != layout:
        return None
    size = len(blob.keys) // 16
    matrix = None
    if blob.dimension and size:
        halves = np.frombuffer(blob.vectors, dtype=np.float16)
        matrix = halves.reshape(size, blob.dimension).astype(np.float32)
    bm25 = Bm25Index.from_parts(
        Bm25Parts(
            blob.terms,
            np.frombuffer(blob.offsets, dtype=np.int64),
            np.frombuffer(blob.postings, dtype=np.int32),
            np.frombuffer(blob.weights, dtype=np.float32),
            size,
        )
    )
    neighbours = np.frombuffer(blob.neighbours, dtype=np.int32).reshape(size, 2 * window)
    index = PartitionIndex(
        keys=np.arange(size, dtype=np.int64),
        bm25=bm25,
        matrix=matrix,
        has_vector=np.frombuffer(blob.has_vector, dtype=np.bool_),
        importance=np.frombuffer(blob.importance, dtype=np.float64),
        confidence=np.frombuffer(blob.confidence, dtype=np.float64),
        strength=np.frombuffer(blob.strength, dtype=np.float64),
        reference_time=np.frombuffer(blob.reference_time, dtype=np.float64),
        neighbours=neighbours.astype(np.intp),
    )
    return Partition(
        index=index,
        keys=blob.keys,
        kinds=np.frombuffer(blob.kinds, dtype=np.int16),
        layers=np.frombuffer(blob.layers, dtype=np.int16),
        occurred=np.frombuffer(blob.occurred, dtype=np.int64),
        expires_at=np.frombuffer(blob.expires_at, dtype=np.float64),
        private=np.frombuffer(blob.private, dtype=np.bool_),
        version=blob.version,
        source="hot",
        texts=Texts(*blob.texts),
        embedding_model=blob.embedding_model or None,
    )
