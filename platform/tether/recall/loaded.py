"""A relationship's partition as the ranker takes it: its memories' records and the
index built over them. Built by every tier of the partition store (hot.py) from rows,
a Postgres snapshot or a Redis copy (cold.py, encoding.py), as columns."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from itertools import compress, count
from operator import attrgetter, eq

import msgspec
import numpy as np
import numpy.typing as npt

from tether.recall.bm25 import Bm25Index
from tether.recall.partition import PartitionIndex

Vector = npt.NDArray[np.float32]
FloatArray = npt.NDArray[np.float64]


class PartitionRecord(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """One memory of a partition. Nothing in it is tracked by the garbage collector: the
    id is kept as its 16 bytes (``uuid.UUID`` objects are tracked, and a process holding
    fifty 5,000-memory partitions made every full collection walk 250,000 of them)."""

    key: bytes  # the memory's id, uuid.UUID(bytes=key)
    external_id: str | None
    content: str
    memory_type: str
    layer: str
    occurred_at: datetime
    expires_at: datetime | None
    importance: float
    confidence: float
    strength: float
    last_recalled_at: datetime | None
    private_to_creator: bool
    group: str | None

    @property
    def id(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.key)


# The PartitionRecord fields that recalls and upkeep change in place: a snapshot is
# completed with their current values from the rows (STATISTICS_ROW below).
STATISTICS = ("importance", "confidence", "strength", "last_recalled_at", "expires_at")
# The same as one binary row, as Postgres sends it (float8send, int8send: big-endian);
# times in microseconds since the epoch, NULL as the int64 extreme that sorts the same.
STATISTICS_ROW = np.dtype(
    [
        ("importance", ">f8"),
        ("confidence", ">f8"),
        ("strength", ">f8"),
        ("last_recalled_at", ">i8"),
        ("expires_at", ">i8"),
    ]
)
NEVER_RECALLED = int(np.iinfo(np.int64).min)
NEVER_EXPIRES = int(np.iinfo(np.int64).max)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_MEMORY_TYPE = attrgetter("memory_type")
_LAYER = attrgetter("layer")
_IS_SUMMARY = partial(eq, "summary")


def _micros(moment: datetime | None, default: int) -> int:
    return default if moment is None else (moment - EPOCH) // _MICROSECOND


def _moment(micros: int, default: int) -> datetime | None:
    return None if micros == default else EPOCH + timedelta(microseconds=micros)


def statistics_table(records: Sequence[PartitionRecord]) -> npt.NDArray[np.void]:
    """The records' statistics as ``STATISTICS_ROW`` rows."""
    return np.array(
        [
            (
                r.importance,
                r.confidence,
                r.strength,
                _micros(r.last_recalled_at, NEVER_RECALLED),
                _micros(r.expires_at, NEVER_EXPIRES),
            )
            for r in records
        ],
        dtype=STATISTICS_ROW,
    )


def statistics_values(row: np.void) -> dict[str, object]:
    """One ``STATISTICS_ROW`` as PartitionRecord field values."""
    return {
        "importance": float(row["importance"]),
        "confidence": float(row["confidence"]),
        "strength": float(row["strength"]),
        "last_recalled_at": _moment(int(row["last_recalled_at"]), NEVER_RECALLED),
        "expires_at": _moment(int(row["expires_at"]), NEVER_EXPIRES),
    }


def seconds(micros: npt.NDArray[np.int64], never: int, default: float) -> FloatArray:
    """Microsecond times as POSIX seconds, ``default`` where ``never``."""
    return np.where(micros == never, default, micros / 1e6)


@dataclass(frozen=True, slots=True)
class LoadedPartition:
    """A partition ready to rank. ``similarity`` is set on a cold read only: the query's
    cosine to each row, computed by Postgres (``index.matrix`` is then None).
    ``row_versions``: on a read from rows, each row's id and ``xmin``, which a snapshot
    built from these records must still match when it is stored. ``merged_from``: on a
    read from a snapshot completed with rows written since, the version of the snapshot
    row it started from, which must still be current when it is stored in its place."""

    # A tuple, not a list: the collector stops tracking a tuple of untracked objects, but
    # walks a list's every item on each full collection, touching each record's memory
    # (fifty 5,000-memory partitions: 25-40 ms per collection, one every second or two).
    records: tuple[PartitionRecord, ...]
    index: PartitionIndex
    version: str
    source: str  # "local" | "hot" | "snapshot" | "cold"
    expires_at: FloatArray  # POSIX seconds, inf for never
    private: npt.NDArray[np.bool_]
    latest_summary: int | None
    similarity: Vector | None = None
    row_versions: bytes | None = None
    merged_from: str | None = None

    def memory_id(self, row: int) -> uuid.UUID:
        return self.records[row].id

    def allowed(
        self, types: Sequence[str] | None, layers: Sequence[str] | None
    ) -> npt.NDArray[np.bool_] | None:
        """Rows of one of ``types`` and ``layers`` (None: no filter)."""
        if types is None and layers is None:
            return None
        allowed = np.ones(len(self.records), np.bool_)
        if types is not None:
            kinds = map(_MEMORY_TYPE, self.records)
            allowed &= np.fromiter(map(set(types).__contains__, kinds), np.bool_, len(allowed))
        if layers is not None:
            found = map(_LAYER, self.records)
            allowed &= np.fromiter(map(set(layers).__contains__, found), np.bool_, len(allowed))
        return allowed

    def latest_visible_summary(self, visible: npt.NDArray[np.bool_]) -> int | None:
        """The row of the newest summary among ``visible`` rows."""
        latest = self.latest_summary
        if latest is None or visible[latest]:
            return latest
        # Rare: the newest summary is private or expired; the newest the caller may see.
        records = self.records
        summaries = (i for i, r in enumerate(records) if visible[i] and r.memory_type == "summary")
        return max(summaries, key=lambda i: records[i].occurred_at, default=None)


@dataclass(frozen=True, slots=True)
class PartitionColumns:
    """A partition as its records and the per-row columns ranking needs, row ``i`` of
    each being one memory: what every tier builds (from rows, a snapshot, a Redis copy)
    before the ranking view is assembled by :func:`from_columns`."""

    records: tuple[PartitionRecord, ...]
    built: npt.NDArray[np.void]  # STATISTICS_ROW as the records hold them
    occurred: FloatArray  # POSIX seconds
    private: npt.NDArray[np.bool_]
    neighbours: npt.NDArray[np.intp]  # PartitionIndex.neighbours
    bm25: Bm25Index


def from_columns(
    columns: PartitionColumns,
    version: str,
    source: str,
    *,
    has_vector: npt.NDArray[np.bool_],
    matrix: Vector | None = None,
    similarity: Vector | None = None,
    statistics: npt.NDArray[np.void] | None = None,
    row_versions: bytes | None = None,
) -> LoadedPartition:
    """The partition ``columns`` hold, ready to rank, with ``statistics``
    (``STATISTICS_ROW``, one per row; ``columns.built`` if None) taken as the current
    ones: the records whose statistics differ are brought up to date."""
    records = columns.records
    if statistics is None:
        statistics = columns.built
    else:
        records = _patched(records, columns.built, statistics)
    index = ranking_index(
        columns.bm25, statistics, columns.occurred, columns.neighbours, has_vector, matrix
    )
    # By C-level iterators: a Python loop over 5,000 records cost a cold read 0.6 ms.
    summaries = compress(count(), map(_IS_SUMMARY, map(_MEMORY_TYPE, records)))
    return LoadedPartition(
        records=records,
        index=index,
        version=version,
        source=source,
        expires_at=seconds(statistics["expires_at"].astype(np.int64), NEVER_EXPIRES, np.inf),
        private=columns.private,
        latest_summary=max(summaries, key=lambda i: records[i].occurred_at, default=None),
        similarity=similarity,
        row_versions=row_versions,
    )


def ranking_index(
    bm25: Bm25Index,
    statistics: npt.NDArray[np.void],
    occurred: FloatArray,
    neighbours: npt.NDArray[np.intp],
    has_vector: npt.NDArray[np.bool_],
    matrix: Vector | None = None,
) -> PartitionIndex:
    """The ranking view of rows with these columns (``statistics``: ``STATISTICS_ROW``;
    ``occurred``: POSIX seconds)."""
    recalled = seconds(statistics["last_recalled_at"].astype(np.int64), NEVER_RECALLED, -np.inf)
    return PartitionIndex(
        keys=np.arange(len(statistics), dtype=np.int64),
        bm25=bm25,
        matrix=matrix,
        has_vector=has_vector,
        importance=statistics["importance"].astype(np.float64),
        confidence=statistics["confidence"].astype(np.float64),
        strength=statistics["strength"].astype(np.float64),
        # A recall restarts the forgetting curve.
        reference_time=np.maximum(occurred, recalled),
        neighbours=neighbours,
    )


def _patched(
    records: tuple[PartitionRecord, ...], built: npt.NDArray[np.void], now: npt.NDArray[np.void]
) -> tuple[PartitionRecord, ...]:
    """``records`` with the statistics of the rows that differ from the built ones."""
    width = STATISTICS_ROW.itemsize
    differs = built.view(np.uint8).reshape(-1, width) != now.view(np.uint8).reshape(-1, width)
    changed = np.flatnonzero(differs.any(axis=1))
    if not len(changed):
        return records
    patched = list(records)
    for i in changed:
        patched[i] = msgspec.structs.replace(records[i], **statistics_values(now[i]))
    return tuple(patched)


def occurred_seconds(records: Sequence[PartitionRecord]) -> FloatArray:
    """POSIX seconds, as integer microseconds over 1e6: the same arithmetic as a read
    from rows, so that every tier agrees to the last bit for any date."""
    micros = (_micros(r.occurred_at, 0) for r in records)
    return np.fromiter(micros, np.int64, len(records)) / 1e6


NO_DISTANCE = -1.0  # where a memory has no usable vector (a cosine distance is >= 0)


def similarity_of(
    distances: npt.NDArray[np.float32], has_query: bool
) -> tuple[Vector | None, npt.NDArray[np.bool_]]:
    """Postgres's cosine distances (``NO_DISTANCE`` where a memory has no usable vector)
    as similarities, and which rows have a vector. No usable vector at all means no
    vector signal (as on the hot path), not a zero one."""
    has_vector = distances != NO_DISTANCE
    if not has_query or not has_vector.any():
        return None, has_vector
    cosine = 1.0 - np.where(has_vector, distances, 1.0).astype(np.float32)
    return np.nan_to_num(cosine, nan=0.0), has_vector  # a zero vector's distance is NaN


def stack_vectors(raw: Sequence[bytes | None]) -> tuple[Vector | None, npt.NDArray[np.bool_]]:
    """Rows of pgvector's halfvec binary form (dimension int16, unused int16, big-endian
    float16s) stacked into one float32 matrix, zero rows where a memory has none."""
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
