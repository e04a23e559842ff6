"""Side effects that must happen only if the transaction commits (cache writes, task
enqueueing): collected during the request, run after commit, dropped on rollback."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncSession

AfterCommit = Callable[[], Awaitable[None]]
_KEY = "tether.after_commit"


def on_commit(session: AsyncSession, action: AfterCommit) -> None:
    """Run ``action`` once this session's transaction has committed."""
    session.info.setdefault(_KEY, []).append(action)


async def run_after_commit(session: AsyncSession) -> None:
    actions: list[AfterCommit] = session.info.pop(_KEY, [])
    for action in actions:
        await action()


def discard_after_commit(session: AsyncSession) -> None:
    session.info.pop(_KEY, None)
