"""Signed checkpoints of a tenant's chain head (decision 0044).

A checkpoint states "the chain had ``seq`` events and its last hash was ``hash``",
signed with the tenant's checkpoint key (HMAC-SHA256, a key derived from the server
secret, never stored in the database). The beat writes one periodically; a compliance
officer fetches the latest and keeps it outside Tether. Verification compares the chain
against the latest stored checkpoint and against one the officer hands back: a chain
that no longer reaches a checkpoint's ``seq`` with the same hash was truncated or
rewritten.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.audit.chain import GENESIS, canonical
from tenancy.audit.keys import checkpoint_key
from tenancy.audit.models import AuditChainHead, AuditCheckpoint
from tenancy.audit.schemas import CheckpointRead
from tether.core.ids import new_id

ALGORITHM = "hmac-sha256"


def signature(tenant_id: uuid.UUID, seq: int, digest: str, keyed_from: int, at: str) -> str:
    message = canonical(
        {"tenant_id": tenant_id, "seq": seq, "hash": digest, "keyed_from": keyed_from, "at": at}
    )
    return hmac.new(checkpoint_key(tenant_id), message.encode(), hashlib.sha256).hexdigest()


def signed(checkpoint: CheckpointRead) -> bool:
    """Whether the checkpoint's signature is the server's."""
    expected = signature(
        checkpoint.tenant_id,
        checkpoint.seq,
        checkpoint.hash,
        checkpoint.keyed_from,
        checkpoint.at.isoformat(),
    )
    return hmac.compare_digest(expected, checkpoint.signature)


def read(row: AuditCheckpoint) -> CheckpointRead:
    return CheckpointRead(
        row.tenant_id, row.seq, row.hash, row.keyed_from, row.at, row.signature, ALGORITHM
    )


async def head(session: AsyncSession, tenant_id: uuid.UUID) -> AuditChainHead:
    """The tenant's chain head (made empty if the tenant never appended)."""
    await session.execute(
        insert(AuditChainHead)
        .values(tenant_id=tenant_id, seq=0, hash=GENESIS)
        .on_conflict_do_nothing()
    )
    statement = (
        select(AuditChainHead)
        .where(AuditChainHead.tenant_id == tenant_id)
        .execution_options(populate_existing=True)
    )
    return (await session.execute(statement)).scalar_one()


async def write_checkpoint(session: AsyncSession, tenant_id: uuid.UUID) -> CheckpointRead:
    """Sign and keep the tenant's current head."""
    current = await head(session, tenant_id)
    at = datetime.now(UTC)
    row = AuditCheckpoint(
        id=new_id(),
        tenant_id=tenant_id,
        at=at,
        seq=current.seq,
        hash=current.hash,
        keyed_from=current.keyed_from,
        signature=signature(
            tenant_id, current.seq, current.hash, current.keyed_from, at.isoformat()
        ),
    )
    session.add(row)
    await session.flush()
    return read(row)


async def latest_checkpoint(session: AsyncSession, tenant_id: uuid.UUID) -> CheckpointRead | None:
    statement = (
        select(AuditCheckpoint)
        .where(AuditCheckpoint.tenant_id == tenant_id)
        .order_by(AuditCheckpoint.seq.desc(), AuditCheckpoint.at.desc())
        .limit(1)
    )
    row = (await session.execute(statement)).scalar_one_or_none()
    return None if row is None else read(row)
