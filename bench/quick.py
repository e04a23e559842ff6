"""The quick set (`make bench`, ~10 minutes on 2 cores): resolve, ingest and recall at
10,000 memories, each script run with short settings, then one table of the headline
figures. The full runs and their commands are in docs/benchmarks.md.

    cd bench && ../.venv/bin/python quick.py
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
RUNS = {
    "resolve": ["resolve.py", "--relationships", "10000", "--seconds", "6"],
    "ingest": ["ingest.py", "--relationships", "2000", "--seconds", "8", "--sustain-seconds", "10"],
    "recall": [
        "recall_scale.py", "--memories", "10000", "--requests", "200",
        "--cold-requests", "60", "--seconds", "5",
    ],
}  # fmt: skip


_HITS = r"hit \(c=32\)\s+n=\s*\d+\s+(\d+) req/s"
_CLASS = r"^\| ((?:search|context) [\w-]+) \| ([^|]+) \|$"


def _run(name: str) -> str:
    print(f"# {name}: {' '.join(RUNS[name])}", file=sys.stderr, flush=True)
    done = subprocess.run(
        [sys.executable, *RUNS[name]], cwd=HERE, capture_output=True, text=True, check=True
    )
    return done.stdout


def _pick(text: str, pattern: str) -> str:
    found = re.search(pattern, text)
    return found.group(1) if found else "n/a"


def main() -> None:
    resolve, ingest, recall = _run("resolve"), _run("ingest"), _run("recall")
    rows = [
        ("resolve, cache hit, c=1, p95 ms", _pick(resolve, r"hit \(c=1\).*?p95=\s*([\d.]+)")),
        ("resolve, cache hits, c=32, requests/s", _pick(resolve, _HITS)),
        ("ingest, turns accepted/s (batches of 20)", _pick(ingest, r"accepted ([\d,]+) turns/s")),
        ("ingest, turns durable/s end to end", _pick(ingest, r"end-to-end ([\d,]+) turns/s")),
    ]
    rows += [
        (f"recall at 10k: {name}, p50 / p95 ms", cells)
        for name, cells in re.findall(_CLASS, recall, re.M)
    ]
    rows += [
        (f"recall at 10k: {name}", cells)
        for name, cells in re.findall(r"^\| (context hot-\w+ c=\d+) \| ([^|]+) \|$", recall, re.M)
    ]
    print("| measure | value |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value.strip()} |")


if __name__ == "__main__":
    main()
