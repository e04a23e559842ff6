"""Cold reads: a partition from Postgres, when neither this process nor Redis has it.

A request reads what ranking its query needs (``for_query``): pgvector computes the
query's distance to every memory, so no vector leaves Postgres, and only the memories
holding a query term send their tokens. After ranking it reads the texts of the memories
it returns (``texts``). The fill after the response reads the whole partition with its
vectors (``whole``) for the hot tiers. Statements: wire.py; decision 0030.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pgvector.sqlalchemy import HALFVEC
from sqlalchemy import ColumnElement, Integer, String, bindparam, case, func, literal
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.ids import RelationshipScope
from tether.core.telemetry import traced
from tether.recall import wire
from tether.recall.bm25 import Bm25Index, Bm25Params
from tether.recall.models import Memory
from tether.recall.partition import (
    Partition,
    Read,
    RecalledMemory,
    Texts,
    Vector,
    from_rows,
    recalled_memories,
    similarity_of,
    stack_vectors,
)
from tether.recall.weights import RankWeights

# The query's vector and its dimension, bound when a read for a query executes.
_QUERY_VECTOR = bindparam("query_vector", type_=HALFVEC())
_QUERY_DIMENSION = bindparam("query_dimension", type_=Integer)
# The model whose vectors are compared (the tenant's, decision 0077): bound per read.
_MODEL = bindparam("embedding_model", type_=String)


def _texts(values: Sequence[Any]) -> Texts:
    external, content, kind, layer = (tuple(column or ()) for column in values)
    return Texts(external, content, kind, layer)


class ColdReader:
    def __init__(self, weights: RankWeights, embedding_model: str | None) -> None:
        """``embedding_model``: the model of reads that name none (None: any). Vectors of
        another model (before a re-embed) are not comparable with query vectors, so
        those memories rank lexically."""
        self._model = embedding_model
        self._params = Bm25Params(k1=weights.bm25_k1, b=weights.bm25_b)
        self._window = weights.neighbour_window
        self._for_query: dict[tuple[bool, bool], Any] = {}
        self._whole: dict[bool, Any] = {}
        # Built once: building a 5,000-memory read's statement cost ≈ 4 ms per read.
        for filtered in (True, False):
            usable: ColumnElement[bool] = Memory.embedding.is_not(None)
            if filtered:
                usable &= Memory.embedding_model == _MODEL
            # A vector of another dimension would make Postgres refuse the whole query.
            comparable = usable & (Memory.embedding_dim == _QUERY_DIMENSION)
            distance: ColumnElement[Any] = case(
                (comparable, Memory.embedding.cosine_distance(_QUERY_VECTOR)), else_=None
            )
            self._for_query[True, filtered] = wire.for_query(distance)
            self._whole[filtered] = wire.whole(
                case((usable, func.halfvec_send(Memory.embedding)), else_=None)
            )
        self._for_query[False, False] = self._for_query[False, True] = wire.for_query(literal(None))
        self._texts = wire.texts()

    def model_of(self, model: str | None) -> str | None:
        """The model a read compares: the one named, else the reader's own."""
        return self._model if model is None else model

    @traced("recall.cold")
    async def for_query(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        query_vector: Awaitable[Vector | None],
        version: str,
        terms: Sequence[str],
        model: str | None = None,
    ) -> Partition:
        """What ranking ``terms`` (and the query's vector, awaited last so that the read
        overlaps its embedding) needs of every memory of the partition."""
        # On the request's connection: a second one per request deadlocked a full pool.
        connection = await session.connection()
        now = datetime.now(UTC)
        vector = await query_vector
        params = wire.partition_params(scope, now)
        params[wire.QUERY_TERMS.key] = list(dict.fromkeys(terms))
        if vector is not None:
            params |= {_QUERY_VECTOR.key: vector, _QUERY_DIMENSION.key: len(vector)}
        model = self.model_of(model)
        if model is not None:
            params[_MODEL.key] = model
        statement = self._for_query[vector is not None, model is not None]
        sent, sessions, tokens = (await connection.execute(statement, params)).one()
        rows = wire.rows_of(sent)
        sessions, tokens = list(sessions or ()), list(tokens or ())
        if len(sessions) != len(rows) or len(tokens) != len(rows):
            raise ValueError("the arrays read are not those of the rows")
        # A memory's tokens are sent if it holds a query term, NULL otherwise.
        matched = np.flatnonzero([t is not None for t in tokens])
        split = [wire.split_tokens(tokens[i]) for i in matched.tolist()]
        lengths = rows["length"].astype(np.int64)
        bm25 = Bm25Index.for_query(lengths, matched, split, terms, self._params)
        similarity, has_vector = similarity_of(
            rows["distance"].astype(np.float32), vector is not None
        )
        read = Read(rows, sessions, bm25, has_vector, similarity=similarity)
        partition = from_rows(read, version, self._window, terms=tuple(terms), read_at=now)
        return replace(partition, embedding_model=model)

    async def texts(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        partition: Partition,
        rows: Sequence[int],
    ) -> dict[int, RecalledMemory]:
        """The memories of ``rows`` of a partition read for one query, as of the moment
        it was read: one that a write has made inactive since has none, and the rest
        carry their current expiry and privacy for the caller to check again."""
        if not rows:
            return {}
        connection = await session.connection()
        params = wire.partition_params(scope, partition.read_at or datetime.now(UTC))
        params[wire.WANTED.key] = [partition.memory_id(row) for row in rows]
        sent, *shown = (await connection.execute(self._texts, params)).one()
        found = recalled_memories(wire.rows_of(sent), _texts(shown))
        return {row: found[partition.key(row)] for row in rows if partition.key(row) in found}

    async def whole(
        self,
        session: AsyncSession,
        scope: RelationshipScope,
        version: str,
        model: str | None = None,
    ) -> Partition:
        """Every active memory of the partition, with its texts and the vectors of
        ``model`` (the reader's own if None)."""
        connection = await session.connection()
        params = wire.partition_params(scope, datetime.now(UTC))
        model = self.model_of(model)
        if model is not None:
            params[_MODEL.key] = model
        sent, sessions, tokens, *shown, vectors = (
            await connection.execute(self._whole[model is not None], params)
        ).one()
        rows = wire.rows_of(sent)
        strings = [t for t in tokens or () if t]
        flat = " ".join(strings).split(" ") if strings else []
        bm25 = Bm25Index.build_flat(flat, rows["length"].astype(np.int64), self._params)
        matrix, has_vector = stack_vectors(list(vectors or ()))
        read = Read(rows, list(sessions or ()), bm25, has_vector, matrix=matrix)
        whole = from_rows(read, version, self._window, texts=_texts(shown))
        return replace(whole, embedding_model=model)
