"""Appending to the audit log, inside the caller's transaction: an action and its audit
row commit together or not at all. Appends of one tenant are serialised by a row lock
on the tenant's chain head (the chain is a sequence). Reads are not appended here but to
the access log (``tenancy.audit.access``), which takes no lock and is sealed into this
chain in batches."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.audit.chain import GENESIS, event_hash
from tenancy.audit.keys import chain_key
from tenancy.audit.models import AuditChainHead, AuditEvent
from tenancy.principal import Principal
from tether.core.ids import new_id
from tether.core.instruments import AUDIT_WRITES
from tether.core.logging import request_id_var


@dataclass(frozen=True, slots=True)
class Actor:
    key_id: uuid.UUID | None
    role: str | None
    subject: str | None

    @classmethod
    def of(cls, principal: Principal | None) -> Actor:
        if principal is None:
            return cls(None, None, None)
        return cls(principal.key_id, principal.role.value, principal.subject)


SYSTEM = Actor(None, "system", None)


def rule_text(rule: Sequence[str] | None) -> str | None:
    return None if not rule else ", ".join(rule)


class AuditLog:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def record(
        self,
        tenant_id: uuid.UUID,
        actor: Actor,
        action: str,
        obj: str,
        *,
        allowed: bool = True,
        matched_rule: str | None = None,
        relationship_id: uuid.UUID | None = None,
        global_user_id: uuid.UUID | None = None,
        detail: dict[str, Any] | None = None,
    ) -> AuditEvent:
        """Append one event (ids and decisions only: never pass content in ``detail``)."""
        await self._session.execute(
            insert(AuditChainHead)
            .values(tenant_id=tenant_id, seq=0, hash=GENESIS)
            .on_conflict_do_nothing()
        )
        head = (
            await self._session.execute(
                select(AuditChainHead)
                .where(AuditChainHead.tenant_id == tenant_id)
                .with_for_update()
                .execution_options(populate_existing=True)
            )
        ).scalar_one()
        fields: dict[str, Any] = {
            "id": new_id(),
            "tenant_id": tenant_id,
            "seq": head.seq + 1,
            "at": datetime.now(UTC),
            "actor_key_id": actor.key_id,
            "actor_role": actor.role,
            "actor_subject": actor.subject,
            "action": action,
            "object": obj,
            "decision": "allow" if allowed else "deny",
            "matched_rule": matched_rule,
            "relationship_id": relationship_id,
            "global_user_id": global_user_id,
            "request_id": request_id_var.get(),
            "detail": detail or {},
        }
        keyed = fields["seq"] >= head.keyed_from
        digest = event_hash(head.hash, fields, chain_key(tenant_id) if keyed else None)
        event = AuditEvent(**fields, prev_hash=head.hash, hash=digest)
        self._session.add(event)
        await self._session.execute(
            update(AuditChainHead)
            .where(AuditChainHead.tenant_id == tenant_id)
            .values(seq=fields["seq"], hash=digest)
        )
        await self._session.flush()
        AUDIT_WRITES.add(1, {"decision": fields["decision"], "object": obj})
        return event
