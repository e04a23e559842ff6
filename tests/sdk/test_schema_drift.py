"""The SDKs and the API cannot drift apart: every operation the app serves at /schema is
in both SDKs (same method and path), and nothing else is; the generated code is what
``python sdk/generate.py`` writes today."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from tether_client._operations import OPERATIONS

from tether.app import create_app, with_outer_middleware
from tether.core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
FIX = "add it to sdk/operations.json and run `python sdk/generate.py`"


@pytest.fixture(scope="module")
async def served() -> dict[str, tuple[str, str]]:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url="postgresql://nobody@127.0.0.1:1/none",
        redis_url="redis://127.0.0.1:1/0",
    )
    transport = httpx.ASGITransport(app=with_outer_middleware(create_app(settings)))
    async with httpx.AsyncClient(transport=transport, base_url="http://tether") as http:
        doc = (await http.get("/schema/openapi.json")).json()
    return {
        op["operationId"]: (method.upper(), path)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict) and "operationId" in op
    }


def _typescript_operations() -> dict[str, tuple[str, str]]:
    source = (ROOT / "sdk" / "typescript" / "src" / "operations.ts").read_text()
    found = {}
    for op_id, entry in re.findall(r"^  (\w+): (\{.*\}),$", source, flags=re.MULTILINE):
        spec = json.loads(entry)
        found[op_id] = (spec["http"], spec["path"])
    return found


def _compare(
    served: dict[str, tuple[str, str]], sdk: dict[str, tuple[str, str]], which: str
) -> None:
    missing = sorted(set(served) - set(sdk))
    extra = sorted(set(sdk) - set(served))
    moved = sorted(k for k in set(served) & set(sdk) if served[k] != sdk[k])
    assert not missing, f"served but not in the {which} SDK: {missing}; {FIX}"
    assert not extra, f"in the {which} SDK but not served: {extra}; {FIX}"
    assert not moved, f"method or path differ in the {which} SDK: {moved}; run sdk/generate.py"


def test_python_sdk_has_every_served_operation(served: dict[str, tuple[str, str]]) -> None:
    sdk = {op_id: (op.method, op.path) for op_id, op in OPERATIONS.items()}
    _compare(served, sdk, "Python")


def test_typescript_sdk_has_every_served_operation(served: dict[str, tuple[str, str]]) -> None:
    _compare(served, _typescript_operations(), "TypeScript")


def test_every_served_operation_has_an_sdk_name(served: dict[str, tuple[str, str]]) -> None:
    names = json.loads((ROOT / "sdk" / "operations.json").read_text())
    assert sorted(set(served) - set(names)) == []
    assert sorted(k for k in set(names) - set(served) if not k.startswith("_")) == []


def test_generated_code_is_current() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "sdk" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout}{done.stderr}\nrun `python sdk/generate.py`"
