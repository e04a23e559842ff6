"""Audit retention without breaking verification (decision 0072).

Pruning removes a prefix of the chain. Before a batch is deleted, an anchor is written
in the same transaction: the ``seq`` and ``hash`` of the last removed link, signed with
the tenant's Ed25519 key (derived from the server secret, never stored; anchors from
before decision 0073 carry an HMAC under the anchor key, and their row says so).
Verification then starts from the latest anchor as it would from the genesis hash: the
first remaining event must be ``seq + 1`` and link to ``hash``, so a change, a removal
in the middle and a truncation of the tail are still found; a forged anchor fails its
signature, and a removed anchor leaves a gap at the start of the chain.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.audit import signing
from tenancy.audit.chain import canonical
from tenancy.audit.checkpoints import head
from tenancy.audit.keys import anchor_key
from tenancy.audit.models import AuditAnchor, AuditEvent
from tether.core.ids import new_id

LEGACY = "hmac-sha256"  # anchors stored before decision 0073
PURPOSE = "tether-audit/anchor"


def anchor_message(row: AuditAnchor) -> bytes:
    return canonical(
        {
            "tenant_id": row.tenant_id,
            "seq": row.seq,
            "hash": row.hash,
            "keyed_from": row.keyed_from,
            "at": row.at.isoformat(),
            "run": row.run,
            "cutoff": row.cutoff.isoformat(),
        }
    ).encode()


def hmac_anchor_signature(row: AuditAnchor) -> str:
    """The HMAC of an anchor: all a legacy row has; new rows keep it for the previous
    release during a rolling upgrade (decision 0073)."""
    return hmac.new(anchor_key(row.tenant_id), anchor_message(row), hashlib.sha256).hexdigest()


def sign_anchor(row: AuditAnchor) -> None:
    row.algorithm = signing.ALGORITHM
    row.key_id = signing.key_id(signing.public_key(row.tenant_id))
    row.public_signature = signing.sign(row.tenant_id, PURPOSE, anchor_message(row))
    row.signature = hmac_anchor_signature(row)


def anchor_signed(row: AuditAnchor) -> bool:
    """Whether the anchor's signature is the server's, by the algorithm the row names."""
    if row.algorithm == signing.ALGORITHM:
        key = signing.public_key(row.tenant_id)
        signature = row.public_signature or ""
        return signing.verify(key, PURPOSE, anchor_message(row), signature)
    if row.algorithm == LEGACY:
        return hmac.compare_digest(hmac_anchor_signature(row), row.signature)
    return False


async def latest_anchor(session: AsyncSession, tenant_id: uuid.UUID) -> AuditAnchor | None:
    """The anchor the remaining chain starts from (``None``: nothing was ever pruned)."""
    statement = (
        select(AuditAnchor)
        .where(AuditAnchor.tenant_id == tenant_id)
        .order_by(AuditAnchor.seq.desc())
        .limit(1)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def prune_batch(
    session: AsyncSession, tenant_id: uuid.UUID, cutoff: datetime, limit: int, run: str
) -> int:
    """Remove up to ``limit`` of the oldest events that happened before ``cutoff`` (a
    prefix of the chain only: pruning stops at the first newer event) and the access
    events their seals cover, after anchoring the chain at the last one removed."""
    start = await latest_anchor(session, tenant_id)
    after = 0 if start is None else start.seq
    statement = (
        select(AuditEvent.seq, AuditEvent.hash, AuditEvent.at)
        .where(AuditEvent.tenant_id == tenant_id, AuditEvent.seq > after)
        .order_by(AuditEvent.seq)
        .limit(limit)
    )
    prefix = []
    for seq, digest, at in await session.execute(statement):
        if at >= cutoff:
            break
        prefix.append((seq, digest))
    if not prefix:
        return 0
    last_seq, last_hash = prefix[-1]
    keyed_from = (await head(session, tenant_id)).keyed_from
    anchor = AuditAnchor(
        id=new_id(),
        tenant_id=tenant_id,
        at=datetime.now(UTC),
        seq=last_seq,
        hash=last_hash,
        keyed_from=keyed_from,
        run=run[:96],
        cutoff=cutoff,
    )
    sign_anchor(anchor)
    session.add(anchor)
    await session.flush()  # the prune function and the delete triggers look for it
    # The application role may not DELETE audit rows; this definer function removes
    # the current tenant's rows up to ``last_seq`` only because the anchor now covers it.
    await session.execute(select(func.tether_audit_prune(last_seq)))
    return len(prefix)
