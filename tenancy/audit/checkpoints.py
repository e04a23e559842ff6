"""Signed checkpoints of a tenant's chain head (decision 0044).

A checkpoint states "the chain had ``seq`` events and its last hash was ``hash``",
signed with the tenant's Ed25519 key (derived from the server secret, never stored; its
public key is published, decision 0073). Checkpoints stored before that were signed with
an HMAC key; each row records its algorithm and still verifies with the secret. The
beat writes one periodically; a compliance officer fetches the latest and keeps it
outside Tether. Verification compares the chain against the latest stored checkpoint
and against one the officer hands back: a chain that no longer reaches a checkpoint's
``seq`` with the same hash was truncated or rewritten.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from datetime import UTC, datetime

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.audit import signing
from tenancy.audit.chain import GENESIS, canonical
from tenancy.audit.keys import checkpoint_key
from tenancy.audit.models import AuditChainHead, AuditCheckpoint
from tenancy.audit.schemas import CheckpointRead
from tether.core.ids import new_id

LEGACY = "hmac-sha256"  # checkpoints stored before decision 0073
PURPOSE = "tether-audit/checkpoint"


def message(tenant_id: uuid.UUID, seq: int, digest: str, keyed_from: int, at: str) -> bytes:
    fields = {"tenant_id": tenant_id, "seq": seq, "hash": digest, "keyed_from": keyed_from}
    return canonical({**fields, "at": at}).encode()


def hmac_signature(tenant_id: uuid.UUID, seq: int, digest: str, keyed_from: int, at: str) -> str:
    """The HMAC of a checkpoint: all a legacy row has; a new row keeps it beside its
    Ed25519 signature so that the previous release, during a rolling upgrade, still
    verifies it (decision 0073)."""
    body = message(tenant_id, seq, digest, keyed_from, at)
    return hmac.new(checkpoint_key(tenant_id), body, hashlib.sha256).hexdigest()


def _message_of(checkpoint: CheckpointRead) -> bytes:
    return message(
        checkpoint.tenant_id,
        checkpoint.seq,
        checkpoint.hash,
        checkpoint.keyed_from,
        checkpoint.at.isoformat(),
    )


def signed(checkpoint: CheckpointRead) -> bool:
    """Whether the checkpoint's signature is the server's, by the algorithm it names."""
    if checkpoint.algorithm == signing.ALGORITHM:
        key = signing.public_key(checkpoint.tenant_id)
        return signing.verify(key, PURPOSE, _message_of(checkpoint), checkpoint.signature)
    if checkpoint.algorithm == LEGACY:
        expected = hmac.new(
            checkpoint_key(checkpoint.tenant_id), _message_of(checkpoint), hashlib.sha256
        ).hexdigest()
        return hmac.compare_digest(expected, checkpoint.signature)
    return False


def signed_by(checkpoint: CheckpointRead, key: Ed25519PublicKey) -> bool:
    """Whether ``key`` signed the checkpoint: the check an auditor runs without the
    secret (a legacy HMAC checkpoint cannot be checked this way)."""
    return checkpoint.algorithm == signing.ALGORITHM and signing.verify(
        key, PURPOSE, _message_of(checkpoint), checkpoint.signature
    )


def read(row: AuditCheckpoint) -> CheckpointRead:
    """The row with the signature its algorithm names (Ed25519 when it has one)."""
    if row.algorithm == signing.ALGORITHM:
        signature, key_id = row.public_signature or "", row.key_id
    else:
        signature, key_id = row.signature, None
    return CheckpointRead(
        row.tenant_id,
        row.seq,
        row.hash,
        row.keyed_from,
        row.at,
        signature,
        row.algorithm,
        key_id,
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
    body = message(tenant_id, current.seq, current.hash, current.keyed_from, at.isoformat())
    row = AuditCheckpoint(
        id=new_id(),
        tenant_id=tenant_id,
        at=at,
        seq=current.seq,
        hash=current.hash,
        keyed_from=current.keyed_from,
        signature=hmac.new(checkpoint_key(tenant_id), body, hashlib.sha256).hexdigest(),
        algorithm=signing.ALGORITHM,
        key_id=signing.key_id(signing.public_key(tenant_id)),
        public_signature=signing.sign(tenant_id, PURPOSE, body),
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
