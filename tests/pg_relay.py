"""A TCP relay between a test's app (or worker) and the embedded Postgres, which a test
cuts (every open connection and the listener) and restores on the same port, or stalls
(it keeps every connection open and forwards nothing, as a network dropping packets
silently does): Postgres outages without stopping the Postgres other tests share."""

from __future__ import annotations

import asyncio
import glob
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from urllib.parse import urlsplit

from tether.core.settings import Settings


class Relay:
    """127.0.0.1:``port`` → the Postgres unix socket, until cut; stalled, it holds
    what either side sends."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.flowing = asyncio.Event()
        self.flowing.set()

    def stall(self) -> None:
        self.flowing.clear()

    async def open(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()
        self._writers.clear()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(self.socket_path)
        self._writers |= {writer, upstream_writer}
        await asyncio.gather(
            _pipe(reader, upstream_writer, self.flowing),
            _pipe(upstream_reader, writer, self.flowing),
            return_exceptions=True,
        )

    def settings_for(self, settings: Settings) -> Settings:
        """``settings`` with Postgres reached through this relay."""
        return settings.model_copy(update={"database_url": self.url(settings.database_url)})

    def url(self, database_url: str) -> str:
        """``database_url``'s database and login, through the relay."""
        parts = urlsplit(database_url)
        return f"postgresql://{parts.username}:@127.0.0.1:{self.port}{parts.path}"


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, flowing: asyncio.Event
) -> None:
    try:
        while data := await reader.read(65536):
            await flowing.wait()
            writer.write(data)
            await writer.drain()
    finally:
        with suppress(Exception):
            writer.close()


@asynccontextmanager
async def relay_to(settings: Settings) -> AsyncIterator[Relay]:
    socket_dir = urlsplit(settings.require_database_url()).query.removeprefix("host=")
    (socket_path,) = glob.glob(f"{socket_dir}/.s.PGSQL.*[0-9]")
    relay = Relay(socket_path)
    await relay.open()
    try:
        yield relay
    finally:
        with suppress(Exception):
            await relay.cut()


@asynccontextmanager
async def dropping_listener(port: int = 0) -> AsyncIterator[int]:
    """A listener on ``port`` that closes every connection as soon as it is accepted."""

    async def drop(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(drop, "127.0.0.1", port)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()
