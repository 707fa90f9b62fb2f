"""The seam every backend speaks: what is asked, what comes back, and the one
table that maps what a provider did to the status the author sees.

Nothing here echoes the key or the state: details name the rule and the status; what a provider
says about the key goes to the server log only, with the key removed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from questions.core import answers, spec
from questions.engine.backends import clients
from questions.engine.backends.redaction import scrub, state_strings, without_secret

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
        attempts: int | None = None,
    ):
        self.status = status
        self.attempts = attempts  # the most calls this error is worth (None: the caller's)
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
    attempts: int | None = None  # the most calls a batch run makes for it (None: the run's)


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
    # reached, but what came back is not HTTP (bad framing, a bare CR, a head too large): asked
    # once more, on a new connection (an intermediary may have garbled one answer); a provider
    # that always answers so would spend every attempt of the run for nothing
    "protocol": Mapping_(502, "The provider's answer is not valid HTTP.", False, attempts=2),
    # the connection failed once the answer's head had come: retried, as the network's doing
    "broken": Mapping_(502, "The provider's answer broke off before its end.", False),
    # over DECISIONS__ANSWER_MAX_BYTES: refused as it arrives, and not asked again (the same
    # question would bring the same answer, paid for twice)
    "too_large": Mapping_(
        502, "The provider's answer is larger than the console reads.", False, attempts=1
    ),
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


#: what a live wire's answers come from, as a page says it, unless the wire says more
FROM_THE_PROVIDER = "the provider"


class Backend(Protocol):
    name: str
    live: bool
    calibrated: bool
    answers_from: str  # what its answers come from, as a page says it ("a chat model")

    def configured(self) -> bool: ...

    def missing_configuration(self) -> str: ...

    def default_model(self) -> str: ...

    def ask(self, ask: Ask) -> Outcome: ...


# --- the shared HTTP wire -----------------------------------------------------------------------

#: an answer this long or longer is read and checked on a thread, not on the engine's loop
OFF_LOOP_BYTES = 64 * 1024


@dataclass
class Wire:
    """How one HTTP backend talks: where, with which secret, and how it reads a reply. Its
    calls go through `clients` (one transport for single asks and batch slots)."""

    name: str
    url: str
    secret: str
    timeout: float
    price_per_million: float | None  # None: unknown (a cost the provider reports still counts)
    request_id_header: str = ""
    body_keys: tuple[str, ...] = ("state", "model", "questions")
    #: False for a wire whose probabilities are not calibrated (seed 001)
    calibrated: bool = True
    #: the most bytes of an answer read, decoded (DECISIONS__ANSWER_MAX_BYTES)
    answer_max_bytes: int = 4 * 1024 * 1024

    def body(self, ask: Ask) -> dict[str, Any]:
        """What goes on the wire for an ask (pure; no key)."""
        full = {"state": ask.state, "model": ask.model, "questions": ask.questions_json}
        return {k: full[k] for k in self.body_keys}

    def native(self, ask: Ask, parsed: Any) -> Any:
        """A 200 reply as the native `{"model", "answers", "usage"}` body the answer checks
        read (pure; may raise `answers.AnswerError`). The native wires answer so already."""
        return parsed

    def request_id(self, response: httpx.Response, body: Any) -> str:
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
            response, raw = clients.exchange(
                self.name, self.url, payload, headers, self.timeout, self.answer_max_bytes
            )
        except Exception as exc:
            return self.failed_exchange(outcome, exc, sent, started)
        outcome.provider_ms = (time.perf_counter() - sent) * 1000
        return self.answered(outcome, response, raw, ask, started)

    async def acall(self, ask: Ask, started: float, client: httpx.AsyncClient) -> Outcome:
        """`call` on an asyncio loop through a batch slot's client: the same request bytes,
        deadline, error table and answer checks. A long answer is parsed and scrubbed on a
        thread, so the loop's other calls do not wait for it."""
        outcome, payload, headers = self.prepare(ask)
        sent = time.perf_counter()
        try:
            response, raw = await clients.aexchange(
                client, self.url, payload, headers, self.timeout, self.answer_max_bytes
            )
        except Exception as exc:
            return self.failed_exchange(outcome, exc, sent, started)
        outcome.provider_ms = (time.perf_counter() - sent) * 1000
        if len(raw) >= OFF_LOOP_BYTES:
            return await asyncio.to_thread(self.answered, outcome, response, raw, ask, started)
        return self.answered(outcome, response, raw, ask, started)

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
        """A call that got no whole answer: past its deadline (504); an answer too large, not
        HTTP or broken off, or no connection (502). Anything else is not the provider's doing
        and is raised again."""
        outcome.provider_ms = (time.perf_counter() - sent) * 1000
        kind = clients.failure(exc)
        if kind is None:
            raise exc
        log.warning("%s %s: %s", self.name, kind, type(exc).__name__)  # never its words
        detail = ""
        if kind == "timeout":
            detail = f"No answer within {self.timeout:g} seconds (DECISIONS__TIMEOUT_SECONDS)."
        elif isinstance(exc, clients.AnswerTooLarge):
            outcome.provider_status_code = exc.status_code
            detail = (
                f"{ERROR_TABLE[kind].detail} It was not read past {exc.limit:,} bytes "
                "(DECISIONS__ANSWER_MAX_BYTES)."
            )
        return self._failed(outcome, kind, started, detail)

    def answered(
        self, outcome: Outcome, response: httpx.Response, raw: bytes, ask: Ask, started: float
    ) -> Outcome:
        """A whole answer, read and checked, without the key; whatever a provider sends, the
        call answers."""
        outcome.provider_status_code = response.status_code
        try:
            outcome = self._read(outcome, response, raw, ask, started)
        except Exception as exc:  # whatever a provider sends, the call answers (a 502)
            log.warning("%s answer could not be checked: %s", self.name, type(exc).__name__)
            outcome.checked = None
            outcome = self._failed(
                outcome,
                "shape",
                started,
                f"The provider answered in an unexpected shape: checking it failed with "
                f"{type(exc).__name__}.",
            )
        return without_secret(outcome, self.secret)

    def _read(
        self, outcome: Outcome, response: httpx.Response, raw: bytes, ask: Ask, started: float
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
            row.status,
            detail or row.detail,
            provider_status_code=outcome.provider_status_code,
            attempts=row.attempts,
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
