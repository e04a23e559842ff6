"""The signed export file (decision 0071), with no database: an empty export verifies,
lines with non-ASCII text round-trip byte-exactly, and garbage is named, not crashed on."""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path

import pytest

from tenancy.audit import keys
from tenancy.audit.export_format import LineSigner, verify_stream
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
