"""Which broker queue each task goes to, for the API's sender and the worker alike.

One queue per kind of work, because Celery takes each queue's tasks in order: with one
queue, a backlog of slow work (an extraction waits on an LLM; a document takes minutes
to index) held back the storing of every turn accepted after it. A worker consuming
several queues takes from them in turn, so turns wait behind at most one task of each
other queue; deployments that need more isolation run workers for one queue each
(``TETHER_WORKER__QUEUES``).
"""

from __future__ import annotations

from typing import Final

# Making accepted turns durable, and what closes sessions: the write path.
TURNS: Final = "turns"
# Extraction, reinforcement and expiry of memories; sealing and checkpoints of the audit.
MEMORIES: Final = "memories"
# Indexing knowledge-base documents.
KNOWLEDGE: Final = "knowledge"
# The one queue of versions before these: a worker still drains it, so that tasks
# published by API processes of the previous version during a rolling upgrade run.
LEGACY: Final = "celery"

ALL: Final = (TURNS, MEMORIES, KNOWLEDGE, LEGACY)

# Task names are ``<domain>.<verb>``; a task of no listed domain goes to TURNS.
ROUTES: Final = {
    "turns.*": {"queue": TURNS},
    "sessions.*": {"queue": TURNS},
    "system.*": {"queue": TURNS},
    "memories.*": {"queue": MEMORIES},
    "audit.*": {"queue": MEMORIES},
    "knowledge.*": {"queue": KNOWLEDGE},
}
DEFAULT: Final = TURNS
