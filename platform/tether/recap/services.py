"""The recap of a relationship for the start of a session: time since the last contact,
the last session in short, open plans with their dates, the recent feelings and what was
left open. Rule-based and read-only; every item names the memories and turns it is from."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.principal import Principal
from tenancy.ids import RelationshipScope
from tenancy.relationships.directory import RelationshipDirectory
from tether.memories.extraction import TurnText, summarize_session
from tether.providers.base import ChatProvider
from tether.recall.models import Memory
from tether.recall.services import may_see_private
from tether.recap import rules
from tether.recap import schemas as s
from tether.recap.dates import plan_date
from tether.recap.llm import llm_summary
from tether.recap.repositories import RecapRepository
from tether.turns.models import ChatSession, Turn

# How far back a passed plan is still worth asking about, and feelings still "recent".
PASSED_PLANS = timedelta(days=14)
UNDATED_PLANS = timedelta(days=60)
FEELINGS = timedelta(days=30)
MAX_PLANS, MAX_FEELINGS, MAX_TURNS = 50, 6, 500
SUMMARY_CHARS = 280


def _day(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _status(start: datetime, end: datetime, as_of: datetime) -> s.PlanStatus | None:
    if end <= _day(as_of):
        return "overdue" if as_of - end <= PASSED_PLANS else None
    return "upcoming" if start > as_of else "due"


class RecapService:
    def __init__(
        self,
        session: AsyncSession,
        directory: RelationshipDirectory,
        principal: Principal,
        enforcer: PolicyEnforcer,
        chat: ChatProvider | None = None,
    ) -> None:
        self._chat = chat  # only GET /recap passes one: never on the context's path
        self._session = session
        self._directory = directory
        self._principal = principal
        self._enforcer = enforcer

    async def recap(
        self,
        relationship_id: uuid.UUID,
        as_of: datetime | None = None,
        current_session: str | None = None,
    ) -> s.Recap:
        """The recap as of ``as_of`` (now), leaving out ``current_session``."""
        card = await self._directory.open(relationship_id)
        return await self.for_scope(card.scope, as_of or datetime.now(UTC), current_session)

    async def for_scope(
        self, scope: RelationshipScope, as_of: datetime, current_session: str | None
    ) -> s.Recap:
        repo = RecapRepository(self._session, scope)
        private = may_see_private(self._enforcer, self._principal)
        sessions = [
            x for x in await repo.latest_sessions(as_of, 2) if x.session_id != current_session
        ]
        last = sessions[0] if sessions else None
        last_session = await self._last_session(repo, last, private) if last else None
        plans = await self._plans(repo, as_of, private)
        feelings = await self._feelings(repo, as_of, private)
        topics = await self._topics(repo, last, private) if last else []
        contact = last.last_turn_at if last else None
        return s.Recap(
            relationship_id=scope.relationship_id,
            as_of=as_of,
            last_contact_at=contact,
            seconds_since_last_contact=int((as_of - contact).total_seconds()) if contact else None,
            last_session=last_session,
            plans=plans,
            feelings=feelings,
            trajectory=rules.trajectory([rules.valence(f.feeling) for f in feelings]),  # type: ignore[arg-type]
            unresolved_topics=topics,
            empty=last is None and not plans and not feelings,
        )

    async def _last_session(
        self, repo: RecapRepository, last: ChatSession, private: bool
    ) -> s.RecapSession:
        memories = await repo.session_memories(last.session_id, private)
        turns = await repo.session_turns(last.session_id, MAX_TURNS)
        stored = [m for m in memories if m.memory_type == "summary"]
        summary, source = (stored[0].content, "memory") if stored else (None, None)
        if self._chat is not None and turns:
            by_llm = await llm_summary(self._chat, turns)
            if by_llm is not None:
                summary, source = by_llm, "llm"
        if summary is None and turns:
            texts = [TurnText(t.id, t.role, t.text, t.at) for t in turns]
            summary = summarize_session(texts, SUMMARY_CHARS)
            source = "rules" if summary else None
        return s.RecapSession(
            session_id=last.session_id,
            opened_at=last.opened_at,
            last_turn_at=last.last_turn_at,
            ended=last.ended_at is not None,
            turn_count=last.turn_count,
            summary=summary,
            summary_source=source,  # type: ignore[arg-type]
            memory_ids=[m.id for m in memories],
            turn_ids=[t.id for t in turns if t.role == "user"],
        )

    async def _plans(
        self, repo: RecapRepository, as_of: datetime, private: bool
    ) -> list[s.RecapPlan]:
        memories = await repo.commitments(as_of - PASSED_PLANS, private, MAX_PLANS)
        sources = {
            t.id: t for t in await repo.turns([i for m in memories for i in m.source_turn_ids])
        }
        said_at = {m.id: self._said_at(m, sources) for m in memories}
        memories = [m for m in memories if said_at[m.id] <= as_of]
        if not memories:
            return []
        later = await repo.user_turns_since(min(said_at.values()), as_of, MAX_TURNS)
        plans = []
        for memory in memories:
            plan = self._plan(memory, sources, said_at[memory.id], later, as_of)
            if plan is not None:
                plans.append(plan)
        order = {"overdue": 0, "due": 1, "upcoming": 2, "undated": 3}
        return sorted(plans, key=lambda p: (order[p.status], p.due_from or p.said_at.date()))

    @staticmethod
    def _said_at(memory: Memory, sources: dict[uuid.UUID, Turn]) -> datetime:
        times = [sources[t].at for t in memory.source_turn_ids if t in sources]
        return min(times) if times else memory.created_at

    def _plan(
        self,
        memory: Memory,
        sources: dict[uuid.UUID, Turn],
        said: datetime,
        later: Sequence[Turn],
        as_of: datetime,
    ) -> s.RecapPlan | None:
        own = [sources[t] for t in memory.source_turn_ids if t in sources]
        if any(
            t.at > said
            and t.id not in memory.source_turn_ids
            and rules.cancels(t.text, memory.object, memory.content)
            for t in later
        ):
            return None  # called off later: never recapped as open
        text = " ".join(t.text for t in own if t.role == "user") or memory.content
        when = plan_date(text, said)
        if when.start is None or when.end is None:
            if as_of - said > UNDATED_PLANS:
                return None
            status: s.PlanStatus = "undated"
        else:
            dated = _status(when.start, when.end, as_of)
            if dated is None:
                return None
            status = dated
        return s.RecapPlan(
            content=memory.content,
            status=status,
            due_from=when.start.date() if when.start else None,
            due_until=(when.end - timedelta(days=1)).date() if when.end else None,
            said_at=said,
            unresolved=when.unresolved,
            memory_ids=[memory.id],
            turn_ids=[t.id for t in own],
        )

    async def _feelings(
        self, repo: RecapRepository, as_of: datetime, private: bool
    ) -> list[s.RecapFeeling]:
        rows = await repo.feelings(as_of - FEELINGS, as_of, private, MAX_FEELINGS)
        return [
            s.RecapFeeling(
                at=m.occurred_at,
                feeling=m.object,
                content=m.content,
                current=m.is_active and m.superseded_by is None,
                memory_ids=[m.id],
            )
            for m in rows
        ]

    async def _topics(
        self, repo: RecapRepository, last: ChatSession, private: bool
    ) -> list[s.RecapTopic]:
        turns = await repo.session_turns(last.session_id, MAX_TURNS)
        memories = await repo.session_memories(last.session_id, private)
        topics = []
        for index, turn in enumerate(turns):
            if turn.role != "user":
                continue
            reason = None
            if rules.deferred(turn.text):
                reason = "deferred"
            elif rules.is_question(turn.text) and all(t.role == "user" for t in turns[index + 1 :]):
                reason = "unanswered_question"
            if reason is not None:
                topics.append(
                    s.RecapTopic(
                        text=turn.text[:SUMMARY_CHARS],
                        reason=reason,  # type: ignore[arg-type]
                        at=turn.at,
                        turn_ids=[turn.id],
                        memory_ids=[m.id for m in memories if turn.id in m.source_turn_ids],
                    )
                )
        return topics
