"""``extract``: one session's turns in, candidates and forget requests out."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from tether.memories.enums import MemoryType, Polarity
from tether.memories.extraction.build import Source, build, note
from tether.memories.extraction.clauses import (
    clauses,
    expand_contractions,
    is_hypothetical,
    is_question,
    polite_request,
    sentences,
)
from tether.memories.extraction.confirm import confirmed_statement
from tether.memories.extraction.forget import ForgetIntent, parse_forget
from tether.memories.extraction.normalize import is_zh, normalize_object, object_key, term_matches
from tether.memories.extraction.reading import Context, Reading, read_clause, read_request
from tether.memories.extraction.subjects import relation_of
from tether.memories.extraction.types import Candidate, Extraction, ForgetRequest, TurnText

_ZH_REMEMBER = re.compile(
    r"^(?:请|你)?(?:帮我|给我)?(?:记住|记着|记一下|记好|记下来|记下|牢记|别忘了)(?:了|哦|啊)?"
)
_EN_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|keep in mind|note|make a note|do not forget|never forget)"
    r"(?=\s+(?:that|this|i|my|we|our)\b|\s*[:,])(?:\s+that|\s+this)?[:,]?\s*",
    re.IGNORECASE,
)
_EN_REMEMBER_ANYWHERE = re.compile(
    r"\b(?:do not forget|remember that|keep in mind)\b", re.IGNORECASE
)
_EN_NAMED = re.compile(
    r"^(?:an?|one|two|my)?\s*(?P<what>[a-z]+(?:\s+[a-z]+)?)\s*,?\s+(?:named|called)"
    r"\s+(?P<name>[A-Za-z][\w'-]*)$",
    re.IGNORECASE,
)
_ZH_NAMED = re.compile(
    r"^(?:一只|一条|一个|只|条)?(?P<what>[^，,叫]{1,6})[，,]?(?:名字)?叫(?:做)?(?P<name>\w{1,6})$"
)
_GREETING = re.compile(
    r"^(?:hi|hello|hey|hiya|greetings|good (?:morning|afternoon|evening))\b", re.I
)


@dataclass
class _Session:
    candidates: list[Candidate] = field(default_factory=list)
    forget: list[ForgetRequest] = field(default_factory=list)
    previous_user: TurnText | None = None
    previous_assistant: TurnText | None = None


def _strip_remember(clause: str, zh: bool) -> tuple[str, bool]:
    stripped = (_ZH_REMEMBER if zh else _EN_REMEMBER).sub("", clause, count=1).strip(" ，,：:")
    return stripped, stripped != clause


def _candidates(reading: Reading, source: Source) -> list[Candidate]:
    built = (build(hit, reading, source) for hit in reading.hits)
    found = [candidate for candidate in built if candidate is not None]
    named = (_named(hit.object, source) for hit in reading.hits if hit.predicate == "has")
    return found + [candidate for candidate in named if candidate is not None]


def _named(thing: str, source: Source) -> Candidate | None:
    """ "I have a dog named Mochi" / 我养了一只猫叫团子: the pet's (or person's) name too."""
    match = (_ZH_NAMED if source.zh else _EN_NAMED).match(thing.strip())
    entity = relation_of(match["what"], source.zh) if match else None
    if match is None or entity is None:
        return None
    what, name = entity.relation_text, match["name"]
    return Candidate(
        memory_type=MemoryType.FACT,
        subject=entity.label,
        predicate="name",
        object=normalize_object(name, source.zh),
        polarity=Polarity.AFFIRMED,
        content=f"用户的{what}叫{name}" if source.zh else f"The user's {what} is called {name}",
        importance=0.85,
        confidence=0.85,
        exclusive=True,
        valid_from=source.at,
        expires_at=None,
        source_turn_ids=source.turn_ids,
    )


def _next_topic(reading: Reading, ctx: Context, found: list[Candidate]) -> Context:
    """Chinese chains clauses on one topic; a pet or person just introduced becomes it."""
    topic, last = reading.subject or ctx.topic, ctx.last_relation
    if reading.subject and reading.subject.label != "user":
        last = reading.subject
    for candidate in found:
        if candidate.predicate == "has" and (entity := relation_of(candidate.object, ctx.zh)):
            topic = last = entity
    return replace(ctx, topic=topic, last_relation=last)


def _forget(
    intent: ForgetIntent, turn: TurnText, found: list[Candidate], session: _Session
) -> None:
    """Record a forget request and drop what it covers from this session's candidates."""
    if intent.about:
        terms = _terms(intent.about, turn)
        session.candidates = [c for c in session.candidates if not _covered(terms, c)]
        found[:] = [c for c in found if not _covered(terms, c)]
        refers: tuple[uuid.UUID, ...] = ()
    elif found:  # "我最近在看心理医生，这个别记": this very turn
        terms, refers = tuple(c.object for c in found), (turn.id,)
        found.clear()
    elif session.previous_user is not None:
        previous = session.previous_user.id
        dropped = [c for c in session.candidates if previous in c.source_turn_ids]
        session.candidates = [c for c in session.candidates if previous not in c.source_turn_ids]
        terms, refers = tuple(c.object for c in dropped), (previous,)
    else:
        terms, refers = (), ()
    session.forget.append(ForgetRequest(tuple(dict.fromkeys(terms)), turn.id, refers))


def _covered(terms: tuple[str, ...], candidate: Candidate) -> bool:
    return any(
        term_matches(term, candidate.subject, candidate.object, candidate.content) for term in terms
    )


def _terms(about: str, turn: TurnText) -> tuple[str, ...]:
    """What a "forget X" names: the objects X states, else X itself."""
    zh = is_zh(about)
    reading = read_clause(about, Context(zh, turn.at))
    source = Source((turn.id,), turn.at, zh)
    objects = [c.object for c in _candidates(reading, source)] if reading else []
    return tuple(objects) or (normalize_object(about, zh),)


@dataclass
class _Turn:
    """What reading one user turn accumulates."""

    turn: TurnText
    source: Source
    found: list[Candidate] = field(default_factory=list)
    note_next: bool = False  # "记住：" / "Remember this:" stood alone; the next clause is the note


def _take(reading: Reading, clause: str, state: _Turn, ctx: Context) -> Context:
    here = _candidates(reading, state.source)
    if not here and state.note_next:
        here = [c for c in [note(clause, state.source)] if c]
    state.found += here
    state.note_next = False
    return _next_topic(reading, ctx, here)


def _read_clause(clause: str, state: _Turn, ctx: Context, session: _Session) -> Context | None:
    """Read one clause into ``state``; ``None`` ends the sentence (a hypothetical)."""
    zh = state.source.zh
    if intent := parse_forget(clause, zh):
        _forget(intent, state.turn, state.found, session)
        return ctx
    clause, asked = _strip_remember(clause, zh)
    if asked:
        state.source = replace(state.source, remember=True)
        state.note_next = True
    if not clause:
        return ctx
    if is_hypothetical(clause, zh):
        return None  # the rest of the sentence is the consequence: 假如…，我就…
    if (request := polite_request(clause, zh)) is not None:
        reading = read_request(request, ctx)
        return _take(reading, clause, state, ctx) if reading else ctx
    if is_question(clause, zh):
        return ctx
    reading = read_clause(clause, ctx)
    if reading is None:
        return replace(ctx, topic=None)
    return _take(reading, clause, state, ctx)


def _read_text(text: str, state: _Turn, ctx: Context, session: _Session) -> Context:
    """Every clause of one user turn; returns the context for the next turn."""
    for number, sentence in enumerate(sentences(text, state.source.zh)):
        if number:
            ctx = replace(ctx, topic=None)  # a topic chain ends with its sentence
        parts = clauses(sentence, state.source.zh)
        if not parts and not state.source.zh and sentence.rstrip().endswith("?"):
            parts = [sentence]  # "Could you…?" is dropped as a question unless it is a request
        for clause in parts:
            next_ctx = _read_clause(clause, state, ctx, session)
            if next_ctx is None:
                break
            ctx = next_ctx
    session.candidates += state.found
    return ctx


def _confirmations(turn: TurnText, session: _Session, ctx: Context) -> None:
    """The assistant asked "你是不是很喜欢健身呀？" and the user said "对呀": the question,
    in the user's voice, is kept (a "no" only negates a liking)."""
    asked = session.previous_assistant
    if asked is None:
        return
    zh = is_zh(asked.text)
    answer = confirmed_statement(asked.text, turn.text, zh)
    if answer is None:
        return
    statement, affirmed = answer
    reading = read_clause(statement if zh else expand_contractions(statement), replace(ctx, zh=zh))
    if reading is None:
        return
    source = Source((asked.id, turn.id), turn.at, zh, confirmed=True)
    found = _candidates(reading, source)
    if not affirmed:
        # A "no" only negates a liking; the sentence is rewritten to say what the user
        # meant ("The user does not like coffee"), not what the assistant asked.
        found = [
            replace(
                c,
                polarity=_flip(c.polarity),
                content=_negated_liking(c.object, zh)
                if c.polarity is Polarity.AFFIRMED
                else c.content,
            )
            for c in found
            if c.memory_type is MemoryType.PREFERENCE
        ]
    session.candidates.extend(found)


def _negated_liking(thing: str, zh: bool) -> str:
    return f"用户不喜欢{thing}" if zh else f"The user does not like {thing}"


def _flip(polarity: Polarity) -> Polarity:
    return Polarity.NEGATED if polarity is Polarity.AFFIRMED else Polarity.AFFIRMED


def _dedupe(candidates: list[Candidate]) -> list[Candidate]:
    """Repeats within a session merge into the latest statement on the same thing,
    unless a statement of the other polarity came in between."""
    kept: list[Candidate] = []
    for candidate in candidates:
        same = [
            i
            for i, c in enumerate(kept)
            if (c.subject, c.predicate, c.memory_type)
            == (candidate.subject, candidate.predicate, candidate.memory_type)
            and object_key(c.object) == object_key(candidate.object)
        ]
        if same and kept[same[-1]].polarity is candidate.polarity:
            old = kept[same[-1]]
            kept[same[-1]] = replace(
                old,
                importance=max(old.importance, candidate.importance),
                confidence=max(old.confidence, candidate.confidence),
                provenance=max(old.provenance, candidate.provenance, key=lambda p: p.evidence),
                source_turn_ids=tuple(
                    dict.fromkeys(old.source_turn_ids + candidate.source_turn_ids)
                ),
            )
        else:
            kept.append(candidate)
    return kept


def extract(turns: Sequence[TurnText]) -> Extraction:
    """Rule-based candidates and forget requests from one session's turns in time order.

    Only the user's statements count; an assistant question counts when the user
    confirms it. Candidates a forget request of the same session covers are left out.
    """
    session = _Session()
    ctx: Context | None = None
    for turn in turns:
        if turn.role == "assistant":
            session.previous_assistant = turn
            continue
        if turn.role != "user":
            continue
        zh = is_zh(turn.text)
        text = turn.text if zh else expand_contractions(turn.text)
        asked = session.previous_assistant
        ctx = Context(
            zh,
            turn.at,
            # a pet or person introduced at the end of the last turn: "叫什么？" — "叫可乐"
            topic=ctx.topic if ctx and ctx.topic and ctx.topic.label != "user" else None,
            last_relation=ctx.last_relation if ctx else None,
            greeting=bool(_GREETING.match(text)),
            answering=asked is not None and asked.text.rstrip().endswith(("?", "？", "吗")),
        )
        _confirmations(turn, session, ctx)
        remember = not zh and bool(_EN_REMEMBER_ANYWHERE.search(text))
        state = _Turn(turn, Source((turn.id,), turn.at, zh, remember=remember))
        ctx = _read_text(text, state, ctx, session)
        session.previous_user, session.previous_assistant = turn, None
    return Extraction(_dedupe(session.candidates), session.forget)
