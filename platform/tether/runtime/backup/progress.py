"""Progress on standard error while pg_dump / pg_restore work, read from their
``--verbose`` lines (one per table dumped, one per object restored)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import TextIO

from tether.runtime.preflight import StartupError

WIDTH = 30
_KEEP_LINES = 20


class Bar:
    """``[#####.....] label done/total extra``, rewritten in place."""

    def __init__(self, label: str, total: int, out: TextIO | None = None) -> None:
        self._label, self.total, self.done = label, total, 0
        self._out = out or sys.stderr
        self._started = time.monotonic()

    def show(self, extra: str = "") -> None:
        filled = WIDTH if self.total == 0 else int(WIDTH * min(self.done, self.total) / self.total)
        bar = "#" * filled + "." * (WIDTH - filled)
        line = f"\r[{bar}] {self._label} {min(self.done, self.total)}/{self.total} {extra}"
        print(line, end="", file=self._out, flush=True)

    def step(self, extra: str = "") -> None:
        self.done += 1
        self.show(extra)

    def finish(self, extra: str = "") -> None:
        self.done = self.total
        self.show(f"{extra} ({time.monotonic() - self._started:.1f} s)")
        print(file=self._out)


async def run_tool(command: list[str], bar: Bar, counts: Callable[[str], bool], what: str) -> None:
    """Run a PostgreSQL client program, advancing ``bar`` for each line ``counts``
    accepts; on failure, raise with its last lines of output."""
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None  # noqa: S101 - asked for above
    last: deque[str] = deque(maxlen=_KEEP_LINES)
    async for raw in process.stderr:
        line = raw.decode(errors="replace").rstrip()
        if counts(line):
            bar.step()
        else:
            last.append(line)
    if await process.wait() != 0:
        print(file=sys.stderr)  # noqa: T201 - end the progress line
        raise StartupError(
            f"{what} failed (exit {process.returncode}): " + " | ".join(last),
            "read the lines above; nothing was changed where the restore runs in one transaction",
        )
