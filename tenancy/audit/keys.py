"""The per-tenant keys of the audit chain and of its checkpoints (decision 0043).

Both are derived from one server secret (``TETHER_AUDIT__SECRET``) and the tenant id, so
they live outside the database: someone who can rewrite audit rows still cannot forge
their MACs or a checkpoint's signature without also holding the secret. The process
edges (app, worker, CLI) call :func:`configure` once.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import uuid
from pathlib import Path

from tether.core.settings import Settings

KEY_FILE = "audit.key"
_secret: bytes | None = None


class AuditKeysMissing(RuntimeError):
    """The process never configured the audit secret."""


def secret_of(settings: Settings) -> bytes:
    """The configured secret, else the one in ``data_dir/audit.key`` (made once)."""
    if settings.audit.secret is not None:
        return settings.audit.secret.get_secret_value().encode()
    path = Path(settings.data_dir) / KEY_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, secrets.token_hex(32).encode())
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    return path.read_bytes().strip()


def configure(settings: Settings) -> None:
    """Load the secret this process derives tenant keys from."""
    global _secret
    try:
        _secret = secret_of(settings)
    except FileExistsError:  # another process made it between our check and create
        _secret = secret_of(settings)


def _derive(purpose: str, tenant_id: uuid.UUID) -> bytes:
    if _secret is None:
        raise AuditKeysMissing("tenancy.audit.keys.configure(settings) was not called")
    return hmac.new(
        _secret, f"tether-audit/{purpose}/{tenant_id}".encode(), hashlib.sha256
    ).digest()


def chain_key(tenant_id: uuid.UUID) -> bytes:
    """The key of the tenant's chain MACs and access-event leaves."""
    return _derive("chain", tenant_id)


def checkpoint_key(tenant_id: uuid.UUID) -> bytes:
    """The key that signs the tenant's head checkpoints."""
    return _derive("checkpoint", tenant_id)


def export_key(tenant_id: uuid.UUID) -> bytes:
    """The key of the tenant's signed exports (line MACs and the trailer's signature):
    the same server secret as the checkpoints', another purpose (decision 0071)."""
    return _derive("export", tenant_id)


def anchor_key(tenant_id: uuid.UUID) -> bytes:
    """The key that signs the tenant's retention anchors (decision 0072)."""
    return _derive("anchor", tenant_id)


def signing_seed(tenant_id: uuid.UUID) -> bytes:
    """The 32-byte seed of the tenant's Ed25519 signing key (decision 0073): derived
    like the HMAC keys, so the key pair needs no storage and every process agrees."""
    return _derive("ed25519-signing", tenant_id)
