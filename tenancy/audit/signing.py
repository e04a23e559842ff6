"""The tenant's Ed25519 key pair: what signs checkpoints, export trailers and retention
anchors (decision 0073).

The private key is derived from the server secret (:func:`keys.signing_seed`), never
stored; the public key is published (``GET /v1/audit/public-key``) so that an auditor
checks a signature without the secret, and so without the power to forge one. Every
signed message starts with its purpose, so a signature made for one kind of statement
never verifies as another.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import uuid

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from tenancy.audit.keys import signing_seed

ALGORITHM = "ed25519"
_RAW = serialization.Encoding.Raw, serialization.PublicFormat.Raw


class PublicKeyInvalid(ValueError):
    """A text that is not an Ed25519 public key in a form we publish."""


def _private(tenant_id: uuid.UUID) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(signing_seed(tenant_id))


def public_key(tenant_id: uuid.UUID) -> Ed25519PublicKey:
    return _private(tenant_id).public_key()


def raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(*_RAW)


def key_id(key: Ed25519PublicKey) -> str:
    """A fingerprint: the first 16 bytes of SHA-256 over the raw 32-byte key, in hex."""
    return "ed25519:" + hashlib.sha256(raw(key)).hexdigest()[:32]


def encoded(key: Ed25519PublicKey) -> str:
    """The form published and accepted on the command line: base64 of the raw key."""
    return base64.b64encode(raw(key)).decode("ascii")


def pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def parse_public_key(text: str) -> Ed25519PublicKey:
    """A public key from its PEM, its base64 (as published) or its hex."""
    text = text.strip()
    if text.startswith("-----BEGIN"):
        try:
            loaded = serialization.load_pem_public_key(text.encode())
        except ValueError as exc:
            raise PublicKeyInvalid(f"not a PEM public key: {exc}") from exc
        if not isinstance(loaded, Ed25519PublicKey):
            raise PublicKeyInvalid("the PEM key is not an Ed25519 key")
        return loaded
    for decode in (bytes.fromhex, lambda s: base64.b64decode(s, validate=True)):
        try:
            data = decode(text)
        except (ValueError, binascii.Error):
            continue
        if len(data) == 32:
            return Ed25519PublicKey.from_public_bytes(data)
    raise PublicKeyInvalid("expected the base64 (or hex) of a 32-byte Ed25519 key, or a PEM")


def sign(tenant_id: uuid.UUID, purpose: str, message: bytes) -> str:
    """The hex signature of ``purpose`` + newline + ``message`` (128 hex digits)."""
    return _private(tenant_id).sign(purpose.encode() + b"\n" + message).hex()


def verify(key: Ed25519PublicKey, purpose: str, message: bytes, signature: str) -> bool:
    try:
        key.verify(bytes.fromhex(signature), purpose.encode() + b"\n" + message)
    except (InvalidSignature, ValueError):
        return False
    return True
