"""The seam every backend speaks: what is asked, what comes back, and the one
table that maps what a provider did to the status the author sees.

Nothing here echoes the key or the state: details name the rule and the status; what a provider
says about the key goes to the server log only, with the key removed.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from questions.core import answers, spec

if TYPE_CHECKING:
    from questions.engine.backends import streams

    #: what a wire reads of an answer: an httpx client's response, or the engine's reply
    Response = httpx.Response | streams.Reply

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
    relay_detail: bool = False  # the wire's own `detail` is shown after ours (the runtime's)


#: The error mapping (seed 000's): provider status → what the author sees. A row
#: keyed `(wire, status)` holds for that wire only and is found before the shared row; a class
#: row (`"5xx"`, `"4xx"`) covers the statuses without a row of their own.
ERROR_TABLE: dict[int | str | tuple[str, int | str], Mapping_] = {
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
    # The runtime (seed 000) answers with its own mapped status and a `detail` of its own words,
    # never about a key: its 503 means decisions are not configured there.
    ("runtime", 503): Mapping_(503, "The runtime cannot make decisions.", False, relay_detail=True),
    ("runtime", 504): Mapping_(
        504, "The runtime's provider gave no answer in time.", False, relay_detail=True
    ),
    ("runtime", "5xx"): Mapping_(502, "The runtime failed.", False, relay_detail=True),
    ("runtime", "4xx"): Mapping_(
        502, "The runtime answered with an unexpected error.", False, relay_detail=True
    ),
}


def mapping_for(provider_status: int, wire: str = "") -> Mapping_:
    """The row for a status on a wire: the wire's own row, the shared row, the wire's class row,
    the shared class row — the first that exists."""
    kind = "5xx" if provider_status >= 500 else "4xx"
    for key in ((wire, provider_status), provider_status, (wire, kind)):
        if key in ERROR_TABLE:
            return ERROR_TABLE[key]
    return ERROR_TABLE[kind]


#: a state's strings at least this long are hidden where a provider may echo them
STATE_STRING_MIN = 8


def state_strings(state: Any) -> list[str]:
    """The strings a sample state holds (values and keys, longest first; the whole state when
    it is a string), of STATE_STRING_MIN characters or more: what is hidden from a provider's
    words, which reach a page or a log line. Shorter ones are words any message may hold."""
    found: set[str] = set()
    pending = [state]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            if len(value) >= STATE_STRING_MIN:
                found.add(value)
        elif isinstance(value, Mapping):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list | tuple):
            pending.extend(value)
    return sorted(found, key=len, reverse=True)


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
            if len(secret) <= SCRUB_VARIANTS_UP_TO and _may_hold(text, secret):
                text = _secret_pattern(secret).sub("[redacted]", text)
    return text


def _may_hold(text: str, secret: str) -> bool:
    """Whether `text` may hold `secret` in one of the forms `_secret_pattern` finds; False only
    when it surely does not: ASCII text with no `%` (so no URL-encoded character) and an ASCII
    secret with no space (so no `+`), in which no form of the secret is found letter case
    aside — the pattern's case-insensitive match, between ASCII characters. An answer is such
    text: this spares it the pattern, which tries every form at every character (~60 µs for
    an answer of 1.3 KB)."""
    if not (text.isascii() and secret.isascii()) or " " in secret or "%" in text:
        return True
    lowered = text.lower()
    return any(form in lowered for form in _lowered_forms(secret))


@functools.lru_cache(maxsize=64)
def _lowered_forms(secret: str) -> tuple[str, ...]:
    return tuple(form.lower() for form in [secret, *_base64_forms(secret)])


@functools.lru_cache(maxsize=64)
def _parsed(url: str) -> httpx.URL:
    """A wire's URL, parsed once (an httpx.URL is immutable; parsing it costs ~40 µs a call)."""
    return httpx.URL(url)


@functools.lru_cache(maxsize=64)
def _secret_pattern(secret: str) -> re.Pattern[str]:
    def encodings(char: str) -> list[str]:
        escaped = "".join(f"%{byte:02x}" for byte in char.encode())
        return [re.escape(char), re.escape(escaped), *([r"\+"] if char == " " else [])]

    as_written = "".join(f"(?:{'|'.join(encodings(char))})" for char in secret)
    alternatives = [as_written, *map(re.escape, _base64_forms(secret))]
    return re.compile("|".join(alternatives), re.IGNORECASE)


def _base64_forms(secret: str) -> list[str]:
    """The secret base64-encoded, standard and URL-safe, with and without padding, alone or
    inside a longer encoding; the longest first."""
    raw = secret.encode()
    encoded = base64.b64encode(raw).decode()
    forms = {encoded, encoded.rstrip("=")}
    # inside a longer encoding (`Bearer <key>`, `user:<key>`) the key starts at any of three
    # offsets; the whole groups that hold its bytes only are the same whatever surrounds them
    for offset in range(3):
        whole = 4 * ((offset + len(raw)) // 3)
        core = base64.b64encode(bytes(offset) + raw).decode()[4 if offset else 0 : whole]
        forms |= {core} if len(core) >= 8 else set()
    forms |= {form.replace("+", "-").replace("/", "_") for form in forms}
    return sorted(forms, key=len, reverse=True)


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


@dataclass(frozen=True)
class EncodedQuestions:
    """A questions map as JSON, with its wire and canonical encodings and its hash."""

    json: dict[str, Any]
    wire: bytes
    canonical: bytes
    sha256: str


#: the encodings of the questions maps asked lately, by the map's identity (the map kept, so
#: its id is not reused): a batch run asks the same map about every state
_ENCODED: dict[int, tuple[dict[str, spec.Question], EncodedQuestions]] = {}


def encoded_questions(questions: dict[str, spec.Question]) -> EncodedQuestions:
    """The questions map's JSON and encodings, worked out once per map."""
    kept = _ENCODED.get(id(questions))
    if kept is not None and kept[0] is questions:
        return kept[1]
    as_json = {qid: q.to_json() for qid, q in questions.items()}
    canonical = spec.canonical_json(as_json)
    encoded = EncodedQuestions(
        as_json, spec.wire_json(as_json), canonical, spec.canonical_sha256(canonical)
    )
    if len(_ENCODED) >= 64:
        _ENCODED.clear()
    _ENCODED[id(questions)] = (questions, encoded)
    return encoded


@dataclass
class Ask:
    """What is asked: the parsed questions, the state, the model."""

    questions: dict[str, spec.Question]
    state: Any
    model: str

    @property
    def questions_json(self) -> dict[str, Any]:
        """The questions as JSON (one object per map: read it, never change it)."""
        return encoded_questions(self.questions).json

    @functools.cached_property
    def state_canonical(self) -> bytes:
        """The state's canonical JSON, worked out once (its hash, the request's)."""
        return spec.canonical_json(self.state)

    @functools.cached_property
    def state_sha256(self) -> str:
        """The state's canonical hash (`spec.state_sha256`); a recording keys each answer by
        it."""
        return spec.canonical_sha256(self.state_canonical)


def encoded_body(body: Any, ask: Ask) -> tuple[bytes, bytes]:
    """A request body's wire bytes (`spec.wire_json`) and canonical bytes (`spec.canonical_json`),
    the questions and the state, which every call of a run repeats, taken as already encoded."""
    if not isinstance(body, dict) or not all(isinstance(k, str) for k in body):
        return spec.wire_json(body), spec.canonical_json(body)
    questions = encoded_questions(ask.questions)
    wire, canonical = [], []
    for name, value in body.items():
        if value is questions.json:
            wire.append((name, questions.wire))
            canonical.append((name, questions.canonical))
        elif value is ask.state:
            wire.append((name, spec.wire_json(value)))
            canonical.append((name, ask.state_canonical))
        else:
            wire.append((name, spec.wire_json(value)))
            canonical.append((name, spec.canonical_json(value)))
    return spec.json_object(wire), spec.json_object(sorted(canonical))


@dataclass
class Outcome:
    """What came back, checked; `error` is set when there is no decision."""

    backend: str
    model_asked: str
    checked: answers.CheckedDecision | None = None
    error: DecisionError | None = None
    request_body: dict[str, Any] | None = None  # what went on the wire (no key), for the record
    request_sha256: str = ""  # the canonical hash of `request_body`, once worked out
    request_text: str = ""  # the exact body sent (UTF-8 text of the wire bytes; never the key)
    response_text: str = ""
    provider_status_code: int | None = None
    request_id: str = ""
    provider_ms: float | None = None
    total_ms: float = 0.0
    missing: list[str] = field(default_factory=list)  # recorded: questions never recorded
    live: bool = True
    decision_id: int | None = None  # the recording, once stored
    ask: Ask | None = None  # what was asked (the parsed questions), once it was valid
    #: False when the probabilities are not a calibrated distribution (the `llm` wire, seed
    #: 001, or a provider that says so); shown with every decision
    calibrated: bool = True

    @property
    def status(self) -> int:
        return self.error.status if self.error else 200

    def to_json(self) -> dict[str, Any]:
        if self.error:
            return self.error.to_json()
        assert self.checked is not None
        out = self.checked.to_json()
        if "timing" in out:  # the wire measured its own (the runtime does): kept beside ours
            out[f"{self.backend}_timing"] = out.pop("timing")
        out["backend"] = self.backend
        out["calibrated"] = self.calibrated
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
    calibrated: bool

    def configured(self) -> bool: ...

    def missing_configuration(self) -> str: ...

    def default_model(self) -> str: ...

    def ask(self, ask: Ask) -> Outcome: ...


# --- the shared HTTP wire -----------------------------------------------------------------------

_clients: dict[str, httpx.Client] = {}
_clients_lock = threading.Lock()


def shared_client(name: str) -> httpx.Client:
    """One httpx client per backend and process, so calls reuse the provider connection. Each
    call brings its own timeout (what is left of its deadline)."""
    client = _clients.get(name)
    if client is None:
        with _clients_lock:
            client = _clients.get(name)
            if client is None:
                client = httpx.Client(follow_redirects=False)
                _clients[name] = client
    return client


@dataclass
class Wire:
    """How one HTTP backend talks: where, with which secret, and how it reads a reply."""

    name: str
    url: str
    secret: str
    timeout: float
    price_per_million: float | None  # None: unknown (a cost the provider reports still counts)
    request_id_header: str = ""
    body_keys: tuple[str, ...] = ("state", "model", "questions")
    #: False for a wire whose probabilities are not calibrated (seed 001)
    calibrated: bool = True

    def body(self, ask: Ask) -> dict[str, Any]:
        """What goes on the wire for an ask (pure; no key)."""
        full = {"state": ask.state, "model": ask.model, "questions": ask.questions_json}
        return {k: full[k] for k in self.body_keys}

    def native(self, ask: Ask, parsed: Any) -> Any:
        """A 200 reply as the native `{"model", "answers", "usage"}` body the answer checks
        read (pure; may raise `answers.AnswerError`). The native wires answer so already."""
        return parsed

    def request_id(self, response: Response, body: Any) -> str:
        if self.request_id_header and response.headers.get(self.request_id_header):
            return response.headers[self.request_id_header][:200]
        if isinstance(body, Mapping) and isinstance(body.get("id"), str):
            return body["id"][:200]
        return ""

    #: which answer checks make a 502 on this wire; the rest are flags
    rules: answers.Rule = answers.GATEWAY

    def call(self, ask: Ask, started: float) -> Outcome:
        """POST the question set as the author wrote it; map every failure through ERROR_TABLE;
        check the answers. Never raises for anything a provider sends."""
        outcome, payload, headers = self.prepare(ask)
        sent = time.perf_counter()
        try:
            response, raw = self._exchange(payload, headers)
        except Exception as exc:
            return self.failed_exchange(outcome, exc, sent, started)
        return self.answered(outcome, response, raw, ask, sent, started)

    async def acall(self, ask: Ask, started: float, client: streams.Slot) -> Outcome:
        """`call` on an asyncio loop through `client`: the same request bytes, deadline, error
        table and answer checks (the pure steps are shared); for the batch engine."""
        outcome, payload, headers = self.prepare(ask)
        sent = time.perf_counter()
        try:
            async with asyncio.timeout(self.timeout):  # the whole exchange, trickle included
                response, raw = await self._astream(client, payload, headers)
        except Exception as exc:
            return self.failed_exchange(outcome, exc, sent, started)
        return self.answered(outcome, response, raw, ask, sent, started)

    def prepare(self, ask: Ask) -> tuple[Outcome, bytes, dict[str, str]]:
        """The outcome to fill, the exact request bytes and the headers of one call."""
        outcome = Outcome(backend=self.name, model_asked=ask.model, calibrated=self.calibrated)
        body = self.body(ask)
        outcome.request_body = body
        payload, canonical = encoded_body(body, ask)
        outcome.request_text = payload.decode("utf-8")
        outcome.request_sha256 = spec.canonical_sha256(canonical)
        headers = {
            "Authorization": f"Bearer {self.secret}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        return outcome, payload, headers

    def failed_exchange(
        self, outcome: Outcome, exc: Exception, sent: float, started: float
    ) -> Outcome:
        """A call that got no whole answer: past its deadline (504) or no connection (502).
        Anything else is not the provider's doing and is raised again."""
        outcome.provider_ms = (time.perf_counter() - sent) * 1000
        if isinstance(exc, httpx.TimeoutException | TimeoutError):
            return self._failed(
                outcome,
                "timeout",
                started,
                f"No answer within {self.timeout:g} seconds (DECISIONS__TIMEOUT_SECONDS).",
            )
        if isinstance(exc, httpx.HTTPError):
            log.warning("%s unreachable: %s", self.name, scrub(type(exc).__name__, self.secret))
            return self._failed(outcome, "unreachable", started)
        raise exc

    def answered(
        self,
        outcome: Outcome,
        response: Response,
        raw: bytes,
        ask: Ask,
        sent: float,
        started: float,
    ) -> Outcome:
        """A whole answer, read and checked; whatever a provider sends, the call answers."""
        outcome.provider_ms = (time.perf_counter() - sent) * 1000
        outcome.provider_status_code = response.status_code
        try:
            return self._read(outcome, response, raw, ask, started)
        except Exception as exc:  # whatever a provider sends, the call answers (a 502)
            log.warning("%s answer could not be checked: %s", self.name, type(exc).__name__)
            outcome.checked = None
            return self._failed(
                outcome,
                "shape",
                started,
                f"The provider answered in an unexpected shape: checking it failed with "
                f"{type(exc).__name__}.",
            )

    def _exchange(self, payload: bytes, headers: dict[str, str]) -> tuple[httpx.Response, bytes]:
        """The request and its whole response within one deadline of `timeout` seconds.

        httpx bounds each read, not the call, so a provider trickling bytes could hold a call
        for ever. The exchange runs on its own thread and the caller waits until the deadline
        only; the thread streams the body, stops at the deadline between chunks, and each of its
        reads is bounded by the time left when it began."""
        deadline = time.monotonic() + self.timeout
        client = shared_client(self.name)
        done = threading.Event()
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["result"] = self._stream(client, payload, headers, deadline)
            except BaseException as exc:  # handed to the caller, who maps it
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=run, name=f"{self.name}-call", daemon=True).start()
        if not done.wait(self.timeout):
            raise httpx.TimeoutException("past the deadline")
        if "error" in box:
            raise box["error"]
        return box["result"]

    def _stream(self, client, payload, headers, deadline) -> tuple[httpx.Response, bytes]:
        left = max(0.001, deadline - time.monotonic())
        with client.stream(
            "POST", self.url, content=payload, headers=headers, timeout=httpx.Timeout(left)
        ) as response:
            chunks = []
            for chunk in response.iter_bytes():
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout("past the deadline")
                chunks.append(chunk)
        return response, b"".join(chunks)

    async def _astream(
        self, slot: streams.Slot, payload: bytes, headers: dict
    ) -> tuple[Response, bytes]:
        """The exchange through a batch slot: straight through its transport (a client's layers —
        cookies, redirects, hooks — cost a fifth of the call's CPU and do nothing here), with
        the headers a client would add; or through a client, which finds the proxy the
        environment names."""
        if isinstance(slot, httpx.AsyncClient):
            async with slot.stream(
                "POST", self.url, content=payload, headers=headers, timeout=self.timeout
            ) as response:
                raw = await response.aread()
            return response, raw
        reply = await slot.post(_parsed(self.url), headers, payload, self.timeout)
        return reply, reply.content

    def _read(
        self, outcome: Outcome, response: Response, raw: bytes, ask: Ask, started: float
    ) -> Outcome:
        text = raw.decode("utf-8", errors="replace")  # JSON is UTF-8 (RFC 8259)
        problem = ""
        try:
            parsed = spec.loads(raw)
        except spec.JSONTextError as exc:
            parsed, problem = None, str(exc)
        outcome.request_id = self.request_id(response, parsed)
        if response.status_code != 200:
            return self._provider_error(outcome, response, parsed, text, ask, started)
        outcome.response_text = scrub(text, self.secret)
        if parsed is None:
            nested = " (nested too deeply)" if "nested" in problem else ""
            return self._failed(
                outcome, "shape", started, f"The provider's answer is not JSON{nested}."
            )
        if isinstance(parsed, Mapping) and "error" in parsed:
            return self._failed(
                outcome,
                "shape",
                started,
                "The provider answered 200 with an error instead of answers.",
            )
        try:
            outcome.checked = answers.check_response(
                ask.questions,
                self.native(ask, parsed),
                price_per_million=self.price_per_million,
                rules=self.rules,
            )
        except answers.AnswerError as exc:
            outcome.error = DecisionError(502, exc.detail, provider_status_code=200)
        if outcome.checked and outcome.checked.extra.get("calibrated") is False:
            outcome.calibrated = False  # a provider that says its answers are not calibrated
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
        row = mapping_for(response.status_code, self.name)
        words = scrub(
            provider_text(parsed) or ("" if parsed is not None else text[:200]), self.secret
        )
        for piece in state_strings(ask.state):  # as written: a state is no secret to encode
            words = words.replace(piece, "[state]")
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
        if row.relay_detail and parsed is not None and words:
            detail = f"{detail} The {self.name} said: {words[:200]}"
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
