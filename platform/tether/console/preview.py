"""The persona section of a context exactly as the context builder renders it (its own
piece builder, budget fitter and template), for the profile editor's live preview."""

from __future__ import annotations

from dataclasses import dataclass

from tether.context import template
from tether.context.budget import Piece, fit
from tether.context.pieces import profile_pieces
from tether.core.settings import ContextSettings
from tether.personas.schemas import PersonaProfileRead


@dataclass(frozen=True, slots=True)
class ProfilePreview:
    text: str  # the section as the model reads it (empty: nothing to say)
    tokens: int  # what it costs, heading included
    limit: int  # the profile section's budget
    left_out: list[str]  # fields the budget drops (from the end)
    truncated: list[str]  # fields cut to fit the section


def profile_preview(profile: PersonaProfileRead, budgets: ContextSettings) -> ProfilePreview:
    """As a context with default limits renders it for a user who shared no global
    profile fields (their consented fields would follow in the same section)."""
    pieces = profile_pieces(profile, budgets.profile_tokens)
    rules = Piece("rules", "rules", template.RULES, template.RULES, None, "always included")
    caps = {"rules": budgets.rules_tokens, "profile": budgets.profile_tokens}
    fitted = fit({"rules": [rules], "profile": pieces}, caps, budgets.default_max_tokens)
    chosen = fitted.chosen["profile"]
    text = template.render({"profile": [p.line for p in chosen]})
    values = {
        "tone": profile.tone,
        "taboos": "; ".join(profile.taboos),
        "background": profile.background,
        "scripts": "; ".join(profile.scripts),
        "notes": profile.notes,
    }
    truncated = [p.kind for p in pieces if p.text != values[p.kind].strip()]
    left_out = [p.kind for p in pieces[len(chosen) :]]
    return ProfilePreview(
        text, fitted.used["profile"], fitted.limits["profile"], left_out, truncated
    )
