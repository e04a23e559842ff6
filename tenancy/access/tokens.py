"""API key tokens: high-entropy secrets, stored only as SHA-256 digests, and signed.

A fast hash is right here (unlike passwords): the secret has 256 bits of entropy, so a
digest cannot be brute-forced, and authentication runs on every request.

A token is ``tth_`` + 43 characters (32 random bytes) + 8 characters of signature (the
first 6 bytes of an HMAC-SHA256 of the random part under the deployment's signing
secret). The signature proves nothing about a key; it lets a process refuse a forged
or mistyped token without asking Postgres (decision 0035). Tokens issued before signing
(``tth_`` + 43 characters) are "legacy" and can only be checked by a lookup.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import string
from enum import Enum

TOKEN_PREFIX = "tth_"  # noqa: S105 - a public marker, not a secret
_BODY_CHARS = 43  # 32 bytes in URL-safe base64 without padding
_TAG_BYTES = 6
_TAG_CHARS = 8
LEGACY_LENGTH = len(TOKEN_PREFIX) + _BODY_CHARS
SIGNED_LENGTH = LEGACY_LENGTH + _TAG_CHARS
_ALPHABET = frozenset(string.ascii_letters + string.digits + "-_")


class Shape(Enum):
    MALFORMED = "malformed"
    SIGNED = "signed"
    LEGACY = "legacy"


def shape(token: str) -> Shape:
    """What kind of token this looks like, from its characters alone."""
    if len(token) not in (SIGNED_LENGTH, LEGACY_LENGTH) or not token.startswith(TOKEN_PREFIX):
        return Shape.MALFORMED
    if not _ALPHABET.issuperset(token[len(TOKEN_PREFIX) :]):
        return Shape.MALFORMED
    return Shape.SIGNED if len(token) == SIGNED_LENGTH else Shape.LEGACY


def _tag(secret: bytes, body: str) -> str:
    mac = hmac.new(secret, body.encode("ascii"), hashlib.sha256).digest()[:_TAG_BYTES]
    return base64.urlsafe_b64encode(mac).decode("ascii")


def generate_token(secret: bytes) -> str:
    body = secrets.token_urlsafe(32)
    return TOKEN_PREFIX + body + _tag(secret, body)


def signature_valid(token: str, secret: bytes) -> bool:
    """Whether a token of ``Shape.SIGNED`` was signed with ``secret``."""
    body = token[len(TOKEN_PREFIX) : LEGACY_LENGTH]
    return hmac.compare_digest(token[LEGACY_LENGTH:], _tag(secret, body))


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def display_prefix(token: str) -> str:
    """The part of a token safe to show in listings (identifies, cannot authenticate)."""
    return token[: len(TOKEN_PREFIX) + 6]


def looks_like_token(token: str) -> bool:
    return shape(token) is not Shape.MALFORMED
