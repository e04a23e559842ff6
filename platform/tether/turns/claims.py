"""The Redis side of accepting turns, atomically per batch: idempotency keys, content
dedup, working memory and per-session counters in one round trip (a Lua script), and
its undo when a batch could not be made durable."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence

import msgspec
from redis.asyncio import Redis

from tenancy.ids import RelationshipScope
from tether.core.settings import IngestSettings
from tether.turns.pending import PendingTurn, dedup_digest

# KEYS: per turn (dedup, idempotency, session counter), then the working-memory list and
# the set of relationships with recent turns.
# ARGV: n, dedup ttl, idempotency ttl, wm cap, wm ttl, session ttl, then per turn
# (turn id, working-memory entry, has-idempotency-key), then the relationship's member name.
# Returns per turn "" (accepted) or the id of the turn it duplicates.
_CLAIM = """
local n = tonumber(ARGV[1])
local wm = KEYS[3 * n + 1]
local out = {}
local pushed = false
for i = 1, n do
  local dd, idem, sess = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local id, entry, has_idem = ARGV[3 * i + 4], ARGV[3 * i + 5], ARGV[3 * i + 6]
  local original = false
  if has_idem == '1' then original = redis.call('GET', idem) end
  if not original then
    if not redis.call('SET', dd, id, 'NX', 'EX', ARGV[2]) then
      original = redis.call('GET', dd) or id
    end
  end
  if original then
    if has_idem == '1' then redis.call('SET', idem, original, 'EX', ARGV[3]) end
    out[i] = original
  else
    if has_idem == '1' then redis.call('SET', idem, id, 'EX', ARGV[3]) end
    redis.call('LPUSH', wm, entry)
    redis.call('INCR', sess)
    redis.call('EXPIRE', sess, ARGV[6])
    pushed = true
    out[i] = ''
  end
end
if pushed then
  redis.call('LTRIM', wm, 0, tonumber(ARGV[4]) - 1)
  redis.call('EXPIRE', wm, ARGV[5])
  -- Remember that this relationship has turns in flight (see tether.turns.reconcile).
  redis.call('ZADD', KEYS[3 * n + 2], redis.call('TIME')[1], ARGV[3 * n + 7])
end
return out
"""

# Undo of accepted claims: only keys that still point at our turn ids are removed.
# KEYS as in _CLAIM for the turns to release; ARGV: n, then per turn (id, entry).
_RELEASE = """
local n = tonumber(ARGV[1])
local wm = KEYS[3 * n + 1]
for i = 1, n do
  local dd, idem, sess = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local id, entry = ARGV[2 * i], ARGV[2 * i + 1]
  if redis.call('GET', dd) == id then redis.call('DEL', dd) end
  if redis.call('GET', idem) == id then redis.call('DEL', idem) end
  redis.call('LREM', wm, 1, entry)
  redis.call('DECR', sess)
end
return n
"""

_wm_encoder = msgspec.msgpack.Encoder()


class WorkingMemoryEntry(msgspec.Struct, array_like=True, frozen=True):
    id: uuid.UUID
    session_id: str
    role: str
    text: str
    at: str


def _short(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:32]


# Relationships whose turns were accepted recently, scored by time: the reconciliation
# sweep checks that their working-memory turns all reached Postgres.
RECENT_KEY = "tether:turns:recent"


def recent_member(scope: RelationshipScope) -> str:
    return f"{scope.tenant_id}:{scope.relationship_id}"


def working_memory_key(scope: RelationshipScope) -> str:
    return f"tether:wm:{scope.tenant_id}:{scope.relationship_id}"


def session_counter_key(scope: RelationshipScope, session_id: str) -> str:
    return f"tether:sess:{scope.tenant_id}:{scope.relationship_id}:{_short(session_id)}"


def _keys(scope: RelationshipScope, turn: PendingTurn) -> list[str]:
    prefix = f"{scope.tenant_id}:{scope.relationship_id}"
    idem = turn.idempotency_key
    return [
        f"tether:dd:{prefix}:{dedup_digest(turn.role, turn.text)}",
        f"tether:idem:{prefix}:{_short(idem) if idem else 'none'}",
        session_counter_key(scope, turn.session_id),
    ]


def _entry(turn: PendingTurn) -> bytes:
    return _wm_encoder.encode(
        WorkingMemoryEntry(turn.id, turn.session_id, turn.role, turn.text, turn.at.isoformat())
    )


class TurnClaims:
    def __init__(self, redis: Redis, limits: IngestSettings) -> None:
        self._limits = limits
        self._claim = redis.register_script(_CLAIM)
        self._release = redis.register_script(_RELEASE)

    async def claim(
        self, scope: RelationshipScope, turns: Sequence[PendingTurn]
    ) -> list[uuid.UUID | None]:
        """Per turn: None if accepted, else the id of the turn it duplicates.
        Raises RedisError when Redis is away (the caller goes to Postgres)."""
        keys: list[str] = []
        args: list[str | bytes | int] = [
            len(turns),
            self._limits.dedup_window_seconds,
            self._limits.idempotency_ttl_seconds,
            self._limits.working_memory_turns,
            self._limits.working_memory_ttl_seconds,
            self._limits.idempotency_ttl_seconds,
        ]
        for turn in turns:
            keys.extend(_keys(scope, turn))
            args.extend([str(turn.id), _entry(turn), "1" if turn.idempotency_key else "0"])
        keys.extend([working_memory_key(scope), RECENT_KEY])
        args.append(recent_member(scope))
        answers = await self._claim(keys=keys, args=args)
        return [
            uuid.UUID(a.decode() if isinstance(a, bytes) else a) if a else None for a in answers
        ]

    async def release(self, scope: RelationshipScope, turns: Sequence[PendingTurn]) -> None:
        """Undo ``claim`` for turns that will not be stored, so a retry is not a duplicate."""
        keys: list[str] = []
        args: list[str | bytes | int] = [len(turns)]
        for turn in turns:
            keys.extend(_keys(scope, turn))
            args.extend([str(turn.id), _entry(turn)])
        keys.append(working_memory_key(scope))
        await self._release(keys=keys, args=args)
