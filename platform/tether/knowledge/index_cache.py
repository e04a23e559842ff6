"""Ranking views of knowledge bases, kept in this process and rebuilt when they change.

Every query reads the base's ``content_version`` (one indexed row); the cached view of
an equal or newer version answers. A newer version rebuilds the view from per-document
parts: only documents indexed since the last build are read from Postgres, so adding or
deleting one document of a 10,000-chunk base re-reads that document only (the BM25
postings and the vector matrix are rebuilt in a thread, about 0.1 s at that size).
Loads are shared: concurrent queries of one base wait for the same load.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, TypeVar

import anyio.to_thread
import msgspec
import numpy as np
import numpy.typing as npt
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tether.core.ids import TenantId
from tether.core.tenant_sessions import tenant_session
from tether.knowledge.repositories import (
    ChunkRepository,
    ChunkRow,
    DocumentRepository,
    KnowledgeBaseRepository,
    SearchableDocument,
)
from tether.recall.index import PartitionIndex, RankDoc
from tether.recall.weights import RankWeights

# Chunks of all cached views (and, separately, of cached parts) in one process: about
# 2 KiB of vector each at 512 dimensions, so ~200 MiB per tier at this size.
MAX_CACHED_CHUNKS = 100_000
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)

K = TypeVar("K")
V = TypeVar("V")


class ChunkRecord(msgspec.Struct, frozen=True, gc=False):
    """One chunk of a cached view. Nothing in it is tracked by the garbage collector (ids
    as their 16 bytes): a full cache holds 100,000 of them per tier, and every full
    collection would otherwise walk each one, its two ``uuid.UUID``s and its tokens."""

    key: bytes  # the chunk's id
    document_key: bytes  # its document's id
    filename: str
    page: int | None
    section: str | None
    text: str

    @classmethod
    def of(
        cls,
        chunk_id: uuid.UUID,
        document_id: uuid.UUID,
        filename: str,
        page: int | None,
        section: str | None,
        text: str,
    ) -> ChunkRecord:
        return cls(chunk_id.bytes, document_id.bytes, filename, page, section, text)

    @property
    def id(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.key)

    @property
    def document_id(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.document_key)

    @property
    def source(self) -> str:
        if self.page is not None:
            return f"{self.filename}#page={self.page}"
        if self.section:
            return f"{self.filename}#{self.section}"
        return self.filename


@dataclass(frozen=True, slots=True)
class _Part:
    """One document's chunks as read from Postgres. Tuples, which the collector stops
    tracking once it finds them holding only untracked objects (lists it walks on every
    full collection)."""

    records: tuple[ChunkRecord, ...]
    tokens: tuple[tuple[str, ...], ...]
    vectors: tuple[npt.NDArray[np.float32] | None, ...]


@dataclass(frozen=True, slots=True)
class BaseView:
    version: int
    records: tuple[ChunkRecord, ...]  # a tuple: as _Part's
    index: PartitionIndex


class _Lru(Generic[K, V]):
    """Least recently used entries go first once their total weight passes ``limit``."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._weight = 0

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key: K, value: V, weight: int) -> None:
        old = self._entries.pop(key, None)
        self._weight += weight - (old[1] if old else 0)
        self._entries[key] = (value, weight)
        while self._weight > self._limit and len(self._entries) > 1:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._weight -= dropped


@dataclass(slots=True)
class _Loading:
    after_version: int
    task: asyncio.Task[BaseView]


def _vector(raw: bytes | None) -> npt.NDArray[np.float32] | None:
    # pgvector's binary form: int16 dimension, int16 unused, then big-endian float4s.
    if raw is None:
        return None
    return np.frombuffer(raw, dtype=">f4", offset=4).astype(np.float32)


def _part(document: SearchableDocument, rows: Sequence[ChunkRow], model: str | None) -> _Part:
    # Vectors of another model (before a reindex) are not comparable with query vectors:
    # those chunks rank lexically until reindexed.
    return _Part(
        records=tuple(
            ChunkRecord.of(r.id, r.document_id, document.filename, r.page, r.section, r.text)
            for r in rows
        ),
        tokens=tuple(tuple(r.tokens.split(" ")) if r.tokens else () for r in rows),
        vectors=tuple(
            _vector(r.vector) if model in (None, r.embedding_model) else None for r in rows
        ),
    )


def _assemble(
    version: int,
    documents: Sequence[SearchableDocument],
    held: dict[uuid.UUID, _Part],
    rows: Sequence[ChunkRow],
    model: str | None,
    weights: RankWeights,
) -> tuple[dict[uuid.UUID, _Part], BaseView]:
    """The parts read now and the view over every document (pure: runs in a thread)."""
    by_document: dict[uuid.UUID, list[ChunkRow]] = {}
    for row in rows:
        by_document.setdefault(row.document_id, []).append(row)
    fresh = {
        d.id: _part(d, by_document.get(d.id, []), model) for d in documents if d.id not in held
    }
    parts = [held.get(d.id) or fresh[d.id] for d in documents]
    return fresh, _build(version, parts, weights)


def _build(version: int, parts: Sequence[_Part], weights: RankWeights) -> BaseView:
    records = tuple(record for part in parts for record in part.records)
    pairs = [pair for part in parts for pair in zip(part.tokens, part.vectors, strict=True)]
    docs = [
        RankDoc(
            key=row,
            tokens=tokens,
            vector=vector,
            importance=1.0,
            confidence=1.0,
            strength=1.0,
            occurred_at=_EPOCH,
            last_recalled_at=None,
        )
        for row, (tokens, vector) in enumerate(pairs)
    ]
    return BaseView(version, records, PartitionIndex.build(docs, weights))


_ViewKey = tuple[TenantId, uuid.UUID, str | None]


class KnowledgeIndexCache:
    """Per-process views of knowledge bases, keyed by tenant and base."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        weights: RankWeights,
        embedding_model: str | None,
        max_chunks: int = MAX_CACHED_CHUNKS,
    ) -> None:
        """``embedding_model``: the model of views that name none (None: any)."""
        self._sessions = sessions
        self._weights = weights
        self._model = embedding_model
        # Keyed by the model too: a tenant's view under one model never serves another's
        # query vectors (decision 0077).
        self._views: _Lru[_ViewKey, BaseView] = _Lru(max_chunks)
        self._parts: _Lru[tuple[uuid.UUID, datetime, str | None], _Part] = _Lru(max_chunks)
        self._loading: dict[_ViewKey, _Loading] = {}

    async def view(
        self, tenant_id: TenantId, base_id: uuid.UUID, model: str | None = None
    ) -> BaseView:
        """The current view of the base (empty if it does not exist in this tenant), with
        the vectors of ``model`` (the cache's own if None)."""
        model = self._model if model is None else model
        key = (tenant_id, base_id, model)
        async with tenant_session(self._sessions, tenant_id) as session:
            version = await KnowledgeBaseRepository(session, tenant_id).version(base_id)
        if version is None:
            return _build(-1, [], self._weights)
        cached = self._views.get(key)
        if cached is not None and cached.version >= version:
            return cached
        loading = self._loading.get(key)
        if loading is None or loading.after_version < version:
            load = self._load(tenant_id, base_id, model)
            task = asyncio.get_running_loop().create_task(load)
            loading = self._loading[key] = _Loading(version, task)
            task.add_done_callback(lambda _: self._forget(key, task))
        return await loading.task

    def _forget(self, key: _ViewKey, task: asyncio.Task[BaseView]) -> None:
        current = self._loading.get(key)
        if current is not None and current.task is task:
            del self._loading[key]

    async def _load(self, tenant_id: TenantId, base_id: uuid.UUID, model: str | None) -> BaseView:
        async with tenant_session(self._sessions, tenant_id) as session:
            # One snapshot: the version and the chunks read belong together.
            await session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            version = await KnowledgeBaseRepository(session, tenant_id).version(base_id)
            documents = await DocumentRepository(session, tenant_id).searchable(base_id)
            held = {
                d.id: part
                for d in documents
                if (part := self._parts.get((d.id, d.indexed_at, model))) is not None
            }
            missing = [d.id for d in documents if d.id not in held]
            chunks = ChunkRepository(session, tenant_id)
            rows = await chunks.of_documents(missing) if missing else []
        fresh, view = await anyio.to_thread.run_sync(
            _assemble, version or 0, documents, held, rows, model, self._weights
        )
        for document in documents:
            if document.id in fresh:
                part = fresh[document.id]
                part_key = (document.id, document.indexed_at, model)
                self._parts.put(part_key, part, len(part.records) + 1)
        self._views.put((tenant_id, base_id, model), view, len(view.records) + 1)
        return view
