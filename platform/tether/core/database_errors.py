"""Which database errors mean "Postgres cannot serve us right now" (the request may
succeed if retried), as opposed to a statement or a use of a connection that failed,
which is a bug."""

from __future__ import annotations

import asyncpg.exceptions as pg  # type: ignore[import-untyped]
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from tether.core.errors import ServiceUnavailable

# What asyncpg raises when Postgres goes away or refuses us. While connecting it raises
# them itself (SQLAlchemy wraps only statements' errors, see ``create_engine``); on a
# statement SQLAlchemy's adapter raises its own error from them.
_SERVER_UNAVAILABLE = (
    # SQLSTATE class 08 but 08P01, a protocol violation, which can be our bug (PgBouncer
    # reports its own outages with it too; those stay 500s).
    pg.ClientCannotConnectError,
    pg.ConnectionRejectionError,
    pg.ConnectionFailureError,
    pg.ConnectionDoesNotExistError,  # the connection was lost mid-request
    pg.CannotConnectNowError,  # starting up, shutting down, in recovery
    pg.TooManyConnectionsError,
    pg.AdminShutdownError,  # terminated by a restart or a failover
    pg.CrashShutdownError,
)


class DatabaseUnavailable(ServiceUnavailable):
    code = "database_unavailable"
    title = "The database is unavailable"
    retry_after = 1  # a failover or restart takes seconds; clients back off from here


# What code that degrades on a database failure catches: SQLAlchemy's errors, and the
# connect failures it does not wrap (raised as DatabaseUnavailable by the engine's hook).
DATABASE_ERRORS = (SQLAlchemyError, DatabaseUnavailable)


def connect_failed(exc: BaseException) -> bool:
    """Whether connecting failed because Postgres is unreachable or refusing us: any
    socket error or timeout while connecting, so a wrong host, port, socket path or TLS
    setting counts too (the connect warning names the cause); a wrong password, role or
    database does not."""
    return isinstance(exc, (OSError, *_SERVER_UNAVAILABLE))


def database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says Postgres is unreachable, refusing connections, or had none
    free for us in time."""
    if isinstance(exc, DatabaseUnavailable | PoolTimeout):
        return True
    if isinstance(exc, DBAPIError):
        cause = None if exc.orig is None else exc.orig.__cause__
        return exc.connection_invalidated or isinstance(cause, _SERVER_UNAVAILABLE)
    return False
