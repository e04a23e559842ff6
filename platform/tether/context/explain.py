"""What went into a context and what did not: the console's playground shows the exact
answer of POST /v1/context for a message together with each recalled memory's ranking
(lexical rank, vector rank, decay, final score) and the pieces the budget left out."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from tether.context.budget import PRIORITY, Fitted, Piece
from tether.context.schemas import ContextResponse
from tether.context.tokens import estimate_tokens
from tether.recall.schemas import ExplanationRead
from tether.recall.services import Recalled, explanation


@dataclass(frozen=True, slots=True)
class Assembled:
    response: ContextResponse
    recalled: Recalled
    candidates: dict[str, list[Piece]]
    caps: dict[str, int]
    fitted: Fitted


@dataclass(frozen=True, slots=True)
class LeftOut:
    section: str
    kind: str
    id: uuid.UUID | None
    text: str
    tokens: int
    score: float | None
    why: str  # "section_budget" or "overall_limit"


@dataclass(frozen=True, slots=True)
class ExplainedContext:
    response: ContextResponse
    # Every memory recall returned (chosen or not), by id, with why it ranked where it did.
    explanations: dict[uuid.UUID, ExplanationRead]
    left_out: list[LeftOut]
    recalled: int


def explain(assembled: Assembled) -> ExplainedContext:
    recalled = assembled.recalled
    explanations = {
        record.id: explanation(e, recalled.neighbours.get(record.id)) for record, e in recalled.hits
    }
    fitted = assembled.fitted
    left_out = []
    for section in PRIORITY:
        chosen = {id(p) for p in fitted.chosen.get(section, [])}
        # The overall limit cut this section's own budget: that is why it ran out.
        why = (
            "overall_limit"
            if fitted.limits.get(section, 0) < assembled.caps.get(section, 0)
            else "section_budget"
        )
        for piece in assembled.candidates.get(section, []):
            if id(piece) not in chosen:
                cost = fitted.costs.get(id(piece), estimate_tokens(piece.line))
                left_out.append(
                    LeftOut(section, piece.kind, piece.id, piece.text, cost, piece.score, why)
                )
    return ExplainedContext(assembled.response, explanations, left_out, len(recalled.hits))
