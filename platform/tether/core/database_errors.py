"""Which database errors mean "Postgres cannot serve us right now" (the request may
succeed if retried), as opposed to a statement or a use of a connection that failed,
which is a bug."""

from __future__ import annotations

import asyncpg.exceptions as pg  # type: ignore[import-untyped]
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

# Raised by asyncpg; SQLAlchemy's adapter raises its own error from them.
_UNAVAILABLE = (
    pg.ConnectionDoesNotExistError,  # the connection was lost mid-request
    pg.ConnectionFailureError,
    pg.CannotConnectNowError,  # starting up, shutting down, in recovery
    pg.TooManyConnectionsError,
    pg.AdminShutdownError,  # terminated by a restart or a failover
    pg.CrashShutdownError,
    ConnectionError,
)


def database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says Postgres is unreachable, refusing connections, or had none
    free for us in time."""
    if isinstance(exc, PoolTimeout | ConnectionError):
        # No pooled connection came free in time; or connecting was refused or reset
        # (asyncpg raises the OSError itself, unwrapped, while connecting).
        return True
    if isinstance(exc, DBAPIError):
        cause = None if exc.orig is None else exc.orig.__cause__
        return exc.connection_invalidated or isinstance(cause, _UNAVAILABLE)
    return False
