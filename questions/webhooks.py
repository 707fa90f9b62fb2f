"""Change webhooks, the parts without Django: the event body, its signature, the retry schedule,
and the one POST (the transport, apart from what is sent).

A receiver verifies a delivery by computing HMAC-SHA256 of the raw body with the endpoint's
secret and comparing it, in constant time, with the `X-Console-Signature-256` header
(`sha256=<hex>`), as `verify` does. Every attempt of a delivery sends the same body and the same
`X-Console-Delivery` id, so a receiver that saw an id already can ignore it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Final

import httpx

SIGNATURE_HEADER: Final = "X-Console-Signature-256"
EVENT_HEADER: Final = "X-Console-Event"
DELIVERY_HEADER: Final = "X-Console-Delivery"
USER_AGENT: Final = "decision-console-webhooks/1"

APPROVED: Final = "version.approved"
LABEL_MOVED: Final = "label.moved"
TEST: Final = "test"
EVENTS: Final = (APPROVED, LABEL_MOVED, TEST)

EXCERPT_LIMIT: Final = 200


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


def signature(secret: str, raw: bytes) -> str:
    """The signature header's value: `sha256=` and the hex HMAC-SHA256 of the body."""
    return "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


def verify(secret: str, raw: bytes, header: str | None) -> bool:
    """What a receiver does: the header matches the body's signature (constant time)."""
    return bool(header) and hmac.compare_digest(signature(secret, raw), header)


def headers(secret: str, raw: bytes, event: str, delivery: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        EVENT_HEADER: event,
        DELIVERY_HEADER: delivery,
        SIGNATURE_HEADER: signature(secret, raw),
    }


def backoff(attempt: int, base: float, cap: float) -> float:
    """Seconds to wait after failed attempt number `attempt` (1, 2, …): base, 2·base, 4·base, …
    up to `cap`."""
    return min(cap, base * 2 ** (attempt - 1))


@dataclass
class Result:
    """What one POST came to: a status code, or an error saying why there is none."""

    status_code: int | None
    error: str
    excerpt: str
    duration_ms: float

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def post(url: str, raw: bytes, sent_headers: dict[str, str], timeout: float) -> Result:
    """One POST; never raises for what the endpoint does. Redirects are not followed (a signed
    body goes where it was configured to, or nowhere)."""
    started = time.perf_counter()
    try:
        with httpx.Client(follow_redirects=False, timeout=timeout) as client:
            response = client.post(url, content=raw, headers=sent_headers)
    except httpx.TimeoutException:
        return Result(None, f"no answer within {timeout:g} s", "", _ms(started))
    except httpx.HTTPError as exc:
        return Result(None, f"unreachable ({type(exc).__name__})", "", _ms(started))
    text = response.content[: EXCERPT_LIMIT * 4].decode("utf-8", errors="replace")
    return Result(response.status_code, "", text[:EXCERPT_LIMIT], _ms(started))


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def describe(event: str) -> str:
    return {APPROVED: "version approved", LABEL_MOVED: "label moved", TEST: "test event"}.get(
        event, event
    )
