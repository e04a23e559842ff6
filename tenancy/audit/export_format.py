"""The signed export file (decision 0071): NDJSON, one entry per line, then one trailer.

Each entry line is the entry's JSON with one more field, ``line_mac``, appended last:
``HMAC(export key, previous MAC + "\\n" + the entry's JSON without it)``; the first
line's previous MAC is derived from the export's id. So a changed, removed, added or
reordered line breaks the MAC of the first line it touches, and a verifier names it.
The trailer signs what the lines cannot say about themselves: how many there were, a
SHA-256 over all their bytes, the last MAC, the filters and the chain head the export
is anchored to. Nothing here touches the database: ``tether audit verify-export``
checks a file with nothing but the server's audit secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from tenancy.audit.chain import canonical
from tenancy.audit.keys import export_key

FORMAT = "tether-audit-export/1"
ALGORITHM = "hmac-sha256"
_SUFFIX_HEAD = b',"line_mac":"'
_SUFFIX_LENGTH = len(_SUFFIX_HEAD) + 64 + len(b'"}')


def first_mac(key: bytes, export_id: str) -> str:
    return hmac.new(key, f"{FORMAT}\n{export_id}".encode(), hashlib.sha256).hexdigest()


def line_mac(key: bytes, previous: str, entry: bytes) -> str:
    return hmac.new(key, previous.encode() + b"\n" + entry, hashlib.sha256).hexdigest()


def trailer_signature(key: bytes, trailer: dict[str, Any]) -> str:
    message = f"{FORMAT}/trailer\n{canonical(trailer)}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


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
        """The last line: ``fields`` plus count, digest and last MAC, signed."""
        body = {
            **fields,
            "format": FORMAT,
            "count": self.count,
            "digest": self._digest.hexdigest(),
            "last_mac": self.last_mac,
        }
        signature = trailer_signature(export_key(tenant_id), body)
        line = {"trailer": body, "signature": signature, "algorithm": ALGORITHM}
        return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


@dataclass(frozen=True, slots=True)
class ExportCheck:
    ok: bool
    lines: int
    first_bad_line: int | None = None
    reason: str | None = None
    trailer: dict[str, Any] | None = None


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


def _trailer(line: bytes) -> tuple[dict[str, Any], str] | None:
    try:
        parsed = json.loads(line)
    except ValueError:
        return None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("trailer"), dict):
        return None
    return parsed["trailer"], str(parsed.get("signature", ""))


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    stream.seek(0)
    yield from stream


def verify_stream(stream: BinaryIO) -> ExportCheck:
    """Check a signed export: the trailer's signature, then every line's MAC in order,
    then the count, digest and last MAC the trailer signed. Reads line by line."""
    found = _trailer(_last_line(stream))
    if found is None:
        return ExportCheck(False, 0, None, "the last line is not a trailer (the file was cut)")
    trailer, signature = found
    try:
        tenant_id = uuid.UUID(str(trailer["tenant_id"]))
        key = export_key(tenant_id)
        mac = first_mac(key, str(trailer["export_id"]))
    except (KeyError, ValueError):
        return ExportCheck(False, 0, None, "the trailer names no tenant or export id")
    if trailer.get("format") != FORMAT:
        return ExportCheck(False, 0, None, f"unknown format {trailer.get('format')!r}")
    if not hmac.compare_digest(trailer_signature(key, trailer), signature):
        return ExportCheck(False, 0, None, "the trailer's signature does not match", trailer)
    return _walk(stream, key, mac, trailer)


def _walk(stream: BinaryIO, key: bytes, mac: str, trailer: dict[str, Any]) -> ExportCheck:
    digest, number = hashlib.sha256(), 0
    expected = int(trailer.get("count", -1))
    for raw in _lines(stream):
        number += 1
        if number > expected:
            continue  # the trailer, or lines added after the count: counted below
        split = _split(raw)
        if split is None or not hmac.compare_digest(line_mac(key, mac, split[0]), split[1]):
            return ExportCheck(
                False,
                number,
                number,
                f"line {number} does not match its MAC (it was changed, or a line before "
                "it was removed, added or moved)",
                trailer,
            )
        mac = split[1]
        digest.update(raw if raw.endswith(b"\n") else raw + b"\n")
    return _totals(number, expected, digest.hexdigest(), mac, trailer)


def _totals(
    number: int, expected: int, digest: str, mac: str, trailer: dict[str, Any]
) -> ExportCheck:
    lines = min(number, expected)
    if number != expected + 1:
        where = min(number, expected + 1)
        reason = (
            f"the trailer counts {expected} lines, the file has {number - 1} before it "
            "(lines were removed or added)"
        )
        return ExportCheck(False, lines, where, reason, trailer)
    if digest != trailer.get("digest") or mac != trailer.get("last_mac"):
        return ExportCheck(
            False, lines, None, "the digest over the lines does not match the trailer", trailer
        )
    return ExportCheck(True, lines, None, None, trailer)
