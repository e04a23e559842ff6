"""Regenerate both SDKs from the API document: ``python sdk/generate.py``.

1. ``sdk/openapi.json``: the document the app serves at ``/schema/openapi.json``
   (built in process: needs the platform installed, as ``make install`` does).
2. The Python SDK's ``models.py`` (msgspec Structs), ``_operations.py`` (one spec per
   operation) and ``_resources.py`` (typed sync and async methods), from the document
   and ``sdk/operations.json`` (what each operation is called in the SDKs).
3. The TypeScript SDK's ``src/operations.ts`` (the same table), and its types
   ``src/schema.d.ts`` with ``npm run generate`` (openapi-typescript), when its
   ``node_modules`` is installed.

``--check`` writes nothing and exits 1 when a generated file is out of date."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from codegen import python_code, typescript_code  # noqa: E402

DOCUMENT = HERE / "openapi.json"
NAMES = HERE / "operations.json"
PY_PACKAGE = HERE / "python" / "src" / "tether_client"
TS_DIR = HERE / "typescript"


def served_document() -> dict[str, object]:
    from tether.api.openapi import document
    from tether.app import create_app
    from tether.core.settings import Settings

    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url="postgresql://nobody@127.0.0.1:1/none",
        redis_url="redis://127.0.0.1:1/0",
    )
    return document(create_app(settings))


def outputs(doc: dict[str, object], names: dict[str, dict[str, object]]) -> dict[Path, str]:
    return {
        DOCUMENT: json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=True) + "\n",
        PY_PACKAGE / "models.py": python_code.models_module(doc),
        PY_PACKAGE / "_operations.py": python_code.operations_module(doc, names),
        PY_PACKAGE / "_resources.py": python_code.resources_module(doc, names),
        TS_DIR / "src" / "operations.ts": typescript_code.operations_module(doc, names),
    }


def formatted(path: Path, text: str) -> str:
    """Python sources as ``ruff format`` leaves them, so regenerating changes nothing."""
    if path.suffix != ".py":
        return text
    ruff = str(Path(sys.executable).parent / "ruff")
    for command in (["check", "--fix", "--select", "I,F401", "--quiet"], ["format"]):
        done = subprocess.run(  # noqa: S603 - our own tool
            [ruff, *command, "--stdin-filename", str(path), "-"],
            input=text,
            capture_output=True,
            text=True,
            check=False,
        )
        # ruff prints nothing on stdout for code it cannot parse: never write that out.
        if done.returncode != 0 or not done.stdout.strip():
            raise SystemExit(
                f"generated {path.name} does not pass ruff {command[0]}:\n{done.stderr}"
            )
        text = done.stdout
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if anything is stale")
    args = parser.parse_args()
    doc = served_document()
    names = {k: v for k, v in json.loads(NAMES.read_text()).items() if not k.startswith("_")}
    stale = []
    for path, raw in outputs(doc, names).items():
        text = formatted(path, raw)
        if not path.exists() or path.read_text() != text:
            stale.append(path)
            if not args.check:
                path.write_text(text)
    if args.check:
        for path in stale:
            print(f"stale: {path.relative_to(HERE.parent)}")  # noqa: T201
        return 1 if stale else 0
    if (TS_DIR / "node_modules").exists():
        subprocess.run(["npm", "run", "--silent", "generate"], cwd=TS_DIR, check=True)  # noqa: S607
    return 0


if __name__ == "__main__":
    sys.exit(main())
