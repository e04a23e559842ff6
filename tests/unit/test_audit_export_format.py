"""The signed export file (decisions 0071, 0073), with no database: an empty export
verifies, lines with non-ASCII text round-trip byte-exactly, garbage is named, not
crashed on; the public key alone verifies the trailer and the digest, and refuses a
trailer forged with another key; a legacy HMAC trailer still verifies with the secret."""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tenancy.audit import keys, signing
from tenancy.audit.chain import canonical
from tenancy.audit.export_format import (
    TRAILER_PURPOSE,
    LineSigner,
    hmac_trailer_signature,
    verify_stream,
)
from tether.core.settings import Settings


@pytest.fixture(autouse=True)
def _secret(tmp_path: Path) -> None:
    keys.configure(Settings(_env_file=None, data_dir=tmp_path, audit={"secret": "s"}))  # type: ignore[call-arg]


def _export(entries: list[dict[str, object]]) -> tuple[uuid.UUID, bytes]:
    tenant = uuid.uuid4()
    signer = LineSigner(tenant, "x-1")
    lines = [signer.line(json.dumps(e, ensure_ascii=False).encode()) for e in entries]
    trailer = signer.trailer(tenant, {"tenant_id": str(tenant), "export_id": "x-1"})
    return tenant, b"".join([*lines, trailer])


def test_an_empty_export_verifies() -> None:
    _, body = _export([])
    check = verify_stream(io.BytesIO(body))
    assert (check.ok, check.lines) == (True, 0)


def test_lines_keep_their_bytes_and_parse_as_json() -> None:
    _, body = _export([{"action": "consent.change", "detail": {"理由": "用户要求"}}, {"n": 2}])
    first, second, _ = body.splitlines()
    assert json.loads(first)["detail"] == {"理由": "用户要求"}
    assert set(json.loads(second)) == {"n", "line_mac"}
    assert verify_stream(io.BytesIO(body)).ok is True


@pytest.mark.parametrize(
    "damage",
    [
        lambda lines: [b"not json\n", *lines[1:]],
        lambda lines: [lines[0][:10] + b"\n", *lines[1:]],
        lambda lines: [*lines[:-1], b"{}\n"],
        lambda lines: [b"\n"],
        lambda lines: [],
    ],
)
def test_damaged_files_fail_with_a_reason(damage) -> None:  # type: ignore[no-untyped-def]
    _, body = _export([{"seq": 1}, {"seq": 2}])
    damaged = b"".join(damage(body.splitlines(keepends=True)))
    check = verify_stream(io.BytesIO(damaged))
    assert check.ok is False
    assert check.reason


def test_the_public_key_alone_verifies_an_export() -> None:
    tenant, body = _export([{"seq": 1}, {"seq": 2, "detail": {"理由": "审计"}}])
    check = verify_stream(io.BytesIO(body), signing.public_key(tenant))
    assert (check.ok, check.lines, check.line_macs_checked) == (True, 2, False)
    assert check.trailer is not None
    assert check.trailer["key_id"] == signing.key_id(signing.public_key(tenant))
    assert json.loads(body.splitlines()[-1])["algorithm"] == "ed25519"


def test_the_public_key_finds_a_changed_line_but_cannot_name_it() -> None:
    tenant, body = _export([{"seq": 1, "action": "x"}, {"seq": 2, "action": "x"}])
    first, second, trailer = body.splitlines(keepends=True)
    changed = b"".join([first, second.replace(b'"x"', b'"y"'), trailer])
    public = verify_stream(io.BytesIO(changed), signing.public_key(tenant))
    assert (public.ok, public.first_bad_line) == (False, None)
    assert public.reason is not None
    assert "digest" in public.reason
    secret = verify_stream(io.BytesIO(changed))  # the secret names it
    assert (secret.ok, secret.first_bad_line) == (False, 2)
    removed = verify_stream(io.BytesIO(first + trailer), signing.public_key(tenant))
    assert (removed.ok, removed.first_bad_line) == (False, 2)  # the trailer moved up


def _resigned(body: bytes, key: Ed25519PrivateKey, key_id: str) -> bytes:
    """The export with its trailer re-signed by ``key``, naming ``key_id``."""
    *lines, last = body.splitlines(keepends=True)
    trailer = json.loads(last)["trailer"] | {"key_id": key_id, "count": len(lines)}
    message = f"{TRAILER_PURPOSE}\n{canonical(trailer)}".encode()
    forged = {"trailer": trailer, "signature": key.sign(message).hex(), "algorithm": "ed25519"}
    return b"".join([*lines, json.dumps(forged).encode() + b"\n"])


def test_a_trailer_forged_with_another_key_fails() -> None:
    tenant, body = _export([{"seq": 1}])
    published = signing.public_key(tenant)
    forger = Ed25519PrivateKey.generate()
    own_id = signing.key_id(forger.public_key())
    for forged in (_resigned(body, forger, own_id), _resigned(body, forger, "x")):
        check = verify_stream(io.BytesIO(forged), published)
        assert check.ok is False
        assert check.reason is not None
        assert "key" in check.reason
    claims_ours = _resigned(body, forger, signing.key_id(published))
    check = verify_stream(io.BytesIO(claims_ours), published)
    assert (check.ok, check.reason) == (
        False,
        "the trailer's signature does not match the public key",
    )
    assert verify_stream(io.BytesIO(claims_ours)).ok is False  # nor with the secret


def test_a_legacy_hmac_trailer_needs_the_secret() -> None:
    tenant, body = _export([{"seq": 1}])
    *lines, last = body.splitlines(keepends=True)
    trailer = json.loads(last)["trailer"]
    del trailer["key_id"]
    signature = hmac_trailer_signature(keys.export_key(tenant), trailer)
    legacy = {"trailer": trailer, "signature": signature, "algorithm": "hmac-sha256"}
    old = b"".join([*lines, json.dumps(legacy).encode() + b"\n"])
    assert verify_stream(io.BytesIO(old)).ok is True
    refused = verify_stream(io.BytesIO(old), signing.public_key(tenant))
    assert refused.ok is False
    assert refused.reason is not None
    assert "only the server's secret" in refused.reason
