"""The pieces a context is made of, one builder per section: each line rendered with the
template's quoting, with the text, score and reason the items list reports. The console's
profile preview renders a persona section with ``profile_pieces`` too."""

from __future__ import annotations

import uuid

from tether.context import template
from tether.context.budget import Piece
from tether.context.tokens import truncate_to_tokens
from tether.knowledge.engine import KnowledgeResult
from tether.personas.schemas import PersonaProfileRead
from tether.profiles.models import GlobalProfileField
from tether.recall.services import Recalled
from tether.recap.schemas import Recap
from tether.turns.claims import WorkingMemoryEntry


def profile_pieces(profile: PersonaProfileRead, cap: int) -> list[Piece]:
    fields = [
        ("tone", "Tone", profile.tone),
        ("taboos", "Never", "; ".join(profile.taboos)),
        ("background", "Background", profile.background),
        ("scripts", "Phrases you use", "; ".join(profile.scripts)),
        ("notes", "Notes", profile.notes),
    ]
    pieces = []
    for kind, label, value in fields:
        if value.strip():
            text = truncate_to_tokens(value.strip(), max(cap - 20, 0))
            line = template.profile_line(label, text)
            pieces.append(Piece("profile", kind, line, text, None, "persona profile"))
    return pieces


def shared_pieces(fields: list[GlobalProfileField]) -> list[Piece]:
    pieces = []
    for f in fields:
        text = f"{f.field}: {f.value}"
        line = f"- About the user (shared with their consent): {template.quoted(text)}"
        reason = f"global profile, consent scope {f.scope}"
        pieces.append(Piece("profile", "user_profile", line, text, None, reason))
    return pieces


def knowledge_pieces(found: KnowledgeResult) -> list[Piece]:
    return [
        Piece(
            "knowledge",
            "chunk",
            template.knowledge_line(f"KB-{n}", hit.source, hit.text),
            hit.text,
            hit.score,
            f"knowledge base passage ({hit.source})",
            hit.id,
        )
        for n, hit in enumerate(found.hits, start=1)
    ]


def memory_pieces(recalled: Recalled) -> list[Piece]:
    pieces = []
    seen: set[uuid.UUID] = set()
    for record, explanation in recalled.hits:
        seen.add(record.id)
        line = template.memory_line(
            record.occurred_at.date().isoformat(), record.memory_type, record.content
        )
        pieces.append(
            Piece(
                "memory",
                record.memory_type,
                line,
                record.content,
                explanation.final_score,
                "recalled for the query",
                record.id,
            )
        )
    summary = recalled.latest_summary
    if summary is not None and summary.id not in seen:
        line = template.memory_line(
            summary.occurred_at.date().isoformat(), "summary", summary.content
        )
        pieces.append(
            Piece(
                "memory",
                "summary",
                line,
                summary.content,
                None,
                "latest session summary",
                summary.id,
            )
        )
    return pieces


def recent_pieces(entries: list[WorkingMemoryEntry]) -> list[Piece]:
    # Newest first so the budget keeps the latest turns.
    return [
        Piece(
            "recent",
            e.role,
            template.turn_line(e.role, e.at[:16].replace("T", " "), e.text),
            e.text,
            None,
            "recent turn of an open session",
            e.id,
        )
        for e in reversed(entries)
    ]


def _ago(seconds: int) -> str:
    days, hours = seconds // 86_400, seconds // 3_600
    if days >= 1:
        return f"{days} day{'s' if days > 1 else ''} ago"
    return f"{hours} hour{'s' if hours != 1 else ''} ago" if hours else "less than an hour ago"


def last_time_pieces(recap: Recap) -> list[Piece]:
    """The recap as lines: last contact, the last session, plans, feelings, open topics."""
    pieces: list[Piece] = []

    def add(kind: str, label: str, text: str, ids: list[uuid.UUID], reason: str) -> None:
        line = template.note_line(label, text)
        pieces.append(Piece("last_time", kind, line, text, None, reason, ids[0] if ids else None))

    if recap.last_contact_at is not None and recap.seconds_since_last_contact is not None:
        when = (
            f"{recap.last_contact_at.date().isoformat()} ({_ago(recap.seconds_since_last_contact)})"
        )
        add("last_contact", "Last contact", when, [], "time since the last contact")
    last = recap.last_session
    if last is not None and last.summary:
        add("last_session", "Last session", last.summary, last.memory_ids, "last session")
    for plan in recap.plans:
        due = plan.due_from.isoformat() if plan.due_from else "no date"
        add("plan", f"Plan ({plan.status}, {due})", plan.content, plan.memory_ids, "open plan")
    for feeling in recap.feelings[-3:]:
        label = f"Felt ({feeling.at.date().isoformat()})"
        add("feeling", label, feeling.content, feeling.memory_ids, "recent feeling")
    for topic in recap.unresolved_topics:
        add("topic", "Left open", topic.text, topic.memory_ids, f"unresolved ({topic.reason})")
    return pieces
