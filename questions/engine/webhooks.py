"""Change webhooks, the parts without Django: the event body, its signature, the retry schedule,
and the one POST (the transport, apart from what is sent).

Every attempt is signed afresh: `X-Console-Signature: t=<unix seconds>,v1=<hex>`, where v1 is
the HMAC-SHA256, with the endpoint's secret, of the timestamp, a dot and the raw body
(`f"{t}.{body}"`, as Stripe signs). A receiver recomputes it, compares in constant time and
refuses a timestamp more than `TOLERANCE_SECONDS` from its clock (a replay), as `verify` does.
Every attempt of a delivery sends the same body and the same `X-Console-Delivery` id, so a
receiver that saw an id already can ignore it; only the timestamp (and so v1) changes.

`post` goes only where `questions.addresses` allows: it resolves the host itself, checks every
address, and connects to a checked one (`PinnedBackend`) while the request keeps the URL's
host for its `Host` header and, over TLS, for SNI and the certificate check. The whole attempt
— resolving, connecting, TLS, sending, and the status line and headers of the answer — has one
deadline; the answer's body is never read.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import ssl
import time
from dataclasses import dataclass
from typing import Any, Final

import httpcore
import httpx

from questions.core import addresses
from questions.core.numbers import whole_number

SIGNATURE_HEADER: Final = "X-Console-Signature"
EVENT_HEADER: Final = "X-Console-Event"
DELIVERY_HEADER: Final = "X-Console-Delivery"
USER_AGENT: Final = "decision-console-webhooks/2"
#: how far from its own clock a receiver accepts a signature's timestamp
TOLERANCE_SECONDS: Final = 300
#: the wall clock an attempt is signed by (tests turn it)
clock = time.time

APPROVED: Final = "version.approved"
LABEL_MOVED: Final = "label.moved"
TEST: Final = "test"
EVENTS: Final = (APPROVED, LABEL_MOVED, TEST)


def new_secret() -> str:
    return f"whsec_{secrets.token_urlsafe(32)}"


def body(
    *,
    event: str,
    delivery: str,
    question_set: str,
    version: int | None,
    sha256: str | None,
    export_url: str | None,
    created_at: str,
    label: str | None = None,
    previous_version: int | None = None,
) -> bytes:
    """The exact bytes of an event (compact UTF-8 JSON, keys in this order)."""
    return json.dumps(
        {
            "event": event,
            "delivery": delivery,
            "set": question_set,
            "version": version,
            "label": label,
            "previous_version": previous_version,
            "sha256": sha256,
            "export_url": export_url,
            "created_at": created_at,
        },
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")


def signature(secret: str, raw: bytes, timestamp: int) -> str:
    """The signature header's value: `t=<timestamp>,v1=<hex HMAC-SHA256 of "t.body">`."""
    signed = f"{timestamp}.".encode() + raw
    return f"t={timestamp},v1=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def verify(
    secret: str,
    raw: bytes,
    header: str | None,
    *,
    now: float | None = None,
    tolerance: float = TOLERANCE_SECONDS,
) -> bool:
    """What a receiver does: the header's timestamp is within `tolerance` seconds of `now`,
    and one of its v1 values is the signature of that timestamp and the body (constant time)."""
    if not header:
        return False
    fields: dict[str, list[str]] = {}
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        fields.setdefault(key, []).append(value)
    stamp = whole_number((fields.get("t") or [""])[0])
    if stamp is None:
        return False
    if abs((clock() if now is None else now) - stamp) > tolerance:
        return False
    expected = signature(secret, raw, stamp).rpartition("v1=")[2]
    return any(hmac.compare_digest(expected, given) for given in fields.get("v1", []))


def headers(
    secret: str, raw: bytes, event: str, delivery: str, *, timestamp: int | None = None
) -> dict[str, str]:
    """An attempt's headers, signed now (or at `timestamp`)."""
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        EVENT_HEADER: event,
        DELIVERY_HEADER: delivery,
        SIGNATURE_HEADER: signature(secret, raw, int(clock()) if timestamp is None else timestamp),
    }


def backoff(attempt: int, base: float, cap: float) -> float:
    """Seconds to wait after failed attempt number `attempt` (1, 2, …): base, 2·base, 4·base, …
    up to `cap`."""
    return min(cap, base * 2 ** (attempt - 1))


@dataclass
class Result:
    """What one attempt came to: a status code, or an error saying why there is none. A
    `refused` attempt connected to nothing (the address policy said no), and is not retried."""

    status_code: int | None
    error: str
    duration_ms: float
    refused: bool = False

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self, kind: type[Exception] = httpcore.ReadTimeout, asked: float | None = None):
        """The seconds left (no more than `asked`), or `kind` raised once there are none."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise kind("past the attempt's deadline")
        return left if asked is None else min(asked, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A stream whose every read, write and TLS handshake gets no more than what is left of
    the attempt's deadline, so a receiver trickling bytes cannot stretch the attempt."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: _Deadline) -> None:
        self.inner, self.deadline = inner, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, self.deadline.left(httpcore.ReadTimeout, timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        # the request is a few hundred bytes: one send into the socket's buffer
        self.inner.write(buffer, self.deadline.left(httpcore.WriteTimeout, timeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        left = self.deadline.left(httpcore.ConnectTimeout, timeout)
        # the handshake is bounded as a whole by the socket's timeout (CPython's ssl module)
        return _DeadlineStream(
            self.inner.start_tls(ssl_context, server_hostname, left), self.deadline
        )

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class PinnedBackend(httpcore.NetworkBackend):
    """Connects to the addresses checked, in turn, whatever host the request names: the name
    was resolved once, by `post`, and is not resolved again between the check and the connect."""

    def __init__(self, checked: list[addresses.Address], deadline: _Deadline) -> None:
        self.checked, self.deadline = checked, deadline
        self.plain = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        failed: Exception | None = None
        for address in self.checked:
            left = self.deadline.left(httpcore.ConnectTimeout, timeout)
            try:
                stream = self.plain.connect_tcp(
                    str(address), port, timeout=left, socket_options=socket_options
                )
            except httpcore.ConnectTimeout:
                raise
            except httpcore.ConnectError as exc:
                failed = exc
                continue
            return _DeadlineStream(stream, self.deadline)
        raise failed or httpcore.ConnectError("no address to connect to")

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("webhooks go over TCP only")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def _tls() -> ssl.SSLContext:
    return httpx.create_ssl_context()  # certifi's roots, hostname checked, as httpx does


def post(
    url: str,
    raw: bytes,
    sent_headers: dict[str, str],
    timeout: float,
    *,
    allow_private: bool = False,
) -> Result:
    """One attempt; never raises for what the endpoint (or its DNS) does. The URL and every
    address its host resolves to now are checked (`questions.addresses`); a refusal connects to
    nothing. Redirects are not followed (a signed body goes where it was configured to, or
    nowhere), and the answer's body is not read: only its status counts."""
    started = time.perf_counter()
    deadline = _Deadline(timeout)
    late = f"no answer within {timeout:g} s"
    try:
        target = addresses.parse(url)
        addresses.check_name(target, allow_private=allow_private)
        try:
            found = addresses.resolve(target, deadline.left(TimeoutError))
        except addresses.Unresolved as exc:
            return Result(None, late if exc.timed_out else f"unreachable ({exc})", _ms(started))
        addresses.check_addresses(target, found, allow_private=allow_private)
    except addresses.Refused as exc:
        return Result(None, f"refused: {exc}", _ms(started), refused=True)
    except TimeoutError:
        return Result(None, late, _ms(started))
    request_headers = [("Host", target.host_header)] + [
        (k, v) for k, v in sent_headers.items() if k.lower() != "host"
    ]
    try:
        with httpcore.ConnectionPool(
            ssl_context=_tls() if target.scheme == "https" else None,
            network_backend=PinnedBackend(found, deadline),
            retries=0,
        ) as pool:
            left = deadline.left(httpcore.ConnectTimeout)
            with pool.stream(
                "POST",
                httpcore.URL(
                    scheme=target.scheme,
                    host=target.host,
                    port=target.port,
                    target=target.path,
                ),
                headers=request_headers,
                content=raw,
                extensions={
                    "timeout": {"connect": left, "read": left, "write": left, "pool": left}
                },
            ) as response:
                status = response.status  # the body is left unread; closing drops it
    except httpcore.TimeoutException:
        return Result(None, late, _ms(started))
    except (
        httpcore.NetworkError,
        httpcore.ProtocolError,
        httpcore.UnsupportedProtocol,
        OSError,  # ssl.SSLError among them
    ) as exc:
        return Result(None, f"unreachable ({type(exc).__name__})", _ms(started))
    return Result(status, "", _ms(started))


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def describe(event: str) -> str:
    return {APPROVED: "version approved", LABEL_MOVED: "label moved", TEST: "test event"}.get(
        event, event
    )
