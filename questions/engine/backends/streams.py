"""The batch engine's transport: HTTP/1.1 on an asyncio protocol of its own.

httpx reaches the network through httpcore, and httpcore through AnyIO: its connection pool,
its AnyIO locks and cancel shields and its response streams cost 0.8 ms of CPU a call on the
project's two-core machine, more than the answer checks and the recording together. A batch
slot is one connection used by one task at a time, so none of that is needed. `Transport`
speaks HTTP/1.1 over one asyncio connection kept alive between calls. The engine's calls go
through `Transport.post`: the request's head is composed once per URL and headers (the bytes
an httpx client sends: its default headers, then the wire's, as `httpx.Request` orders them),
and the answer is read by `_Connection` straight from the protocol's buffer. It parses what
h11 — the parser httpcore uses — parses, as h11 does: the same status line and header field
grammar, folded header lines, a head of at most 16 KiB, Content-Length (repeated only with one
value), `Transfer-Encoding: chunked` (no other coding) with its extensions and trailers, a body
framed by the server's close, no body for 1xx (read past), 204 and 304, and a connection kept
only after an HTTP/1.1 answer that does not ask to close it (`tests/test_batch_transport.py`
checks it against h11 on generated answers, cut anywhere). A compressed body is decoded as
httpx decodes it. Through h11 and asyncio's streams an exchange cost ~330 µs of CPU; through
the protocol ~200 µs, half of it the socket's send, receive and poll (K = 8 against the
stand-in on the project's two-core machine).

`Transport` is also an httpx transport (`httpx.AsyncBaseTransport`, `handle_async_request`),
for any caller with an `httpx.Request`. What it keeps of httpcore's behaviour: a kept
connection is used again only if the last answer left it open, the server has neither closed
it nor sent on it, and it has been idle under `KEEPALIVE_SECONDS`; otherwise a new one is
opened (nothing is sent on a stale connection). A connection whose exchange failed or was
cancelled is closed. Each connect, write and read is bounded by the timeout given, and a
failure raises the httpx error httpcore's would (`httpx.ConnectError`, `ReadTimeout`,
`RemoteProtocolError`, …). TLS checks the certificate against the context given, and sends
the host's name (SNI).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import ssl
import time
import typing
from dataclasses import dataclass

import httpx

#: what a batch call goes through: this module's transport, or an httpx client when the
#: environment names a proxy (`services.batches`)
Slot = typing.Union["Transport", httpx.AsyncClient]

#: how long an idle connection is kept (httpx's default `keepalive_expiry`)
KEEPALIVE_SECONDS = 5.0
#: the most a response's head (or a chunk's trailer) may take before it ends (h11's default)
HEAD_LIMIT = 16 * 1024

# h11's grammar (h11/_abnf.py)
_VCHAR = rb"[^\x00\s]"
_STATUS_LINE = re.compile(
    rb"HTTP/(?P<version>[0-9]\.[0-9]) (?P<status>[0-9]{3})(?: (?P<reason>(?:[ \t]|"
    + _VCHAR
    + rb")*))?"
)
_HEADER_FIELD = re.compile(
    rb"(?P<name>[-!#$%&'*+.^_`|~0-9a-zA-Z]+):[ \t]*(?P<value>(?:"
    + _VCHAR
    + rb"+(?:[ \t]+"
    + _VCHAR
    + rb"+)*)?)[ \t]*"
)
_DIGITS = re.compile(rb"[0-9]+")
_CHUNK_HEADER = re.compile(rb"(?P<size>[0-9A-Fa-f]{1,20})(?:;.*)?[ \t]*")
_BLANK_LINE = re.compile(rb"\n\r?\n")
_FOLDED = re.compile(rb"[ \t]+")


@dataclass
class Reply:
    """An answer read whole: what the engine's wires read of a response (`Wire._read`)."""

    status_code: int
    raw_headers: list[tuple[bytes, bytes]]
    content: bytes

    @functools.cached_property
    def headers(self) -> httpx.Headers:
        return httpx.Headers(self.raw_headers)


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: what the server sent and not yet read, and whether the next
    request may go on it."""

    def __init__(self, origin: tuple[bytes, bytes, int]) -> None:
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.ended = False  # the server closed its side, or the connection is gone
        self.lost: Exception | None = None  # why it went, when it failed
        self.waiter: asyncio.Future | None = None  # a read waiting for data
        self.writable: asyncio.Future | None = None  # set while the socket's buffer is full
        self.idle_since = time.monotonic()
        self.kept = True  # the last answer leaves it open for the next request

    # asyncio's side
    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.lost = exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        if self.writable is None:
            self.writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        writable, self.writable = self.writable, None
        if writable is not None and not writable.done():
            writable.set_result(None)

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # the client's side
    def reusable(self, origin: tuple[bytes, bytes, int]) -> bool:
        """Whether the next request may go on it: same origin, left open by its last answer,
        not closed or sent on by the server, not idle too long."""
        return (
            origin == self.origin
            and self.kept
            and not self.ended
            and not self.buffer
            and time.monotonic() - self.idle_since < KEEPALIVE_SECONDS
        )

    def close(self) -> None:
        self.kept = False
        if self.transport is not None:
            self.transport.close()

    async def exchange(
        self, request: bytes, write: float | None, read: float | None
    ) -> tuple[int, bytes, bytes, list[tuple[bytes, bytes]], bytes]:
        """Send a whole request and read its answer: (status, HTTP version, reason, headers,
        body). The connection is kept for the next only if the answer says so."""
        self.kept = False  # until this exchange has ended well
        with _mapped(httpx.WriteTimeout, httpx.WriteError):
            if self.ended:
                raise OSError(str(self.lost or "the server closed the connection"))
            self.transport.write(request)
            if self.writable is not None:
                async with asyncio.timeout(write):
                    await self.writable
        with _mapped(httpx.ReadTimeout, httpx.ReadError):
            while True:  # an informational (1xx) answer is read past
                version, status, reason, headers = await self._head(read)
                if status >= 200:
                    break
                if status == 101:
                    raise httpx.RemoteProtocolError("The server switched protocols.")
            body, framed = await self._body(status, headers, read)
        self.kept = framed and version == b"1.1" and not _says_close(headers)
        self.idle_since = time.monotonic()
        return status, version, reason, headers, body

    async def _more(self, timeout: float | None) -> None:
        """Wait for the server to send more (or end): what was sent is in `buffer`."""
        if self.ended:  # the callers look first: nothing more would ever come
            raise httpx.RemoteProtocolError("Server disconnected.")
        self.waiter = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await self.waiter
        finally:
            self.waiter = None
        if self.lost is not None and not self.buffer:
            raise self.lost

    async def _lines(self, timeout: float | None, cut: str) -> list[bytes]:
        """The lines up to the next blank one (a head or a trailer), taken from the buffer;
        `cut` says what is wrong when the server ends before they do."""
        searched = 0
        while True:
            buffer = self.buffer
            if buffer[:2] == b"\r\n" or buffer[:1] == b"\n":
                del buffer[: 2 if buffer[:1] == b"\r" else 1]
                return []
            found = _BLANK_LINE.search(buffer, searched)
            if found is not None:
                end = found.end()
                lines = bytes(buffer[:end]).split(b"\n")[:-2]
                del buffer[:end]
                return [line[:-1] if line.endswith(b"\r") else line for line in lines]
            if len(buffer) > HEAD_LIMIT:
                raise httpx.RemoteProtocolError("The response's head is too large.")
            searched = max(0, len(buffer) - 2)
            if self.ended:
                raise httpx.RemoteProtocolError(cut)
            await self._more(timeout)

    async def _head(self, timeout: float | None) -> tuple[bytes, int, bytes, list]:
        cut = _CUT_HEAD if self.buffer else _NO_ANSWER
        lines = await self._lines(timeout, cut)
        if not lines:
            raise httpx.RemoteProtocolError("No status line received.")
        matched = _STATUS_LINE.fullmatch(lines[0])
        if matched is None:
            raise httpx.RemoteProtocolError(f"Illegal status line: {lines[0][:100]!r}")
        version, status, reason = matched.group("version", "status", "reason")
        return version, int(status), reason or b"", _normalized(_fields(lines[1:]))

    async def _body(self, status: int, headers: list, timeout: float | None) -> tuple[bytes, bool]:
        """The body as `_framing` says it is framed, and whether the framing ended it (not
        the server's close)."""
        framing, length = _framing(status, headers)
        if framing == "chunked":
            return await self._chunked(timeout), True
        if framing == "length":
            while len(self.buffer) < length:
                if self.ended:
                    raise httpx.RemoteProtocolError(
                        "peer closed connection without sending complete message body "
                        f"(received {len(self.buffer)} bytes, expected {length})"
                    )
                await self._more(timeout)
            body = bytes(self.buffer[:length])
            del self.buffer[:length]
            return body, True
        while not self.ended:  # framed by the server's close
            await self._more(timeout)
        body = bytes(self.buffer)
        self.buffer.clear()
        return body, False

    async def _chunked(self, timeout: float | None) -> bytes:
        parts = []
        while True:
            while (end := self.buffer.find(b"\r\n")) < 0:
                if len(self.buffer) > HEAD_LIMIT:
                    raise httpx.RemoteProtocolError("A chunk's header is too large.")
                await self._more_of_chunks(timeout)
            matched = _CHUNK_HEADER.fullmatch(self.buffer, 0, end)
            if matched is None:
                raise httpx.RemoteProtocolError(
                    f"Illegal chunk header: {bytes(self.buffer[:end][:100])!r}"
                )
            size = int(matched.group("size"), 16)
            del self.buffer[: end + 2]
            if size == 0:
                _fields(await self._lines(timeout, _CUT_CHUNKED))  # the trailer, read past
                return b"".join(parts)
            while (footer := self.buffer[size : size + 2]) != b"\r\n":
                if footer != b"\r\n"[: len(footer)]:  # refused as soon as it is wrong
                    raise httpx.RemoteProtocolError("Malformed chunk footer.")
                await self._more_of_chunks(timeout)
            parts.append(bytes(self.buffer[:size]))
            del self.buffer[: size + 2]

    async def _more_of_chunks(self, timeout: float | None) -> None:
        if self.ended:
            raise httpx.RemoteProtocolError(_CUT_CHUNKED)
        await self._more(timeout)


# what a server that hangs up too early is told (httpcore's and h11's words)
_NO_ANSWER = "Server disconnected without sending a response."
_CUT_HEAD = "Server disconnected in the middle of the response's head."
_CUT_CHUNKED = (
    "peer closed connection without sending complete message body (incomplete chunked read)"
)


def _fields(lines: list[bytes]) -> list[tuple[bytes, bytes]]:
    """Header lines as (name, value), folded lines joined (h11's `_decode_header_lines`)."""
    fields: list[tuple[bytes, bytes]] = []
    last: bytes | None = None
    for line in lines:
        folded = _FOLDED.match(line)
        if folded:
            if last is None:
                raise httpx.RemoteProtocolError("A continuation line starts the headers.")
            last += b" " + line[folded.end() :]
            continue
        if last is not None:
            fields.append(_field(last))
        last = line
    if last is not None:
        fields.append(_field(last))
    return fields


def _field(line: bytes) -> tuple[bytes, bytes]:
    matched = _HEADER_FIELD.fullmatch(line)
    if matched is None:
        raise httpx.RemoteProtocolError(f"Illegal header line: {line[:100]!r}")
    return matched.group("name", "value")


def _normalized(fields: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """An answer's headers as h11 hands them on (`normalize_and_validate`): one Content-Length,
    given once however often the server repeated it (a list of one value is that value; two
    values are refused), and `Transfer-Encoding: chunked`, lowercased, or nothing else."""
    headers, length, chunked = [], None, False
    for name, value in fields:
        lowered = name.lower()
        if lowered == b"content-length":
            lengths = {part.strip() for part in value.split(b",")}
            if len(lengths) != 1:
                raise httpx.RemoteProtocolError("Conflicting Content-Length headers.")
            value = lengths.pop()
            if not _DIGITS.fullmatch(value) or len(value) > 20:
                raise httpx.RemoteProtocolError("Bad Content-Length.")
            if length is not None:
                if length != value:
                    raise httpx.RemoteProtocolError("Conflicting Content-Length headers.")
                continue
            length = value
        elif lowered == b"transfer-encoding":
            if chunked:
                raise httpx.RemoteProtocolError("Multiple Transfer-Encoding headers.")
            value = value.lower()
            if value != b"chunked":
                raise httpx.RemoteProtocolError("Only Transfer-Encoding: chunked is supported.")
            chunked = True
        headers.append((name, value))
    return headers


def _framing(status: int, headers: list[tuple[bytes, bytes]]) -> tuple[str, int]:
    """How an answer's body ends (RFC 9112 §6.3, as h11 reads it), from its `_normalized`
    headers: ("length", n), ("chunked", 0) or ("close", 0)."""
    if status in (204, 304):
        return "length", 0
    names = {name.lower(): value for name, value in headers}
    if b"transfer-encoding" in names:
        return "chunked", 0
    if b"content-length" in names:
        return "length", int(names[b"content-length"])
    return "close", 0


def _says_close(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(
        name.lower() == b"connection"
        and b"close" in (part.strip().lower() for part in value.split(b","))
        for name, value in headers
    )


@functools.cache
def _client_headers() -> dict[str, str]:
    """The headers an httpx client sends with every request (Accept, Accept-Encoding,
    Connection, User-Agent), so that a call straight through the transport reads the same."""
    return dict(httpx.AsyncClient(verify=False, trust_env=False).headers)


@functools.lru_cache(maxsize=64)
def _head_of(url: httpx.URL, headers: tuple[tuple[str, str], ...]) -> tuple[bytes, bytes]:
    """A POST's head to `url` with `headers` over an httpx client's default ones, as an httpx
    client composes it, split around its Content-Length value: (before, after)."""
    sent = httpx.Headers(_client_headers())
    sent.update(dict(headers))  # the wire's own (Accept among them) over the client's
    request = httpx.Request("POST", url, content=b"-", headers=sent)
    head = _head(b"POST", url.raw_path, request.headers.raw)
    before, found, after = head.partition(b"\r\nContent-Length: 1\r\n")  # httpx's, for b"-"
    assert found, "httpx gives a POST with content its Content-Length"
    return before + b"\r\nContent-Length: ", b"\r\n" + after


def _head(method: bytes, target: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    """A request's head: its line, its header fields as given, the blank line."""
    lines = [b"%s %s HTTP/1.1\r\n" % (method, target)]
    for name, value in headers:
        if b"\r" in name + value or b"\n" in name + value:
            raise httpx.LocalProtocolError("A header holds a line break.")
        lines.append(name + b": " + value + b"\r\n")
    return b"".join(lines) + b"\r\n"


class Transport(httpx.AsyncBaseTransport):
    """One connection, kept alive: `post` for the engine's calls, `handle_async_request` for
    httpx's requests."""

    def __init__(self, verify: ssl.SSLContext):
        self._tls = verify
        self._connection: _Connection | None = None

    async def post(
        self, url: httpx.URL, headers: typing.Mapping[str, str], content: bytes, timeout: float
    ) -> Reply:
        """POST `content` to `url` with `headers` (over an httpx client's own), each connect,
        write and read within `timeout` seconds; the answer, read whole and decoded."""
        before, after = _head_of(url, tuple(headers.items()))
        request = before + str(len(content)).encode() + after + content
        status, _, _, raw, body = await self._exchange(url, request, timeout, timeout, timeout)
        reply = Reply(status, raw, body)
        if any(name.lower() == b"content-encoding" for name, _ in raw):
            reply.content = await _decoded(status, raw, body)
        return reply

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        body = await request.aread()
        head = _head(request.method.encode(), request.url.raw_path, request.headers.raw)
        status, version, reason, raw, content = await self._exchange(
            request.url, head + body,
            timeouts.get("connect"), timeouts.get("write"), timeouts.get("read"),
        )  # fmt: skip
        return httpx.Response(
            status,
            headers=raw,
            stream=httpx.ByteStream(content),
            request=request,
            extensions={"http_version": b"HTTP/" + version, "reason_phrase": reason},
        )

    async def _exchange(
        self,
        url: httpx.URL,
        request: bytes,
        connect: float | None,
        write: float | None,
        read: float | None,
    ) -> tuple[int, bytes, bytes, list[tuple[bytes, bytes]], bytes]:
        scheme = url.raw_scheme
        if scheme not in (b"http", b"https"):
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{url}'.")
        origin = (scheme, url.raw_host, url.port or (443 if scheme == b"https" else 80))
        connection = self._connection
        if connection is not None and not connection.reusable(origin):
            connection.close()
            connection = self._connection = None
        if connection is None:
            connection = self._connection = await self._open(origin, connect)
        try:
            answer = await connection.exchange(request, write, read)
        except BaseException:  # a failed or cancelled exchange leaves the connection unknown
            self._connection = None
            connection.close()
            raise
        if not connection.kept:  # the server asked to close it, or framed its answer by closing
            self._connection = None
            connection.close()
        return answer

    async def _open(self, origin: tuple[bytes, bytes, int], timeout: float | None) -> _Connection:
        scheme, host, port = origin
        name = host.decode("ascii")
        tls = scheme == b"https"
        loop = asyncio.get_running_loop()
        with _mapped(httpx.ConnectTimeout, httpx.ConnectError):
            async with asyncio.timeout(timeout):
                _, connection = await loop.create_connection(
                    functools.partial(_Connection, origin),
                    name,
                    port,
                    ssl=self._tls if tls else None,
                    server_hostname=name if tls else None,
                )
        return connection

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


async def _decoded(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    """A body as httpx decodes it by its Content-Encoding (gzip, deflate, br, zstd)."""
    response = httpx.Response(status, headers=headers, stream=httpx.ByteStream(body))
    return await response.aread()


@contextlib.contextmanager
def _mapped(timeout: type[Exception], failed: type[Exception]) -> typing.Iterator[None]:
    """A timeout or an OS error as the httpx error httpcore's would raise."""
    try:
        yield
    except TimeoutError as exc:
        raise timeout(str(exc) or "timed out") from exc
    except (OSError, EOFError) as exc:  # ssl.SSLError is an OSError
        raise failed(str(exc) or type(exc).__name__) from exc
