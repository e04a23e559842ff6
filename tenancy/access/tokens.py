"""API key tokens: high-entropy secrets, stored only as SHA-256 digests.

A fast hash is right here (unlike passwords): the secret has 256 bits of entropy, so a
digest cannot be brute-forced, and authentication runs on every request.
"""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "tth_"  # noqa: S105 - a public marker, not a secret


def generate_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def display_prefix(token: str) -> str:
    """The part of a token safe to show in listings (identifies, cannot authenticate)."""
    return token[: len(TOKEN_PREFIX) + 6]


def looks_like_token(token: str) -> bool:
    return token.startswith(TOKEN_PREFIX) and 20 <= len(token) <= 100 and token.isascii()
