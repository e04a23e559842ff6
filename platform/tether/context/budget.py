"""Fitting pieces into per-section token budgets under one overall limit.

Sections are filled in priority order (rules, profile, last time when asked for, memory,
knowledge, recent turns);
each takes at most its own cap and what the overall limit leaves. Within a section
pieces come best first and the first one that does not fit ends the section, so the
lowest-scored are the ones dropped.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from tether.context.tokens import estimate_tokens

PRIORITY = ("rules", "profile", "last_time", "memory", "knowledge", "recent")
# A heading and the blank line before it.
SECTION_OVERHEAD = 12


@dataclass(frozen=True, slots=True)
class Piece:
    section: str
    kind: str
    line: str  # as rendered
    text: str  # the underlying text, for the items list
    score: float | None
    reason: str
    id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class Fitted:
    chosen: dict[str, list[Piece]]
    costs: dict[int, int]  # id(piece) → its estimated tokens (each piece is counted once)
    used: dict[str, int]
    dropped: dict[str, int]
    limits: dict[str, int]


def fit(pieces: dict[str, list[Piece]], caps: dict[str, int], max_tokens: int) -> Fitted:
    remaining = max_tokens
    costs: dict[int, int] = {}
    chosen: dict[str, list[Piece]] = {}
    used: dict[str, int] = {}
    dropped: dict[str, int] = {}
    limits: dict[str, int] = {}
    for section in (name for name in PRIORITY if name in pieces):
        candidates = pieces.get(section, [])
        limit = max(0, min(caps.get(section, 0), remaining))
        limits[section] = limit
        taken: list[Piece] = []
        spent = SECTION_OVERHEAD if candidates else 0
        for index, piece in enumerate(candidates):
            cost = estimate_tokens(piece.line) + 1
            costs[id(piece)] = cost - 1
            if spent + cost > limit:
                dropped[section] = len(candidates) - index
                break
            taken.append(piece)
            spent += cost
        if not taken:
            spent = 0
        chosen[section] = taken
        used[section] = spent
        dropped.setdefault(section, 0)
        remaining -= spent
    return Fitted(chosen, costs, used, dropped, limits)
