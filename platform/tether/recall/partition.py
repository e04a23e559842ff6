"""A relationship's partition: its active memories as columns ready to rank.

Row ``i`` of every column is one memory, in partition order (occurred_at, id). A
partition is built from a cold read's rows (``from_rows``) or decoded from its Redis
copy (encoding.py), and is immutable: concurrent requests share it. Two kinds exist:

- a whole partition (``texts`` set): every memory's texts and vectors; the copy the
  hot tiers keep, good for any query;
- a partition read for one query (``terms`` set): no texts, BM25 postings of the query's
  terms only and the query's similarities from pgvector; it ranks that query alone, and
  the texts of the memories it returns are read afterwards (cold.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from tether.recall import wire
from tether.recall.bm25 import Bm25Index
from tether.recall.enums import MemoryLayer, MemoryType
from tether.recall.index import PartitionIndex, neighbour_table

Vector = npt.NDArray[np.float32]
FloatArray = npt.NDArray[np.float64]

# A memory's kind and layer travel as 1 + their position here (0: any other value).
MEMORY_TYPES = tuple(MemoryType)
MEMORY_LAYERS = tuple(MemoryLayer)
_SUMMARY = 1 + MEMORY_TYPES.index(MemoryType.SUMMARY)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _codes(values: Sequence[str], known: Sequence[str]) -> list[int]:
    return [1 + known.index(value) for value in values if value in known]


@dataclass(frozen=True, slots=True)
class Texts:
    """What a response shows of each memory. Tuples of strings: the garbage collector
    stops walking them (a process holds hundreds of thousands of memories)."""

    external_ids: tuple[str | None, ...]
    contents: tuple[str, ...]
    types: tuple[str, ...]
    layers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RecalledMemory:
    """One memory a recall returns, with what decides whether the caller may have it."""

    id: uuid.UUID
    external_id: str | None
    content: str
    memory_type: str
    layer: str
    occurred_at: datetime
    expires_at: float  # POSIX seconds, inf for never
    private_to_creator: bool


@dataclass(frozen=True, slots=True)
class Partition:
    index: PartitionIndex
    keys: bytes  # the memories' ids, 16 bytes each
    kinds: npt.NDArray[np.int16]  # MEMORY_TYPES codes
    layers: npt.NDArray[np.int16]  # MEMORY_LAYERS codes
    occurred: npt.NDArray[np.int64]  # microseconds since 1970
    expires_at: FloatArray  # POSIX seconds, inf for never
    private: npt.NDArray[np.bool_]
    version: str  # the version token it was read under (versions.py)
    source: str  # the tier that served it: "local" | "hot" | "cold"
    texts: Texts | None = None  # None: read for one query
    terms: tuple[str, ...] | None = None  # read for one query: the terms it ranks
    similarity: Vector | None = None  # read for one query: its cosine to each memory
    read_at: datetime | None = None  # read for one query: the moment of the read
    # The model of its vectors (None: any, or none at all); only a query embedded by
    # that model is compared with them (decision 0077).
    embedding_model: str | None = None

    @property
    def size(self) -> int:
        return len(self.private)

    def key(self, row: int) -> bytes:
        return self.keys[16 * row : 16 * row + 16]

    def memory_id(self, row: int) -> uuid.UUID:
        return uuid.UUID(bytes=self.key(row))

    def visible(self, now: datetime, include_private: bool) -> npt.NDArray[np.bool_]:
        """Rows the caller may receive at all: not expired, private notes if allowed."""
        visible = self.expires_at > now.timestamp()
        return visible if include_private else visible & ~self.private

    def allowed(
        self, types: Sequence[str] | None, layers: Sequence[str] | None
    ) -> npt.NDArray[np.bool_]:
        """Rows of one of ``types`` and of one of ``layers`` (None: any)."""
        allowed = np.ones(self.size, np.bool_)
        if types is not None:
            allowed &= np.isin(self.kinds, _codes(types, MEMORY_TYPES))
        if layers is not None:
            allowed &= np.isin(self.layers, _codes(layers, MEMORY_LAYERS))
        return allowed

    def latest_summary(self, among: npt.NDArray[np.bool_]) -> int | None:
        """The row of the newest summary ``among`` those rows (the first of equals)."""
        rows = np.flatnonzero(among & (self.kinds == _SUMMARY))
        return None if len(rows) == 0 else int(rows[np.argmax(self.occurred[rows])])

    def recalled(self, row: int) -> RecalledMemory:
        """Row ``row`` of a whole partition as a recall returns it."""
        if self.texts is None:
            raise ValueError("a partition read for one query holds no texts")
        expires, private = float(self.expires_at[row]), bool(self.private[row])
        return _memory(self.key(row), self.texts, row, int(self.occurred[row]), expires, private)


def _memory(
    key: bytes, texts: Texts, row: int, occurred: int, expires: float, private: bool
) -> RecalledMemory:
    return RecalledMemory(
        id=uuid.UUID(bytes=key),
        external_id=texts.external_ids[row],
        content=texts.contents[row],
        memory_type=texts.types[row],
        layer=texts.layers[row],
        occurred_at=EPOCH + timedelta(microseconds=occurred),
        expires_at=expires,
        private_to_creator=private,
    )


def recalled_memories(rows: npt.NDArray[np.void], texts: Texts) -> dict[bytes, RecalledMemory]:
    """The memories of ``rows`` (``wire.QUERY_ROW``s) with their ``texts``, by id."""
    if len(texts.contents) != len(rows):
        raise ValueError("the texts read are not those of the rows")
    occurred = wire.unix_micros(rows["occurred"]).tolist()
    expires = _seconds(wire.unix_micros(rows["expires_at"]), wire.NEVER_EXPIRES, np.inf)
    keys, private = rows["key"].tobytes(), rows["private"].tolist()
    return {
        key: _memory(key, texts, i, occurred[i], float(expires[i]), private[i])
        for i, key in enumerate(keys[j : j + 16] for j in range(0, len(keys), 16))
    }


def _seconds(micros: npt.NDArray[np.int64], never: int, default: float) -> FloatArray:
    return np.where(micros == never, default, micros / 1e6)


def similarity_of(
    distances: npt.NDArray[np.float32], has_query: bool
) -> tuple[Vector | None, npt.NDArray[np.bool_]]:
    """pgvector's cosine distances as similarities, and which rows have a usable vector.
    No usable vector at all means no vector signal (as on the hot path), not a zero one."""
    has_vector = distances != wire.NO_DISTANCE
    if not has_query or not has_vector.any():
        return None, has_vector
    cosine = 1.0 - np.where(has_vector, distances, 1.0).astype(np.float32)
    return np.nan_to_num(cosine, nan=0.0), has_vector  # a zero vector's distance is NaN


def stack_vectors(raw: Sequence[bytes | None]) -> tuple[Vector | None, npt.NDArray[np.bool_]]:
    """Rows of pgvector's halfvec binary form (dimension int16, unused int16, big-endian
    float16s) as one float32 matrix, zero rows where a memory has none."""
    has_vector = np.fromiter((r is not None for r in raw), np.bool_, len(raw))
    present = [r for r in raw if r is not None]
    if not present:
        return None, has_vector
    width = len(present[0])
    if any(len(r) != width for r in present):
        raise ValueError("vectors of different dimensions in one partition")
    rows = np.frombuffer(b"".join(present), dtype=np.uint8).reshape(len(present), width)
    values = rows[:, 4:].copy().view(">f2").astype(np.float32)
    matrix = np.zeros((len(raw), values.shape[1]), dtype=np.float32)
    matrix[has_vector] = values
    return matrix, has_vector


@dataclass(frozen=True, slots=True)
class Read:
    """What a cold read sent of a partition, decoded: its ``QUERY_ROW``s, sessions and
    BM25 index, and its vectors or its similarities to the query."""

    rows: npt.NDArray[np.void]
    sessions: Sequence[str | None]
    bm25: Bm25Index
    has_vector: npt.NDArray[np.bool_]
    matrix: Vector | None = None
    similarity: Vector | None = None


def from_rows(
    read: Read,
    version: str,
    window: int,
    *,
    texts: Texts | None = None,
    terms: tuple[str, ...] | None = None,
    read_at: datetime | None = None,
) -> Partition:
    """The partition ``read`` holds, as read from Postgres: whole with its ``texts``, or
    for one query (``terms``, ``read_at``). ``window``: the neighbour window."""
    rows = read.rows
    occurred = wire.unix_micros(rows["occurred"])
    recalled = wire.unix_micros(rows["last_recalled_at"])
    expires = wire.unix_micros(rows["expires_at"])
    index = PartitionIndex(
        keys=np.arange(len(rows), dtype=np.int64),
        bm25=read.bm25,
        matrix=read.matrix,
        has_vector=read.has_vector,
        importance=rows["importance"].astype(np.float64),
        confidence=rows["confidence"].astype(np.float64),
        strength=rows["strength"].astype(np.float64),
        # A recall restarts the forgetting curve.
        reference_time=np.maximum(occurred / 1e6, _seconds(recalled, wire.NEVER_RECALLED, -np.inf)),
        neighbours=neighbour_table(read.sessions, np.arange(len(rows), dtype=np.int64), window),
    )
    return Partition(
        index=index,
        keys=rows["key"].tobytes(),
        kinds=rows["kind"].astype(np.int16),
        layers=rows["layer"].astype(np.int16),
        occurred=occurred,
        expires_at=_seconds(expires, wire.NEVER_EXPIRES, np.inf),
        private=rows["private"].copy(),
        version=version,
        source="cold",
        texts=texts,
        terms=terms,
        similarity=read.similarity,
        read_at=read_at,
    )
