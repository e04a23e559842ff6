"""Errors of turn ingestion."""

from __future__ import annotations

from tether.core.errors import InvalidInput, ServiceUnavailable


class InvalidTurns(InvalidInput):
    code = "invalid_turns"
    title = "The batch of turns is invalid; nothing was stored"


class IngestUnavailable(ServiceUnavailable):
    code = "ingest_unavailable"
    title = "Neither the queue nor the database took the turns; nothing was stored, retry"
