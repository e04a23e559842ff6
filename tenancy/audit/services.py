"""Reading, exporting and verifying a tenant's audit log (compliance and admin)."""

from __future__ import annotations

import hmac
import uuid
from datetime import datetime

import msgspec
from msgspec.structs import replace
from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.audit import signing
from tenancy.audit.anchors import anchor_signed, latest_anchor
from tenancy.audit.chain import GENESIS, HASHED_FIELDS, event_hash
from tenancy.audit.checkpoints import latest_checkpoint, signed
from tenancy.audit.keys import chain_key
from tenancy.audit.models import AuditAccessEvent, AuditChainHead, AuditEvent
from tenancy.audit.schemas import (
    AccessReportEntry,
    AuditEventRead,
    AuditPage,
    AuditPublicKey,
    AuditVerification,
    CheckpointRead,
)
from tenancy.audit.sealing import SEAL_ACTION, batch_root
from tether.core.errors import BadRequest
from tether.core.ids import TenantId
from tether.core.pagination import decode_cursor, next_cursor

VERIFY_BATCH = 1000
_EQUAL = (
    "action",
    "object",
    "decision",
    "relationship_id",
    "global_user_id",
    "actor_key_id",
    "actor_role",
)


def read(e: AuditEvent) -> AuditEventRead:
    return AuditEventRead(
        e.id,
        e.seq,
        e.at,
        e.actor_key_id,
        e.actor_role,
        e.actor_subject,
        e.action,
        e.object,
        e.decision,
        e.matched_rule,
        e.relationship_id,
        e.global_user_id,
        e.request_id,
        e.detail,
        e.prev_hash,
        e.hash,
    )


class AuditFilterInvalid(BadRequest):
    code = "audit_filter_invalid"


DECISIONS = ("allow", "deny")


class AuditFilter(msgspec.Struct):
    action: str | None = None
    object: str | None = None
    decision: str | None = None
    relationship_id: uuid.UUID | None = None
    global_user_id: uuid.UUID | None = None
    since: datetime | None = None
    until: datetime | None = None
    actor_key_id: uuid.UUID | None = None
    actor_role: str | None = None

    def checked(self) -> AuditFilter:
        """Itself, or a 400 naming what is wrong (a time without zone, an empty range,
        a decision that is neither ``allow`` nor ``deny``)."""
        for name in ("since", "until"):
            value: datetime | None = getattr(self, name)
            if value is not None and value.tzinfo is None:
                raise AuditFilterInvalid(f"{name} needs a time zone (e.g. 2026-12-07T18:00:00Z)")
        if self.since and self.until and self.since >= self.until:
            raise AuditFilterInvalid("since must be before until")
        if self.decision is not None and self.decision not in DECISIONS:
            raise AuditFilterInvalid("decision must be allow or deny")
        return self

    def criteria(self) -> list[ColumnElement[bool]]:
        found: list[ColumnElement[bool]] = []
        for name in _EQUAL:
            value = getattr(self, name)
            if value is not None:
                found.append(getattr(AuditEvent, name) == value)
        if self.since is not None:
            found.append(AuditEvent.at >= self.since)
        if self.until is not None:
            found.append(AuditEvent.at < self.until)
        return found


class AuditService:
    def __init__(self, session: AsyncSession, tenant_id: TenantId) -> None:
        self._session = session
        self._tenant_id = tenant_id

    async def page(
        self, where: AuditFilter, cursor: str | None, limit: int, *, newest_first: bool = False
    ) -> AuditPage:
        """One page of matching events by id (time order), oldest or newest first."""
        order = AuditEvent.id.desc() if newest_first else AuditEvent.id
        statement = (
            select(AuditEvent)
            .where(AuditEvent.tenant_id == self._tenant_id, *where.criteria())
            .order_by(order)
            .limit(limit)
        )
        after = decode_cursor(cursor)
        if after is not None:
            beyond = AuditEvent.id < after if newest_first else AuditEvent.id > after
            statement = statement.where(beyond)
        rows = list((await self._session.execute(statement)).scalars())
        return AuditPage([read(r) for r in rows], next_cursor(rows, limit))

    def public_key(self) -> AuditPublicKey:
        """The tenant's Ed25519 public key (derived, never stored: no query)."""
        key = signing.public_key(self._tenant_id)
        return AuditPublicKey(
            self._tenant_id,
            signing.ALGORITHM,
            signing.key_id(key),
            signing.encoded(key),
            signing.pem(key),
        )

    async def link(self, event_id: uuid.UUID) -> AuditLink | None:
        """An event with its neighbours in the chain, and whether its own hash and its
        link to the previous event still hold."""
        row = await self._row(AuditEvent.id == event_id)
        if row is None:
            return None
        previous = await self._row(AuditEvent.seq == row.seq - 1) if row.seq > 1 else None
        following = await self._row(AuditEvent.seq == row.seq + 1)
        fields = {name: getattr(row, name) for name in HASHED_FIELDS}
        expected_prev = GENESIS if row.seq == 1 else (previous.hash if previous else None)
        anchor = await latest_anchor(self._session, self._tenant_id)
        if previous is None and anchor is not None and anchor.seq == row.seq - 1:
            expected_prev = anchor.hash  # the previous event was removed by retention
        key = chain_key(row.tenant_id) if row.seq >= await self._keyed_from() else None
        return AuditLink(
            read(row),
            None if previous is None else read(previous),
            None if following is None else read(following),
            content_ok=event_hash(row.prev_hash, fields, key) == row.hash,
            link_ok=expected_prev is not None and row.prev_hash == expected_prev,
        )

    async def _row(self, *where: ColumnElement[bool]) -> AuditEvent | None:
        statement = select(AuditEvent).where(AuditEvent.tenant_id == self._tenant_id, *where)
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def length(self) -> int:
        """How many events the chain holds (its head's sequence number)."""
        statement = select(AuditChainHead.seq).where(AuditChainHead.tenant_id == self._tenant_id)
        return int((await self._session.execute(statement)).scalar_one_or_none() or 0)

    async def verify(self, checkpoint: CheckpointRead | None = None) -> AuditVerification:
        """Recompute the chain from the first event: every hash or MAC, every link, no
        gaps, every sealed batch of access events; then the tail against the head row,
        the latest stored checkpoint and ``checkpoint`` (one kept outside Tether)."""
        step = await self.start()
        while not step.done:
            step = await self.verify_step(step, VERIFY_BATCH)
        if step.bad_id is None and step.reason is None:
            step = await self._anchors(step, checkpoint)
        return AuditVerification(
            step.bad_id is None and step.reason is None,
            step.checked,
            step.bad_id,
            step.bad_seq,
            step.reason,
            step.sealed,
            await self._unsealed(),
            step.checkpoints,
            step.anchored_at,
        )

    async def start(self) -> VerifyStep:
        """Where verification begins: the genesis hash, or the latest retention anchor
        (decision 0072) when the oldest events were removed; an anchor whose signature
        is not the server's stops verification there."""
        anchor = await latest_anchor(self._session, self._tenant_id)
        if anchor is None:
            return VerifyStep()
        if anchor.tenant_id != self._tenant_id or not anchor_signed(anchor):
            return VerifyStep(
                done=True,
                bad_seq=anchor.seq + 1,
                reason=f"the retention anchor at seq {anchor.seq} is not signed by this "
                "server for this tenant (it was forged or changed)",
            )
        return VerifyStep(after_seq=anchor.seq, prev_hash=anchor.hash, anchored_at=anchor.seq)

    async def verify_step(self, step: VerifyStep, limit: int) -> VerifyStep:
        """Check the next ``limit`` events after ``step`` (a long chain is verified in
        steps, so a page can show progress)."""
        step = await self._past_pruned(step)
        checked, prev_hash, after, sealed = (
            step.checked,
            step.prev_hash,
            step.after_seq,
            step.sealed,
        )
        keyed_from = await self._keyed_from()
        statement = (
            select(AuditEvent)
            .where(AuditEvent.tenant_id == self._tenant_id, AuditEvent.seq > after)
            .order_by(AuditEvent.seq)
            .limit(limit)
        )
        rows = list((await self._session.execute(statement)).scalars())
        for row in rows:
            problem = _problem(row, prev_hash, after + 1, keyed_from)
            if problem is None and row.action == SEAL_ACTION:
                problem = await self._seal_problem(row)
            if problem is not None:
                return replace(
                    step,
                    done=True,
                    bad_id=row.id,
                    bad_seq=row.seq,
                    reason=problem,
                    checked=checked,
                    after_seq=after,
                    prev_hash=prev_hash,
                    sealed=sealed,
                )
            if row.action == SEAL_ACTION:
                sealed += int(row.detail.get("count", 0))
            prev_hash, after = row.hash, row.seq
            checked += 1
        return replace(
            step,
            checked=checked,
            after_seq=after,
            prev_hash=prev_hash,
            sealed=sealed,
            done=len(rows) < limit,
        )

    async def _past_pruned(self, step: VerifyStep) -> VerifyStep:
        """If retention removed events beyond ``step`` since verification began, go on
        from its newer (signed) anchor rather than report the removed prefix as a gap."""
        anchor = await latest_anchor(self._session, self._tenant_id)
        if anchor is None or anchor.seq <= step.after_seq or not anchor_signed(anchor):
            return step
        return replace(step, after_seq=anchor.seq, prev_hash=anchor.hash, anchored_at=anchor.seq)

    async def finish(self, step: VerifyStep) -> VerifyStep:
        """After the last step found no bad link: the tail against the head row and the
        latest signed checkpoint (what ``verify`` checks last)."""
        if step.bad_id is not None or step.reason is not None:
            return step
        return await self._anchors(step, None)

    async def _keyed_from(self) -> int:
        statement = select(AuditChainHead.keyed_from).where(
            AuditChainHead.tenant_id == self._tenant_id
        )
        return int((await self._session.execute(statement)).scalar_one_or_none() or 1)

    async def _seal_problem(self, seal: AuditEvent) -> str | None:
        statement = (
            select(AuditAccessEvent)
            .where(
                AuditAccessEvent.tenant_id == self._tenant_id,
                AuditAccessEvent.sealed_seq == seal.seq,
            )
            .order_by(AuditAccessEvent.id)
        )
        rows = list((await self._session.execute(statement)).scalars())
        if len(rows) != seal.detail.get("count"):
            return (
                f"access batch sealed at seq {seal.seq}: {len(rows)} events, the seal "
                f"counted {seal.detail.get('count')} (an access event was removed or added)"
            )
        if batch_root(self._tenant_id, rows) != seal.detail.get("root"):
            return (
                f"access batch sealed at seq {seal.seq}: its Merkle root does not match "
                "(an access event was changed)"
            )
        return None

    async def _unsealed(self) -> int:
        statement = select(func.count()).where(
            AuditAccessEvent.tenant_id == self._tenant_id, AuditAccessEvent.sealed_seq.is_(None)
        )
        return int((await self._session.execute(statement)).scalar_one())

    async def _anchors(self, step: VerifyStep, given: CheckpointRead | None) -> VerifyStep:
        """The tail: the head row and the checkpoints must not point past the chain."""
        length = await self.length()
        if length != step.after_seq:
            return replace(
                step,
                bad_seq=step.after_seq + 1,
                reason=f"the chain ends at seq {step.after_seq} but its head says {length} "
                "(events were removed from the tail)",
            )
        anchors = [c for c in (await latest_checkpoint(self._session, self._tenant_id), given) if c]
        for count, checkpoint in enumerate(anchors, start=1):
            problem = await self._checkpoint_problem(checkpoint, step.after_seq)
            if problem is not None:
                return replace(
                    step,
                    bad_seq=min(checkpoint.seq, step.after_seq + 1),
                    reason=problem,
                    checkpoints=count,
                )
        return replace(step, checkpoints=len(anchors))

    async def _checkpoint_problem(self, checkpoint: CheckpointRead, last_seq: int) -> str | None:
        if checkpoint.tenant_id != self._tenant_id or not signed(checkpoint):
            return (
                "the checkpoint's signature does not match "
                "(it was not made by this server for this tenant)"
            )
        if checkpoint.seq > last_seq:
            return (
                f"the chain ends at seq {last_seq} but a checkpoint of {checkpoint.at.isoformat()} "
                f"saw seq {checkpoint.seq} (the tail was truncated)"
            )
        if checkpoint.seq == 0:
            return None
        anchor = await latest_anchor(self._session, self._tenant_id)
        if anchor is not None and checkpoint.seq <= anchor.seq:
            # Retention removed that event; its signature still says the chain was
            # that long then, and only the anchored link can still be compared.
            if checkpoint.seq == anchor.seq and checkpoint.hash != anchor.hash:
                return f"the retention anchor at seq {anchor.seq} disagrees with a checkpoint"
            return None
        row = await self._row(AuditEvent.seq == checkpoint.seq)
        if row is None or row.hash != checkpoint.hash:
            return (
                f"event {checkpoint.seq} no longer has the hash a checkpoint recorded "
                "(the chain was rewritten)"
            )
        return None

    async def access_report(self, global_user_id: uuid.UUID) -> list[AccessReportEntry]:
        """Every access to one global user's profile, grouped by the relationship it was
        for, the acting role and key, the action and the decision."""
        statement = (
            select(
                AuditEvent.relationship_id,
                AuditEvent.actor_role,
                AuditEvent.actor_key_id,
                AuditEvent.action,
                AuditEvent.object,
                AuditEvent.decision,
                func.count(),
                func.min(AuditEvent.at),
                func.max(AuditEvent.at),
            )
            .where(
                AuditEvent.tenant_id == self._tenant_id,
                AuditEvent.global_user_id == global_user_id,
            )
            .group_by(*_REPORT_GROUP)
            .order_by(func.max(AuditEvent.at).desc())
            .limit(500)
        )
        return [AccessReportEntry(*row) for row in await self._session.execute(statement)]


_REPORT_GROUP = (
    AuditEvent.relationship_id,
    AuditEvent.actor_role,
    AuditEvent.actor_key_id,
    AuditEvent.action,
    AuditEvent.object,
    AuditEvent.decision,
)


class AuditLink(msgspec.Struct):
    event: AuditEventRead
    previous: AuditEventRead | None
    following: AuditEventRead | None
    content_ok: bool
    link_ok: bool


class VerifyStep(msgspec.Struct, frozen=True):
    """Where a verification stands: events checked, the last good link, and the first
    bad event once found."""

    checked: int = 0
    after_seq: int = 0
    prev_hash: str = GENESIS
    done: bool = False
    bad_id: uuid.UUID | None = None
    reason: str | None = None
    bad_seq: int | None = None
    sealed: int = 0
    checkpoints: int = 0
    # The retention anchor verification started from (0: the genesis hash).
    anchored_at: int = 0


def _problem(row: AuditEvent, prev_hash: str, expected_seq: int, keyed_from: int) -> str | None:
    if row.seq != expected_seq:
        return f"sequence gap: expected {expected_seq}, found {row.seq} (a row was removed)"
    if row.prev_hash != prev_hash:
        return "the link to the previous event does not match"
    fields = {name: getattr(row, name) for name in HASHED_FIELDS}
    key = chain_key(row.tenant_id) if row.seq >= keyed_from else None
    if not hmac.compare_digest(event_hash(prev_hash, fields, key), row.hash):
        return "the event's content does not match its hash (it was changed)"
    return None
