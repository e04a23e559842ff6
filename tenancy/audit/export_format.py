"""The signed export file (decision 0071): NDJSON, one entry per line, then one trailer.

Each entry line is the entry's JSON with one more field, ``line_mac``, appended last:
``HMAC(export key, previous MAC + "\\n" + the entry's JSON without it)``; the first
line's previous MAC is derived from the export's id. So a changed, removed, added or
reordered line breaks the MAC of the first line it touches, and a verifier names it.
The trailer states what the lines cannot say about themselves: how many there were, a
SHA-256 over all their bytes, the last MAC, the filters and the chain head the export
is anchored to; it is signed with the tenant's Ed25519 key (decision 0073; files made
before carry an HMAC). Nothing here touches the database: ``tether audit verify-export``
checks a file with the server's audit secret (the signature, every line's MAC, the
totals), or with nothing but the tenant's public key (the signature and the totals:
any change to a line breaks the digest, but only the MACs, which need the secret, say
which line).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from tenancy.audit import signing
from tenancy.audit.chain import canonical
from tenancy.audit.keys import export_key

FORMAT = "tether-audit-export/1"
LEGACY = "hmac-sha256"  # trailers of files exported before decision 0073
TRAILER_PURPOSE = f"{FORMAT}/trailer"
_SUFFIX_HEAD = b',"line_mac":"'
_SUFFIX_LENGTH = len(_SUFFIX_HEAD) + 64 + len(b'"}')


def first_mac(key: bytes, export_id: str) -> str:
    return hmac.new(key, f"{FORMAT}\n{export_id}".encode(), hashlib.sha256).hexdigest()


def line_mac(key: bytes, previous: str, entry: bytes) -> str:
    return hmac.new(key, previous.encode() + b"\n" + entry, hashlib.sha256).hexdigest()


def hmac_trailer_signature(key: bytes, trailer: dict[str, Any]) -> str:
    """A legacy trailer's signature (made only by tests since decision 0073)."""
    message = f"{TRAILER_PURPOSE}\n{canonical(trailer)}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def trailer_signed(key: Ed25519PublicKey, trailer: dict[str, Any], signature: str) -> bool:
    return signing.verify(key, TRAILER_PURPOSE, canonical(trailer).encode(), signature)


class LineSigner:
    """Turns encoded entries into signed lines, keeping the count, digest and last MAC."""

    def __init__(self, tenant_id: uuid.UUID, export_id: str) -> None:
        self._key = export_key(tenant_id)
        self.last_mac = first_mac(self._key, export_id)
        self.count = 0
        self._digest = hashlib.sha256()

    def line(self, entry: bytes) -> bytes:
        """``entry`` is one JSON object with at least one field (every audit and access
        event has many); the signed line, newline included."""
        self.last_mac = line_mac(self._key, self.last_mac, entry)
        signed = entry[:-1] + _SUFFIX_HEAD + self.last_mac.encode() + b'"}\n'
        self._digest.update(signed)
        self.count += 1
        return signed

    def trailer(self, tenant_id: uuid.UUID, fields: dict[str, Any]) -> bytes:
        """The last line: ``fields`` plus count, digest, last MAC and the signing key's
        id, signed with the tenant's Ed25519 key."""
        body = {
            **fields,
            "format": FORMAT,
            "count": self.count,
            "digest": self._digest.hexdigest(),
            "last_mac": self.last_mac,
            "key_id": signing.key_id(signing.public_key(tenant_id)),
        }
        signature = signing.sign(tenant_id, TRAILER_PURPOSE, canonical(body).encode())
        line = {"trailer": body, "signature": signature, "algorithm": signing.ALGORITHM}
        return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


@dataclass(frozen=True, slots=True)
class ExportCheck:
    ok: bool
    lines: int
    first_bad_line: int | None = None
    reason: str | None = None
    trailer: dict[str, Any] | None = None
    # False when checked with the public key only: the line MACs were not checked.
    line_macs_checked: bool = True


def _split(line: bytes) -> tuple[bytes, str] | None:
    """The entry's JSON and the MAC of a signed line (``None``: not a signed line)."""
    body = line.rstrip(b"\n")
    suffix = body[-_SUFFIX_LENGTH:]
    if len(body) <= _SUFFIX_LENGTH or not suffix.startswith(_SUFFIX_HEAD):
        return None
    if not suffix.endswith(b'"}'):
        return None
    return body[:-_SUFFIX_LENGTH] + b"}", suffix[len(_SUFFIX_HEAD) : -2].decode("ascii", "replace")


def _last_line(stream: BinaryIO) -> bytes:
    """The file's last non-empty line, read from its end (the file is not loaded)."""
    stream.seek(0, 2)
    end = stream.tell()
    block, tail = 65536, b""
    position = end
    while position > 0:
        position = max(0, position - block)
        stream.seek(position)
        tail = stream.read(min(block, end - position)) + tail
        stripped = tail.rstrip(b"\n")
        if b"\n" in stripped:
            return stripped.rsplit(b"\n", 1)[1]
    return tail.rstrip(b"\n")


@dataclass(frozen=True, slots=True)
class _Trailer:
    body: dict[str, Any]
    signature: str
    algorithm: str


def _trailer(line: bytes) -> _Trailer | None:
    try:
        parsed = json.loads(line)
    except ValueError:
        return None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("trailer"), dict):
        return None
    algorithm = str(parsed.get("algorithm", LEGACY))
    return _Trailer(parsed["trailer"], str(parsed.get("signature", "")), algorithm)


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    stream.seek(0)
    yield from stream


def verify_stream(stream: BinaryIO, public_key: Ed25519PublicKey | None = None) -> ExportCheck:
    """Check a signed export: the trailer's signature, then every line in order, then the
    count, digest and last MAC the trailer signed. Reads line by line. With the server's
    secret (``public_key`` None) each line's MAC is checked too; with ``public_key``
    only, the digest is what covers the lines."""
    found = _trailer(_last_line(stream))
    if found is None:
        return ExportCheck(False, 0, None, "the last line is not a trailer (the file was cut)")
    trailer = found.body
    try:
        tenant_id = uuid.UUID(str(trailer["tenant_id"]))
        export_id = str(trailer["export_id"])
    except (KeyError, ValueError):
        return ExportCheck(False, 0, None, "the trailer names no tenant or export id")
    if trailer.get("format") != FORMAT:
        return ExportCheck(False, 0, None, f"unknown format {trailer.get('format')!r}")
    problem = (
        _signature_problem(found, tenant_id)
        if public_key is None
        else _public_problem(found, public_key)
    )
    if problem is not None:
        return ExportCheck(False, 0, None, problem, trailer, public_key is None)
    if public_key is not None:
        return _walk(stream, None, "", trailer)
    key = export_key(tenant_id)
    return _walk(stream, key, first_mac(key, export_id), trailer)


def _signature_problem(found: _Trailer, tenant_id: uuid.UUID) -> str | None:
    """With the secret: the tenant's Ed25519 key (derived), or a legacy HMAC."""
    if found.algorithm == signing.ALGORITHM:
        good = trailer_signed(signing.public_key(tenant_id), found.body, found.signature)
    elif found.algorithm == LEGACY:
        expected = hmac_trailer_signature(export_key(tenant_id), found.body)
        good = hmac.compare_digest(expected, found.signature)
    else:
        return f"unknown signature algorithm {found.algorithm!r}"
    return None if good else "the trailer's signature does not match"


def _public_problem(found: _Trailer, key: Ed25519PublicKey) -> str | None:
    if found.algorithm != signing.ALGORITHM:
        return (
            f"the trailer is signed with {found.algorithm!r}, which only the server's "
            "secret checks (an export made before Ed25519 trailers): run without "
            "--public-key where TETHER_AUDIT__SECRET is set"
        )
    given = signing.key_id(key)
    if found.body.get("key_id") != given:
        return (
            f"the trailer names signing key {found.body.get('key_id')!r}, not the key "
            f"given ({given}): another tenant's key, or a forged trailer"
        )
    if not trailer_signed(key, found.body, found.signature):
        return "the trailer's signature does not match the public key"
    return None


def _walk(stream: BinaryIO, key: bytes | None, mac: str, trailer: dict[str, Any]) -> ExportCheck:
    """Every line up to the trailer's count: its MAC when ``key`` is given (the secret),
    its form only when it is not; the digest and last MAC are compared after."""
    digest, number = hashlib.sha256(), 0
    expected = int(trailer.get("count", -1))
    for raw in _lines(stream):
        number += 1
        if number > expected:
            continue  # the trailer, or lines added after the count: counted below
        split = _split(raw)
        if split is None or (
            key is not None and not hmac.compare_digest(line_mac(key, mac, split[0]), split[1])
        ):
            reason = (
                f"line {number} does not match its MAC (it was changed, or a line before "
                "it was removed, added or moved)"
                if key is not None
                else f"line {number} is not a signed export line (lines were removed or "
                "added, or it was changed)"
            )
            return ExportCheck(False, number, number, reason, trailer, key is not None)
        mac = split[1]
        digest.update(raw if raw.endswith(b"\n") else raw + b"\n")
    return _totals(number, expected, digest.hexdigest(), mac, trailer, key is not None)


def _totals(
    number: int, expected: int, digest: str, mac: str, trailer: dict[str, Any], macs: bool
) -> ExportCheck:
    lines = min(number, expected)
    if number != expected + 1:
        where = min(number, expected + 1)
        reason = (
            f"the trailer counts {expected} lines, the file has {number - 1} before it "
            "(lines were removed or added)"
        )
        return ExportCheck(False, lines, where, reason, trailer, macs)
    if digest != trailer.get("digest") or mac != trailer.get("last_mac"):
        reason = "the digest over the lines does not match the trailer"
        if not macs:  # the public key proves a change, not where it is
            reason += " (a line was changed; only the server's secret can name which)"
        return ExportCheck(False, lines, None, reason, trailer, macs)
    return ExportCheck(True, lines, None, None, trailer, macs)
