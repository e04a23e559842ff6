"""How the engine turns Postgres being unable to serve into ``DatabaseUnavailable``:
a failed connect, a statement that outlived its timeout, a write refused as read-only
(a demoted primary), and a pooled connection that no longer answers when it is checked
out (decision 0019).

A network that drops packets silently (a failed-over primary whose address vanished,
a partition) closes nothing: without a timeout, a statement on a pooled connection
waits for TCP to give up, about fifteen minutes. asyncpg's ``command_timeout`` bounds
every statement; it raises a bare ``TimeoutError``, which SQLAlchemy passes through
unwrapped, so it is mapped here, and the connection it timed out on is closed rather
than returned to the pool.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import asyncpg.exceptions as pg  # type: ignore[import-untyped]
from sqlalchemy import event
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import InvalidatePoolError
from sqlalchemy.ext.asyncio import AsyncEngine

from tether.core.database_errors import DatabaseUnavailable, connect_failed

log = logging.getLogger(__name__)

# Each kind of fault is logged at most this often per process (an outage fails every
# request).
WARNING_EVERY_SECONDS = 10.0
# Set on a connection when it opens, taken by its first checkout: it needs no ping.
_FRESH = "tether.fresh"


class _RateLimitedWarning:
    def __init__(self, message: str) -> None:
        self._message = message
        self._last = float("-inf")

    def __call__(self, *args: object) -> None:
        now = time.monotonic()
        if now - self._last >= WARNING_EVERY_SECONDS:
            self._last = now
            log.warning(self._message, *args)


# Connect errors name a host or socket path, never user data; the client's problem
# body does not carry them, so the log is where an operator finds the cause.
_warn_connect_failed = _RateLimitedWarning("cannot connect to Postgres: %s: %s")
_warn_timed_out = _RateLimitedWarning(
    "a statement got no answer from Postgres within %s s; its connection was closed"
)
_warn_read_only = _RateLimitedWarning(
    "Postgres refused a write as read-only (a standby, or a demoted primary after a "
    "failover); dropping the pool's connections"
)
_warn_stale = _RateLimitedWarning(
    "a pooled connection did not answer a ping (%s); reconnecting and dropping the pool"
)


def install(engine: AsyncEngine, statement_timeout: float | None, ping_timeout: float) -> None:
    """Map ``engine``'s faults to ``DatabaseUnavailable`` (``statement_timeout``: the
    engine's, for the log). Pings each pooled connection on checkout, waiting at most
    ``ping_timeout``, so the engine must not (``pool_pre_ping=False``): SQLAlchemy's own
    ping lets a timeout escape as a bare ``TimeoutError``, and wraps its query in a
    transaction whose rollback then waits a second timeout."""
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "do_connect")
    def _connect(dialect: Any, _: Any, cargs: Any, cparams: Any) -> Any:
        # asyncpg's errors while connecting reach the caller unwrapped (SQLAlchemy wraps
        # statements' errors): one exception here says Postgres cannot serve us now.
        try:
            return dialect.connect(*cargs, **cparams)
        except Exception as exc:
            if connect_failed(exc):
                _warn_connect_failed(type(exc).__name__, exc)
                raise DatabaseUnavailable("the memory store cannot be reached; retry") from exc
            raise

    @event.listens_for(sync_engine, "handle_error")
    def _timed_out_or_read_only(context: ExceptionContext) -> BaseException | None:
        if isinstance(context.original_exception.__cause__, pg.ReadOnlySQLTransactionError):
            # A demoted primary (a failover the pool's connections predate): they all
            # point at the wrong server, so the pool reconnects (DNS or a proxy finds
            # the new primary). Only a write says so; reads there answer as before.
            context.is_disconnect = True
            _warn_read_only()
            return DatabaseUnavailable("the memory store is read-only (a failover?); retry")
        if not isinstance(context.original_exception, TimeoutError):
            return None
        # No answer in time: a dropped network or a stuck server. asyncpg has asked the
        # server to cancel; the connection is closed either way, but the pool is kept
        # (the next checkout's ping finds out whether the others are dead too).
        context.is_disconnect = True
        context.invalidate_pool_on_disconnect = False
        _warn_timed_out(statement_timeout)
        return DatabaseUnavailable("the memory store did not answer in time; retry")

    @event.listens_for(sync_engine, "connect")
    def _opened(_: Any, record: Any) -> None:
        record.info[_FRESH] = True

    @event.listens_for(sync_engine, "checkout")
    def _ping(dbapi_connection: Any, record: Any, _: Any) -> None:
        if record.info.pop(_FRESH, False):
            return
        raw = dbapi_connection.driver_connection
        try:
            # One simple query outside any transaction (fine behind PgBouncer); not ";",
            # whose empty answer asyncpg fails to decode.
            dbapi_connection.run_async(lambda c: c.execute("SELECT 1", timeout=ping_timeout))
        except Exception as exc:
            # Closed, or a socket error or timeout (what counts when connecting counts here).
            if not (raw.is_closed() or connect_failed(exc)):
                raise
            raw.terminate()  # a cancel may be in flight: do not wait for it
            # As SQLAlchemy's own ping does: the pool's other connections are as old as
            # this one; the pool reconnects (a failed connect raises the hook's error).
            _warn_stale(type(exc).__name__)
            raise InvalidatePoolError(f"pooled connection dead: {type(exc).__name__}") from exc
