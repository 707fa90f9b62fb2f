"""The batch engine's transport: httpx's, on asyncio's own streams.

httpx reaches the network through httpcore, and httpcore through AnyIO, whose cancel scopes
and backend lookups on every read and write cost about a fifth of a call's CPU — at
concurrency 64 more than the answer checks. The engine runs on plain asyncio, so its calls go
through `Transport`: httpx's transport (its error mapping, its HTTP/1.1, its TLS context) over
an httpcore pool whose network backend is `AsyncioBackend`, asyncio's streams with each read,
write and connect bounded by the timeout httpcore hands down, and raising httpcore's own
errors as AnyIO's backend does.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import typing

import httpcore
import httpx

#: what a batch call goes through: this module's transport, or an httpx client when the
#: environment names a proxy (`services.batches`)
Slot = httpx.AsyncBaseTransport | httpx.AsyncClient

#: what is read from a socket at most per read (httpcore asks for 64 KiB)
_LIMIT = 2**20


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._reader, self._writer = reader, writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _mapped(httpcore.ReadTimeout, httpcore.ReadError):
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        with _mapped(httpcore.WriteTimeout, httpcore.WriteError):
            async with asyncio.timeout(timeout):
                self._writer.write(buffer)
                await self._writer.drain()

    async def aclose(self) -> None:
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> _Stream:
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        return self

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "is_readable":  # an idle connection the server closed, or sent on
            return self._reader.at_eof() or bool(self._reader._buffer)
        names = {
            "ssl_object": "ssl_object",
            "client_addr": "sockname",
            "server_addr": "peername",
            "socket": "socket",
        }
        return self._writer.get_extra_info(names[info]) if info in names else None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network on asyncio's streams."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host,
                    port,
                    local_addr=(local_address, 0) if local_address else None,
                    limit=_LIMIT,
                )
        sock = writer.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
        return _Stream(reader, writer)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_unix_connection(path, limit=_LIMIT)
        return _Stream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@contextlib.contextmanager
def _mapped(timeout: type[Exception], failed: type[Exception]) -> typing.Iterator[None]:
    """A timeout or an OS error as the httpcore error httpx maps (`httpx.ReadTimeout`, …)."""
    try:
        yield
    except TimeoutError as exc:
        raise timeout(str(exc) or "timed out") from exc
    except (OSError, EOFError) as exc:  # ssl.SSLError is an OSError
        raise failed(str(exc) or type(exc).__name__) from exc


class Transport(httpx.AsyncHTTPTransport):
    """httpx's transport of one connection, its pool on `AsyncioBackend`."""

    def __init__(self, verify: ssl.SSLContext):
        one = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        super().__init__(verify=verify, limits=one)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=verify,
            max_connections=one.max_connections,
            max_keepalive_connections=one.max_keepalive_connections,
            keepalive_expiry=one.keepalive_expiry,
            network_backend=AsyncioBackend(),
        )
