"""The seam every backend speaks (DESIGN.md §3): what is asked, what comes back, and the one
table that maps what a provider did to the status the author sees.

Nothing here echoes the key or the state: details name the rule and the status; what a provider
says about the key goes to the server log only, with the key removed.
"""

from __future__ import annotations

import base64
import functools
import logging
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from questions import answers, spec

log = logging.getLogger("questions.backends")

PROVIDER_DETAIL_LIMIT = 500


class DecisionError(Exception):
    """A decision that could not be made, as the author sees it."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        provider_status_code: int | None = None,
        provider_detail: str | None = None,
        retry_after: float | None = None,
    ):
        self.status = status
        self.detail = detail
        self.provider_status_code = provider_status_code
        self.provider_detail = provider_detail
        self.retry_after = retry_after
        super().__init__(detail)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "detail": self.detail}
        if self.provider_status_code is not None:
            out["provider_status_code"] = self.provider_status_code
        if self.provider_detail:
            out["provider_detail"] = self.provider_detail
        return out


@dataclass(frozen=True)
class Mapping_:
    """One row of the error table."""

    status: int
    detail: str
    with_provider_detail: bool  # the provider's own words reach the author (never about the key)
    about_the_key: bool = False


#: The error mapping of DESIGN.md §3 and seed 000: provider status → what the author sees.
ERROR_TABLE: dict[int | str, Mapping_] = {
    400: Mapping_(422, "The provider rejected the questions or the state.", True),
    413: Mapping_(422, "The provider rejected the request as too large.", True),
    422: Mapping_(422, "The provider rejected the questions or the state.", True),
    429: Mapping_(429, "The provider's rate limit was reached; retry with backoff.", True),
    401: Mapping_(502, "The provider rejected the key.", False, about_the_key=True),
    403: Mapping_(502, "The provider refused the key access.", False, about_the_key=True),
    402: Mapping_(
        502, "The provider refused the call (payment required).", False, about_the_key=True
    ),
    504: Mapping_(504, "The provider's gateway gave no answer in time.", False),
    524: Mapping_(504, "The provider's gateway gave no answer in time.", False),
    529: Mapping_(502, "The provider is overloaded.", False),
    "5xx": Mapping_(502, "The provider failed.", False),
    "4xx": Mapping_(502, "The provider answered with an unexpected error.", False),
    "timeout": Mapping_(504, "The provider did not answer in time.", False),
    "unreachable": Mapping_(502, "The provider could not be reached.", False),
    "shape": Mapping_(502, "The provider answered in an unexpected shape.", False),
}


def mapping_for(provider_status: int) -> Mapping_:
    if provider_status in ERROR_TABLE:
        return ERROR_TABLE[provider_status]
    return ERROR_TABLE["5xx" if provider_status >= 500 else "4xx"]


def provider_text(body: Any) -> str:
    """The provider's own words, by the official SDK's precedence: error (string) →
    error.message → message → detail.message → detail[] items as `loc: msg` → detail."""
    if not isinstance(body, Mapping):
        return ""
    if isinstance(body.get("provider_detail"), str):  # the runtime passes the provider's on
        return body["provider_detail"]
    error = body.get("error")
    if isinstance(error, str):
        return error
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return error["message"]
    if isinstance(body.get("message"), str):
        return body["message"]
    detail = body.get("detail")
    if isinstance(detail, Mapping):
        if isinstance(detail.get("message"), str):
            return detail["message"]
        if isinstance(detail.get("error_type"), str):
            return detail["error_type"]
    if isinstance(detail, list):
        parts = []
        for item in detail:
            if isinstance(item, Mapping):
                loc = ".".join(str(p) for p in item.get("loc", []) if p != "body")
                msg = item.get("msg", "")
                parts.append(f"{loc}: {msg}" if loc else str(msg))
            else:
                parts.append(str(item))
        return "; ".join(parts)
    if isinstance(detail, str):
        return detail
    return ""


#: secrets longer than this (a state) are removed only as written, not in every encoding
SCRUB_VARIANTS_UP_TO = 512


def scrub(text: str, *secrets: str) -> str:
    """Remove every secret (and any long string state) from text that may leave the server.

    A secret is also found in any letter case, URL-encoded (any of its characters as `%XX`,
    spaces as `+`), and base64-encoded (standard or URL-safe alphabet, with or without padding).
    """
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
            if len(secret) <= SCRUB_VARIANTS_UP_TO:
                text = _secret_pattern(secret).sub("[redacted]", text)
    return text


@functools.lru_cache(maxsize=64)
def _secret_pattern(secret: str) -> re.Pattern[str]:
    def encodings(char: str) -> list[str]:
        escaped = "".join(f"%{byte:02x}" for byte in char.encode())
        return [re.escape(char), re.escape(escaped), *([r"\+"] if char == " " else [])]

    as_written = "".join(f"(?:{'|'.join(encodings(char))})" for char in secret)
    raw = secret.encode()
    encoded = base64.b64encode(raw).decode()
    base64_forms = {encoded, encoded.rstrip("=")}
    # inside a longer encoding (`Bearer <key>`, `user:<key>`) the key starts at any of three
    # offsets; the whole groups that hold its bytes only are the same whatever surrounds them
    for offset in range(3):
        whole = 4 * ((offset + len(raw)) // 3)
        core = base64.b64encode(bytes(offset) + raw).decode()[4 if offset else 0 : whole]
        base64_forms |= {core} if len(core) >= 8 else set()
    base64_forms |= {form.replace("+", "-").replace("/", "_") for form in base64_forms}
    alternatives = [as_written, *map(re.escape, sorted(base64_forms, key=len, reverse=True))]
    return re.compile("|".join(alternatives), re.IGNORECASE)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    raw_ms = headers.get("retry-after-ms")
    raw = headers.get("retry-after")
    try:
        if raw_ms is not None:
            return max(0.0, float(raw_ms) / 1000)
        if raw is not None:
            return max(0.0, float(raw))
    except ValueError:
        return None
    return None


@dataclass
class Ask:
    """What is asked: the parsed questions, the state, the model."""

    questions: dict[str, spec.Question]
    state: Any
    model: str

    @property
    def questions_json(self) -> dict[str, Any]:
        return {qid: q.to_json() for qid, q in self.questions.items()}

    @property
    def state_sha256(self) -> str:
        return spec.state_sha256(self.state)


@dataclass
class Outcome:
    """What came back, checked; `error` is set when there is no decision."""

    backend: str
    model_asked: str
    checked: answers.CheckedDecision | None = None
    error: DecisionError | None = None
    request_body: dict[str, Any] | None = None  # what went on the wire (no key), for the record
    response_text: str = ""
    provider_status_code: int | None = None
    request_id: str = ""
    provider_ms: float | None = None
    total_ms: float = 0.0
    missing: list[str] = field(default_factory=list)  # recorded: questions never recorded
    live: bool = True
    decision_id: int | None = None  # the recording, once stored
    ask: Ask | None = None  # what was asked (the parsed questions), once it was valid

    @property
    def status(self) -> int:
        return self.error.status if self.error else 200

    def to_json(self) -> dict[str, Any]:
        if self.error:
            return self.error.to_json()
        assert self.checked is not None
        out = self.checked.to_json()
        out["backend"] = self.backend
        out["timing"] = {"provider_ms": _round(self.provider_ms), "total_ms": _round(self.total_ms)}
        if self.request_id:
            out["request_id"] = self.request_id
        if self.missing:
            out["not_recorded"] = self.missing
        return out


def _round(ms: float | None) -> float | None:
    return None if ms is None else round(ms, 2)


class Backend(Protocol):
    name: str
    live: bool

    def configured(self) -> bool: ...

    def missing_configuration(self) -> str: ...

    def default_model(self) -> str: ...

    def ask(self, ask: Ask) -> Outcome: ...


# --- the shared HTTP wire -----------------------------------------------------------------------

_clients: dict[tuple, httpx.Client] = {}
_clients_lock = threading.Lock()


def shared_client(name: str, timeout: float) -> httpx.Client:
    """One httpx client per backend and process, so calls reuse the provider connection."""
    key = (name, timeout)
    client = _clients.get(key)
    if client is None:
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=False)
                _clients[key] = client
    return client


@dataclass
class Wire:
    """How one HTTP backend talks: where, with which secret, and how it reads a reply."""

    name: str
    url: str
    secret: str
    timeout: float
    price_per_million: float
    request_id_header: str = ""
    body_keys: tuple[str, ...] = ("state", "model", "questions")

    def body(self, ask: Ask) -> dict[str, Any]:
        full = {"state": ask.state, "model": ask.model, "questions": ask.questions_json}
        return {k: full[k] for k in self.body_keys}

    def request_id(self, response: httpx.Response, body: Any) -> str:
        if self.request_id_header and response.headers.get(self.request_id_header):
            return response.headers[self.request_id_header][:200]
        if isinstance(body, Mapping) and isinstance(body.get("id"), str):
            return body["id"][:200]
        return ""

    def call(self, ask: Ask, started: float) -> Outcome:
        """POST the question set; map every failure through ERROR_TABLE; check the answers."""
        outcome = Outcome(backend=self.name, model_asked=ask.model)
        body = self.body(ask)
        outcome.request_body = body
        payload = spec.canonical_json(body)
        headers = {
            "Authorization": f"Bearer {self.secret}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        client = shared_client(self.name, self.timeout)
        sent = time.perf_counter()
        try:
            response = client.post(self.url, content=payload, headers=headers)
        except httpx.TimeoutException:
            outcome.provider_ms = (time.perf_counter() - sent) * 1000
            return self._failed(
                outcome,
                "timeout",
                started,
                f"No answer within {self.timeout:g} seconds (DECISIONS__TIMEOUT_SECONDS).",
            )
        except httpx.HTTPError as exc:
            outcome.provider_ms = (time.perf_counter() - sent) * 1000
            log.warning("%s unreachable: %s", self.name, scrub(type(exc).__name__, self.secret))
            return self._failed(outcome, "unreachable", started)
        outcome.provider_ms = (time.perf_counter() - sent) * 1000
        outcome.provider_status_code = response.status_code
        text = response.text
        try:
            parsed = response.json()
        except ValueError:
            parsed = None
        outcome.request_id = self.request_id(response, parsed)
        if response.status_code != 200:
            return self._provider_error(outcome, response, parsed, text, ask, started)
        outcome.response_text = scrub(text, self.secret)
        if parsed is None:
            return self._failed(outcome, "shape", started, "The provider's answer is not JSON.")
        if isinstance(parsed, Mapping) and "error" in parsed:
            return self._failed(
                outcome,
                "shape",
                started,
                "The provider answered 200 with an error instead of answers.",
            )
        try:
            outcome.checked = answers.check_response(
                ask.questions, parsed, price_per_million=self.price_per_million
            )
        except answers.AnswerError as exc:
            outcome.error = DecisionError(502, exc.detail, provider_status_code=200)
        outcome.total_ms = (time.perf_counter() - started) * 1000
        if outcome.checked and outcome.checked.dropped:
            log.info(
                "%s answered ids that were not asked; dropped %d",
                self.name,
                len(outcome.checked.dropped),
            )
        return outcome

    def _failed(self, outcome: Outcome, kind: str, started: float, detail: str = "") -> Outcome:
        row = ERROR_TABLE[kind]
        outcome.error = DecisionError(
            row.status, detail or row.detail, provider_status_code=outcome.provider_status_code
        )
        outcome.total_ms = (time.perf_counter() - started) * 1000
        return outcome

    def _provider_error(self, outcome, response, parsed, text, ask, started) -> Outcome:
        row = mapping_for(response.status_code)
        words = scrub(
            provider_text(parsed) or ("" if parsed is not None else text[:200]),
            self.secret,
            ask.state if isinstance(ask.state, str) else "",
        )
        if row.about_the_key:
            # what the provider says about the key stays in the server log, without the key
            log.warning(
                "%s refused the key (%s): %s",
                self.name,
                response.status_code,
                words[:PROVIDER_DETAIL_LIMIT],
            )
            outcome.response_text = ""
        else:
            outcome.response_text = scrub(text, self.secret)
            log.info("%s answered %s", self.name, response.status_code)
        detail = row.detail
        if self.name == "runtime" and parsed is not None and not row.about_the_key:
            runtime_detail = provider_text(parsed)
            if runtime_detail and not row.with_provider_detail:
                detail = f"{detail} The runtime said: {scrub(runtime_detail, self.secret)[:200]}"
        outcome.error = DecisionError(
            row.status,
            detail,
            provider_status_code=response.status_code,
            provider_detail=(words[:PROVIDER_DETAIL_LIMIT] or None)
            if row.with_provider_detail
            else None,
            retry_after=retry_after_seconds(response.headers),
        )
        outcome.total_ms = (time.perf_counter() - started) * 1000
        return outcome
