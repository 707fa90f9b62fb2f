"""The HTTP clients every provider call goes through — single asks and batch slots, on every
wire — and how an answer is read.

One place builds them (`client`, `async_client`), all alike: the TLS context (certifi's roots,
or the file SSL_CERT_FILE / the directory SSL_CERT_DIR names: where a TLS-inspecting gateway's
CA goes), the environment (`trust_env`: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY, as
httpx reads them), no redirect followed, `Accept-Encoding: identity`, an idle connection
closed after 5 s (httpx's default). A single ask goes through one client per backend and process
(`shared`, from any thread); the batch engine gives each slot a client of one connection
(`slots`: httpx's pool looks at every connection it holds for each request, which at 64 slots
cost more than the calls did), kept from run to run on its loop. In tests, `injected(transport)`
makes every client built meanwhile send through that transport.

A call (`exchange`, `aexchange`) has one deadline for all of it — connecting, sending and every
byte of the answer (httpx bounds each read, not the call) — and reads at most `limit` bytes of
answer, decoded: a larger Content-Length is refused before the body is read, and a body
(chunked, delimited by the close, or compressed despite the identity asked for) as soon as what
it decodes to passes the limit (`AnswerTooLarge`). A network failure once the answer's head has
come is `AnswerBroken`; every other failure is httpx's own error. `failure` names each as a
row of the error table does.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from questions.core.numbers import whole_number

#: what every call asks for: an answer as it is, so its bytes are what is counted (a provider
#: that compresses anyway is decoded, and counted decoded)
HEADERS = {"Accept-Encoding": "identity"}


class AnswerTooLarge(Exception):
    """The answer is larger than the call reads: refused by its Content-Length, or as soon as
    its body (decoded) passed `limit` bytes."""

    def __init__(self, status_code: int, limit: int):
        self.status_code, self.limit = status_code, limit
        super().__init__(f"an answer over {limit} bytes")


class AnswerBroken(Exception):
    """The connection failed once the answer's head had come: the provider was reached and
    its answer broke off."""

    def __init__(self, status_code: int, cause: httpx.TransportError):
        self.status_code, self.cause = status_code, cause
        super().__init__(type(cause).__name__)


def failure(exc: BaseException) -> str | None:
    """What a call's exception says happened, as the error table's row: `timeout` (the deadline
    passed), `too_large`, `broken` (the connection failed during the answer), `protocol` (an
    answer came that is not HTTP: its parser, h11, refused it), `unreachable` (no connection,
    or the provider hung up before answering); None for what is not the provider's doing."""
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return "timeout"
    if isinstance(exc, AnswerTooLarge):
        return "too_large"
    if isinstance(exc, AnswerBroken):
        return "broken"
    if isinstance(exc, httpx.ProtocolError) and not _hung_up(exc):
        return "protocol"
    if isinstance(exc, httpx.HTTPError):
        return "unreachable"
    return None


def _hung_up(exc: httpx.ProtocolError) -> bool:
    """The provider closed the connection before any answer: httpcore says so with an error of
    its own, which httpx's carries; what the parser refused has the parser's error beneath
    httpcore's (raised while handling it)."""
    below = exc.__cause__
    return below is None or (below.__cause__ or below.__context__) is None


@functools.cache
def tls() -> ssl.SSLContext:
    """The TLS context of every client, built once (building one costs tens of milliseconds):
    certifi's roots, or what SSL_CERT_FILE / SSL_CERT_DIR name; the host name checked."""
    return httpx.create_ssl_context()


def timeout(seconds: float) -> httpx.Timeout:
    """Each step of a call (connect, write, each read, a pooled connection) within `seconds`:
    what is left of the call's deadline."""
    return httpx.Timeout(max(0.001, seconds))


_transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None  # `injected`


def client() -> httpx.Client:
    """A client for calls from threads."""
    injected = _transport if isinstance(_transport, httpx.BaseTransport) else None
    return httpx.Client(
        verify=tls(),
        trust_env=True,
        follow_redirects=False,
        headers=HEADERS,
        transport=injected,
    )


def async_client() -> httpx.AsyncClient:
    """A client of one connection, for one slot of the batch engine."""
    injected = _transport if isinstance(_transport, httpx.AsyncBaseTransport) else None
    return httpx.AsyncClient(
        verify=tls(),
        trust_env=True,
        follow_redirects=False,
        headers=HEADERS,
        limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        transport=injected,
    )


# --- kept clients ---------------------------------------------------------------------------

_shared: dict[str, httpx.Client] = {}
_shared_lock = threading.Lock()
#: bumped by `forget`: a kept client of an earlier generation is closed instead of used
_generation = 0


def shared(name: str) -> httpx.Client:
    """One client per backend and process, so single asks reuse the provider's connection;
    each call brings its own timeout."""
    kept = _shared.get(name)
    if kept is None:
        with _shared_lock:
            kept = _shared.get(name)
            if kept is None:
                kept = _shared[name] = client()
    return kept


class Pool:
    """The batch slots' idle clients on one loop, kept from run to run (at most `keep`). Used on
    that loop only."""

    def __init__(self) -> None:
        self.idle: list[httpx.AsyncClient] = []
        self.generation = _generation

    async def take(self, n: int) -> list[httpx.AsyncClient]:
        if self.generation != _generation:  # `forget` was called: built for another setting
            stale, self.idle, self.generation = self.idle, [], _generation
            for kept in stale:
                await kept.aclose()
        taken = [self.idle.pop() for _ in range(min(n, len(self.idle)))]
        return taken + [async_client() for _ in range(n - len(taken))]

    async def give_back(self, clients: list[httpx.AsyncClient], keep: int) -> None:
        room = max(0, keep - len(self.idle)) if self.generation == _generation else 0
        self.idle.extend(clients[:room])
        for extra in clients[room:]:
            await extra.aclose()


#: the pool of the engine's loop (a process started anew has a loop, and clients, of its own)
_pools: dict[int, tuple[asyncio.AbstractEventLoop, Pool]] = {}


def pool() -> Pool:
    """The pool of the running loop."""
    loop = asyncio.get_running_loop()
    kept = _pools.get(id(loop))
    if kept is None or kept[0] is not loop:
        _pools.clear()
        kept = _pools[id(loop)] = (loop, Pool())
    return kept[1]


@contextlib.asynccontextmanager
async def slots(n: int, *, keep: int) -> AsyncIterator[list[httpx.AsyncClient]]:
    """`n` clients of one connection each, taken from the loop's pool and given back at the end
    (their connections still open for the next run; at most `keep` idle)."""
    taken = await pool().take(n)
    try:
        yield taken
    finally:
        await pool().give_back(taken, keep)


def forget() -> None:
    """Build every client anew from now on (the environment, the trust store or the injected
    transport changed): the single asks' are closed now, the slots' when their loop next takes
    them."""
    global _generation
    with _shared_lock:
        kept = list(_shared.values())
        _shared.clear()
        _generation += 1
    tls.cache_clear()
    for old in kept:
        old.close()


@contextlib.contextmanager
def injected(transport: httpx.BaseTransport | httpx.AsyncBaseTransport) -> Iterator[None]:
    """For tests: every client built meanwhile sends through `transport` (a sync one serves the
    single asks, an async one the batch slots; `httpx.MockTransport` is both). A proxy the
    environment names still gets a transport of its own, as in any httpx client."""
    global _transport
    _transport = transport
    forget()
    try:
        yield
    finally:
        _transport = None
        forget()


# --- one call -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _url(url: str) -> httpx.URL:
    """A wire's URL, parsed once (an httpx.URL is immutable; parsing it costs ~40 µs a call)."""
    return httpx.URL(url)


class _Body:
    """An answer's body as it arrives, decoded, refused once it passes `limit` bytes."""

    def __init__(self, response: httpx.Response, limit: int):
        self.response, self.limit = response, limit
        self.chunks: list[bytes] = []
        self.size = 0
        length = whole_number(response.headers.get("content-length", ""), digits=20)
        if length is not None and length > limit:  # h11 lets only digits through
            raise AnswerTooLarge(response.status_code, limit)

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.limit:
            raise AnswerTooLarge(self.response.status_code, self.limit)
        self.chunks.append(chunk)

    def broken(self, exc: httpx.TransportError) -> Exception:
        """What a failure while the body came means: httpx's error for a deadline or an answer
        that is not HTTP; `AnswerBroken` for the network."""
        if isinstance(exc, httpx.TimeoutException | httpx.ProtocolError):
            return exc
        return AnswerBroken(self.response.status_code, exc)

    def content(self) -> bytes:
        return b"".join(self.chunks)


def exchange(
    name: str, url: str, payload: bytes, headers: dict[str, str], seconds: float, limit: int
) -> tuple[httpx.Response, bytes]:
    """POST `payload` through the backend's shared client; the response and its body, read
    within `seconds` in all. The exchange runs on a thread of its own and the caller waits
    until the deadline only: the thread reads the body as it comes, stops at the deadline
    between chunks, and each of its reads is bounded by the time left when it began."""
    deadline = time.monotonic() + seconds
    through = shared(name)
    done = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = _read(through, url, payload, headers, deadline, limit)
        except BaseException as exc:  # handed to the caller, who maps it
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name=f"{name}-call", daemon=True).start()
    if not done.wait(seconds):
        raise httpx.TimeoutException("past the deadline")
    if "error" in box:
        raise box["error"]
    return box["result"]


def _read(
    through: httpx.Client,
    url: str,
    payload: bytes,
    headers: dict[str, str],
    deadline: float,
    limit: int,
) -> tuple[httpx.Response, bytes]:
    left = timeout(deadline - time.monotonic())
    with through.stream("POST", _url(url), content=payload, headers=headers, timeout=left) as r:
        body = _Body(r, limit)
        try:
            for chunk in r.iter_bytes():
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout("past the deadline")
                body.add(chunk)
        except httpx.TransportError as exc:
            raise body.broken(exc) from exc
    return r, body.content()


async def aexchange(
    through: httpx.AsyncClient,
    url: str,
    payload: bytes,
    headers: dict[str, str],
    seconds: float,
    limit: int,
) -> tuple[httpx.Response, bytes]:
    """`exchange` on an asyncio loop through a slot's client: the whole call within `seconds`
    (a provider trickling bytes does not extend it)."""
    async with (
        asyncio.timeout(seconds),
        through.stream(
            "POST", _url(url), content=payload, headers=headers, timeout=timeout(seconds)
        ) as r,
    ):
        body = _Body(r, limit)
        try:
            async for chunk in r.aiter_bytes():
                body.add(chunk)
        except httpx.TransportError as exc:
            raise body.broken(exc) from exc
    return r, body.content()
