"""The tenant's Ed25519 key pair (decision 0073), with no database: derived from the
secret and the tenant, published as base64/hex/PEM, purpose-bound; checkpoints signed
with it verify by the public key alone, and legacy HMAC checkpoints by the secret."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tenancy.audit import keys, signing
from tenancy.audit.checkpoints import LEGACY, PURPOSE, hmac_signature, message, signed, signed_by
from tenancy.audit.schemas import CheckpointRead
from tether.core.settings import Settings


def _configure(tmp_path: Path, secret: str) -> None:
    keys.configure(Settings(_env_file=None, data_dir=tmp_path, audit={"secret": secret}))  # type: ignore[call-arg]


@pytest.fixture(autouse=True)
def _secret(tmp_path: Path) -> None:
    _configure(tmp_path, "s")


def test_the_key_pair_is_derived_per_tenant_and_per_secret(tmp_path: Path) -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    first = signing.encoded(signing.public_key(a))
    assert first == signing.encoded(signing.public_key(a))  # no storage: derived again
    assert first != signing.encoded(signing.public_key(b))
    _configure(tmp_path, "another secret")
    assert first != signing.encoded(signing.public_key(a))


def test_a_signature_verifies_for_its_purpose_and_message_only() -> None:
    tenant = uuid.uuid4()
    key = signing.public_key(tenant)
    signature = signing.sign(tenant, "tether-audit/checkpoint", b"seq=3")
    assert len(signature) == 128
    assert signing.verify(key, "tether-audit/checkpoint", b"seq=3", signature)
    assert not signing.verify(key, "tether-audit/checkpoint", b"seq=4", signature)
    assert not signing.verify(key, "tether-audit/anchor", b"seq=3", signature)
    assert not signing.verify(signing.public_key(uuid.uuid4()), PURPOSE, b"seq=3", signature)
    assert not signing.verify(key, "tether-audit/checkpoint", b"seq=3", "zz")


def test_the_public_key_parses_from_each_published_form() -> None:
    key = signing.public_key(uuid.uuid4())
    for text in (signing.encoded(key), signing.raw(key).hex(), signing.pem(key)):
        assert signing.key_id(signing.parse_public_key(text)) == signing.key_id(key)
    assert signing.key_id(key).startswith("ed25519:")
    for junk in ("", "not a key", "AAAA", "-----BEGIN PUBLIC KEY-----\nxx\n-----END"):
        with pytest.raises(signing.PublicKeyInvalid):
            signing.parse_public_key(junk)


def _checkpoint(tenant: uuid.UUID, algorithm: str, signature: str) -> CheckpointRead:
    at = datetime(2026, 12, 7, 18, tzinfo=UTC)
    return CheckpointRead(tenant, 5, "ab" * 32, 1, at, signature, algorithm)


def test_an_ed25519_checkpoint_verifies_with_the_public_key_alone() -> None:
    tenant = uuid.uuid4()
    at = datetime(2026, 12, 7, 18, tzinfo=UTC).isoformat()
    signature = signing.sign(tenant, PURPOSE, message(tenant, 5, "ab" * 32, 1, at))
    made = _checkpoint(tenant, signing.ALGORITHM, signature)
    assert signed(made)
    assert signed_by(made, signing.public_key(tenant))
    assert not signed_by(made, signing.public_key(uuid.uuid4()))
    assert not signed(msgspec.structs.replace(made, seq=6))
    other = Ed25519PrivateKey.generate()  # a forger's own key
    forged = other.sign(PURPOSE.encode() + b"\n" + message(tenant, 5, "ab" * 32, 1, at))
    assert not signed(_checkpoint(tenant, signing.ALGORITHM, forged.hex()))


def test_a_legacy_hmac_checkpoint_still_verifies_with_the_secret() -> None:
    tenant = uuid.uuid4()
    at = datetime(2026, 12, 7, 18, tzinfo=UTC).isoformat()
    legacy = _checkpoint(tenant, LEGACY, hmac_signature(tenant, 5, "ab" * 32, 1, at))
    assert signed(legacy)
    assert not signed_by(legacy, signing.public_key(tenant))  # the public key cannot
    assert not signed(msgspec.structs.replace(legacy, hash="cd" * 32))
    assert not signed(msgspec.structs.replace(legacy, algorithm="none"))
    # One kept before decision 0073 has no algorithm field: it decodes as HMAC.
    encoded = msgspec.json.encode(legacy).replace(b'"algorithm":"hmac-sha256",', b"")
    assert signed(msgspec.json.decode(encoded, type=CheckpointRead))
