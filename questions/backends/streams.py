"""The batch engine's transport: HTTP/1.1 through h11 on asyncio's own streams, as httpx's.

httpx reaches the network through httpcore, and httpcore through AnyIO: its connection pool,
its AnyIO locks and cancel shields (each looking up the running library through sniffio) and
its response streams cost 0.8 ms of CPU a call on the project's two-core machine, more than
the answer checks and the recording together. A batch slot is one connection used by one
task at a time, so none of that is needed. `Transport` is an httpx transport
(`httpx.AsyncBaseTransport`: httpx's requests, responses, content decoding and errors) that
speaks HTTP/1.1 through h11, the parser httpcore itself uses, over one asyncio connection kept
alive between calls: 0.43 ms a call.

What it keeps of httpcore's behaviour: a kept connection is used again only if it is idle,
the server has neither closed it nor sent on it, and it has been idle under
`KEEPALIVE_SECONDS`; otherwise a new one is opened (nothing is sent on a stale connection). A
connection whose exchange failed or was cancelled, or that the server asked to close, is
closed. Each connect, write and read is bounded by the timeout the request carries
(`extensions["timeout"]`), and a failure raises the httpx error httpcore's would
(`httpx.ConnectError`, `ReadTimeout`, `RemoteProtocolError`, …). TLS checks the certificate
against the context given, and sends the host's name (SNI).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
import typing

import h11
import httpx

#: what a batch call goes through: this module's transport, or an httpx client when the
#: environment names a proxy (`services.batches`)
Slot = httpx.AsyncBaseTransport | httpx.AsyncClient

#: what is read from a socket at most per read (httpcore reads 64 KiB)
_READ = 2**16
#: how long an idle connection is kept (httpx's default `keepalive_expiry`)
KEEPALIVE_SECONDS = 5.0


class _Connection:
    """One HTTP/1.1 connection: its streams and h11's state of it."""

    def __init__(self, origin: tuple[bytes, bytes, int], reader, writer) -> None:
        self.origin = origin
        self.reader: asyncio.StreamReader = reader
        self.writer: asyncio.StreamWriter = writer
        self.h11 = h11.Connection(h11.CLIENT)
        self.idle_since = time.monotonic()

    def reusable(self, origin: tuple[bytes, bytes, int]) -> bool:
        """Whether the next request may go on it: same origin, idle, not closed or sent on by
        the server (`reader._buffer`: what came unasked), not idle too long."""
        return (
            origin == self.origin
            and self.h11.our_state is h11.IDLE
            and not self.reader.at_eof()
            and not self.reader._buffer
            and time.monotonic() - self.idle_since < KEEPALIVE_SECONDS
        )

    def close(self) -> None:
        self.writer.close()


class Transport(httpx.AsyncBaseTransport):
    """httpx's transport of one connection, kept alive, over h11 on asyncio's streams."""

    def __init__(self, verify: ssl.SSLContext):
        self._tls = verify
        self._connection: _Connection | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        url = request.url
        scheme = url.raw_scheme
        if scheme not in (b"http", b"https"):
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{url}'.")
        origin = (scheme, url.raw_host, url.port or (443 if scheme == b"https" else 80))
        connection = self._connection
        if connection is not None and not connection.reusable(origin):
            connection.close()
            connection = self._connection = None
        if connection is None:
            connection = self._connection = await self._open(origin, timeouts.get("connect"))
        try:
            return await self._exchange(connection, request, timeouts)
        except BaseException:  # a failed or cancelled exchange leaves the connection unknown
            self._connection = None
            connection.close()
            raise

    async def _open(self, origin: tuple[bytes, bytes, int], timeout: float | None) -> _Connection:
        scheme, host, port = origin
        name = host.decode("ascii")
        tls = scheme == b"https"
        with _mapped(httpx.ConnectTimeout, httpx.ConnectError):
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    name,
                    port,
                    ssl=self._tls if tls else None,
                    server_hostname=name if tls else None,
                    limit=2**20,
                )
        return _Connection(origin, reader, writer)

    async def _exchange(
        self, connection: _Connection, request: httpx.Request, timeouts: dict[str, typing.Any]
    ) -> httpx.Response:
        state = connection.h11
        body = await request.aread()
        with _mapped(httpx.WriteTimeout, httpx.WriteError, h11_error=httpx.LocalProtocolError):
            out = state.send(
                h11.Request(
                    method=request.method, target=request.url.raw_path, headers=request.headers.raw
                )
            )
            if body:
                out += state.send(h11.Data(data=body))
            out += state.send(h11.EndOfMessage())
            async with asyncio.timeout(timeouts.get("write")):
                connection.writer.write(out)
                await connection.writer.drain()
        head, parts = await self._receive(connection, timeouts.get("read"))
        if state.our_state is h11.DONE and state.their_state is h11.DONE:
            state.start_next_cycle()
            connection.idle_since = time.monotonic()
        else:  # the server asked to close it, or framed its answer by closing
            self._connection = None
            connection.close()
        return httpx.Response(
            head.status_code,
            headers=head.headers.raw_items(),
            stream=httpx.ByteStream(b"".join(parts)),
            request=request,
            extensions={"http_version": b"HTTP/" + head.http_version, "reason_phrase": head.reason},
        )

    async def _receive(
        self, connection: _Connection, timeout: float | None
    ) -> tuple[h11.Response, list[bytes]]:
        """The response's head and its body's parts, read to the end of the message."""
        state, head, parts = connection.h11, None, []
        while True:
            with _mapped(httpx.ReadTimeout, httpx.ReadError, h11_error=httpx.RemoteProtocolError):
                event = state.next_event()
                if event is h11.NEED_DATA:
                    async with asyncio.timeout(timeout):
                        data = await connection.reader.read(_READ)
                    if not data and state.their_state is h11.SEND_RESPONSE:
                        raise httpx.RemoteProtocolError(
                            "Server disconnected without sending a response."
                        )
                    state.receive_data(data)
                    continue
            if isinstance(event, h11.Response):
                head = event
            elif isinstance(event, h11.Data):
                parts.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None  # h11 ends no message before its head
                return head, parts
            elif isinstance(event, h11.ConnectionClosed):
                raise httpx.RemoteProtocolError("Server disconnected.")
            # an informational (1xx) response is read past

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()
            with contextlib.suppress(Exception):
                await connection.writer.wait_closed()


@contextlib.contextmanager
def _mapped(
    timeout: type[Exception],
    failed: type[Exception],
    *,
    h11_error: type[Exception] = httpx.RemoteProtocolError,
) -> typing.Iterator[None]:
    """A timeout, an OS error or h11's refusal as the httpx error httpcore's would raise."""
    try:
        yield
    except TimeoutError as exc:
        raise timeout(str(exc) or "timed out") from exc
    except (OSError, EOFError) as exc:  # ssl.SSLError is an OSError
        raise failed(str(exc) or type(exc).__name__) from exc
    except h11.ProtocolError as exc:
        raise h11_error(str(exc)) from exc
