"""The local stand-in provider: the `typesafe` wire (`POST /v1/systemone`, `GET /v1/models`) and
the `llm` wire (`POST /v1/chat/completions`) on loopback, for development, demos, tests and
benchmarks. It answers every valid request from the words (`HOW_IT_ANSWERS`): for a choice, each
option's weighted overlap with the state's words (weights like idf over the question's own
texts, stopwords out, light stemming; a structured entry's `what` and examples for it, its
`not_for` against it; an option named only by its id has only its id's words) turned into
probabilities by a softmax; a score's levels the same way, the score their weighted sum; a noul
its true case against its false case, and the share of its statement's words the state holds
(a statement that opens by denying itself, "It is not the case that: …", read as its opposite).
Deterministic, rounded to two decimals like Jev's, under a model name that says what it is; its
chat answers are surer (`CHAT_SHARPNESS`), as a chat model's stated probabilities would differ
from Jev's. It is never used unless the console is pointed at it.

On the wire it answers as the provider does: the key (`KEY`) as `Authorization: Bearer`, else a
401 `authentication_error`; validation errors as FastAPI's `{"detail": [{loc, msg, type}]}`,
other errors as `{"detail": {"error_type", "message"}}` (the `llm` wire: OpenAI's
`{"error": {"message", "type"}}`); request bodies as they are or `Content-Encoding: zstd` (the
official SDK's default for bodies of 1 KiB and more), decompressed to at most `MAX_BODY_BYTES`;
confidence by the documented formula (`confidence`).
"""

from __future__ import annotations

import copy
import hmac
import json
import math
import re
import socketserver
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import zstandard

from questions.core import check, spec
from questions.dev import standin_drafts
from questions.dev.standin_words import state_words, words
from questions.engine.backends import drafting, llm

MODEL = "local-stand-in (not Jev)"
#: what the stand-in does, said once: the page banner, `GET /v1/models` and the docs say it so
HOW_IT_ANSWERS = (
    "It answers by word overlap: the option, level or case that shares the most (weighted) "
    "words with the state wins. It is not a model and understands nothing."
)
#: what `GET /v1/models` says of it (a fixed date: the stand-in is deterministic)
MODELS = {
    "models": [
        {
            "name": MODEL,
            "description": f"The console's local stand-in. {HOW_IT_ANSWERS}",
            "release_date": "2026-12-01",
        }
    ]
}
#: the one key the stand-in takes (`make run`, the demo and the tests send it); any other, or
#: none, gets a 401
KEY = "stand-in-key"
#: the largest request body it reads, before or after decompression: well above the largest
#: request the console sends (a 4 MiB document, console.settings.MAX_DOCUMENT_BYTES, and a
#: 256 KiB state); a zstd body that inflates past it is refused (413) without inflating further
MAX_BODY_BYTES = 8 * 2**20
#: compressed bytes fed to the decompressor at a time: zstd inflates at most ~32 000-fold, so
#: one step makes no more than ~8 MiB before the size is checked again
_ZSTD_STEP = 256
CHAT_MODEL = "local-stand-in chat (not a real model)"
CHAT_SALT = b"chat\0"


#: how sharply overlap turns into probability (a softmax of β × overlap): one distinctive
#: shared word among four options gives it about 0.6, two about 0.9; nothing shared, uniform
SHARPNESS = 1.0
#: the chat wire's stand-in is surer of itself, as a chat model's stated probabilities are
CHAT_SHARPNESS = 2.5
#: how much a noul's statement weighs (in overlap units): a state that holds all its words
#: leans true by this much, one that holds none leans false by as much
STATEMENT_WEIGHT = 1.0


@dataclass(frozen=True)
class Reading:
    """What one option, level or case says: the words for it, and the words against it (a
    structured entry's `not_for`)."""

    positive: frozenset[str]
    negative: frozenset[str] = frozenset()


def reading(entry: Any, name: str = "") -> Reading:
    """The words of an entry: a string's own; the documented object's `what` and examples for
    it and its `not_for` against it; any other structure every string in it. An entry with no
    words (`null`, "") gets only its name's words: an option named only by its id."""
    if isinstance(entry, dict) and entry and set(entry) <= set(spec.ENTRY_KEYS):
        positive = words(spec.entry_text({k: v for k, v in entry.items() if k != "not_for"}))
        negative = words(spec.entry_text(entry.get("not_for")))
    else:
        positive, negative = words(spec.entry_text(entry)), frozenset()
    if not positive and not negative:
        positive = words(name)
    return Reading(positive, negative)


def _idf(readings: list[Reading]) -> Callable[[str], float]:
    """Weights from the question's own texts: a word in few of them tells them apart (ln(1 +
    texts / texts holding it)); a word in every one tells little."""
    texts = [r.positive for r in readings] + [r.negative for r in readings if r.negative]
    count = len(texts)

    def weight(word: str) -> float:
        held = sum(1 for t in texts if word in t)
        return math.log(1 + count / max(1, held))

    return weight


def overlaps(readings: list[Reading], state: frozenset[str]) -> list[float]:
    """Each reading's weighted overlap with the state's words: shared words for it, less
    shared words against it."""
    weight = _idf(readings)
    return [
        sum(weight(w) for w in r.positive & state) - sum(weight(w) for w in r.negative & state)
        for r in readings
    ]


def _softmax(scores: list[float], sharpness: float) -> list[float]:
    top = max(scores)
    raw = [math.exp(sharpness * (s - top)) for s in scores]
    total = sum(raw)
    return [r / total for r in raw]


def _rounded(p: list[float]) -> list[float]:
    """Two decimals summing to exactly 1.00, none below 0: whole cents first, then the cents
    left over to the largest remainders (so 255 small values cannot overdraw one)."""
    exact = [x * 100 for x in p]
    cents = [math.floor(x) for x in exact]
    by_remainder = sorted(range(len(p)), key=lambda i: exact[i] - cents[i], reverse=True)
    for i in by_remainder[: 100 - sum(cents)]:
        cents[i] += 1
    return [c / 100 for c in cents]


def confidence(p: list[float]) -> float:
    """The documented confidence of a distribution over n options or levels: how far its top
    probability stands above the uniform 1/n, as a share of the most it could, (p_max − 1/n) /
    (1 − 1/n), rounded to two decimals like the rest."""
    n = len(p)
    return round(max(0.0, min(1.0, (max(p) - 1 / n) / (1 - 1 / n))), 2)


def _legend(level: Any, i: int) -> Any:
    """A score level as the provider echoes it in `legend`: as given, structured or not; an
    undescribed (`null`) level by its number, as the official SDK takes no `null` there."""
    return f"level {i}" if level is None else copy.deepcopy(level)


def answer(question: spec.Question, state: Any, salt: bytes = b"") -> dict[str, Any]:
    """The stand-in's answer to one question about one state, read from the words
    (`HOW_IT_ANSWERS`), the same every time; with `salt` (the chat wire) a surer one."""
    sharpness = CHAT_SHARPNESS if salt else SHARPNESS
    said = state_words(state)
    if question.type == "noul":
        return {"type": "noul", "noul": round(_noul(question, said, sharpness), 2)}
    if question.type == "choice":
        names = question.option_names
        found = overlaps([reading(question.criteria[n], n) for n in names], said)
        p = _rounded(_softmax(found, sharpness))
        best = max(range(len(names)), key=p.__getitem__)
        return {
            "type": "choice",
            "choice": names[best],
            "probabilities": dict(zip(names, p, strict=True)),
            "confidence": confidence(p),
        }
    levels = [
        reading(e, f"level {i}" if e is None else "") for i, e in enumerate(question.criteria)
    ]
    p = _rounded(_softmax(overlaps(levels, said), sharpness))
    return {
        "type": "score",
        "score": round(sum(i * pi for i, pi in enumerate(p)), 2),
        "legend": {str(i): _legend(e, i) for i, e in enumerate(question.criteria)},
        "probabilities": {str(i): pi for i, pi in enumerate(p)},
        "confidence": confidence(p),
    }


#: an opening that denies the whole statement after it ("It is not the case that: …", "It is
#: not true that …", "It is false that …"); one inside a sentence ("is not urgent") is a word
#: like the others, which word overlap cannot read
_DENIAL = re.compile(
    r"\s*(?:it(?:\s+is|['’]s)\s+(?:not\s+(?:the\s+case|true)|false)"
    r"|it\s+isn['’]t\s+(?:the\s+case|true))\s+that\b(?:\s*[:,—–-])?\s*",
    re.IGNORECASE,
)


def statement(instructions: Any) -> tuple[str, bool]:
    """A noul's statement with the openings that deny it taken off, and whether they turn it
    into its opposite (an odd number of them: two denials affirm)."""
    text = spec.entry_text(instructions)
    denied = False
    while found := _DENIAL.match(text):
        text, denied = text[found.end() :], not denied
    return text, denied


def _noul(question: spec.Question, said: frozenset[str], sharpness: float) -> float:
    """P(true): the true case's overlap against the false case's, and the statement: the
    (weighted) share of its words the state holds, from −STATEMENT_WEIGHT (none) to
    +STATEMENT_WEIGHT (all), the other way round for a denied statement (`statement`), so that
    denying it and swapping its cases gives 1 − P(true). A state that says nothing of either
    case or the statement: 0.5."""
    criteria = question.criteria if isinstance(question.criteria, dict) else {}
    text, denied = statement(question.instructions)
    statement_words = words(text)
    cases = [reading(criteria.get(case), "") for case in ("true", "false")]
    texts = [*cases, Reading(statement_words)]
    weight = _idf(texts)
    true, false, _ = overlaps(texts, said)
    logit = true - false
    total = sum(weight(w) for w in statement_words)
    if total:
        held = sum(weight(w) for w in statement_words & said) / total
        logit += (-1 if denied else 1) * STATEMENT_WEIGHT * (2 * held - 1)
    return 1 / (1 + math.exp(-max(-50.0, min(50.0, sharpness * logit))))


def respond(body: Any, salt: bytes = b"") -> tuple[int, dict[str, Any]]:
    """(status, JSON body) for a request body, as the provider would answer it."""
    if not isinstance(body, dict):
        return 422, {
            "detail": [
                {
                    "loc": ["body"],
                    "msg": "Input should be a valid dictionary or object to extract fields from",
                    "type": "model_attributes_type",
                }
            ]
        }
    missing = [key for key in ("state", "questions") if key not in body]
    if missing:
        return 422, {
            "detail": [
                {"loc": ["body", key], "msg": "Field required", "type": "missing"}
                for key in missing
            ]
        }
    result = check.validate(
        {"state": body["state"], "model": body.get("model") or "m", "questions": body["questions"]},
        lints=False,
        limits=spec.DEFAULT_LIMITS,
    )
    if not result.valid:
        return 422, {
            "detail": [
                {"loc": ["body", *e.loc], "msg": e.message, "type": e.code}
                for e in result.errors[:20]
            ]
        }
    document = result.document
    size = len(spec.canonical_json(body))
    return 200, {
        "model": MODEL,
        "answers": {qid: answer(q, body["state"], salt) for qid, q in document.questions.items()},
        "usage": {"input_tokens": max(1, size // 4), "output_tokens": 0},
    }


def respond_chat(body: Any) -> tuple[int, dict[str, Any]]:
    """(status, JSON body) for a chat completions request the `llm` wire built, as an
    OpenAI-compatible endpoint would answer it: the reply to the response schema, as text. A
    request for rewordings is drafted from the words (`standin_drafts`)."""
    if drafting.is_drafting(body):
        return standin_drafts.respond_draft(body, CHAT_MODEL)
    try:
        state, questions = llm.read_request(body)
    except ValueError as exc:
        return 400, {"error": {"message": f"Invalid request: {exc}", "type": "invalid_request"}}
    status, native = respond({"state": state, "questions": questions}, CHAT_SALT)
    if status != 200:
        words = "; ".join(
            f"{'.'.join(map(str, d['loc'][1:]))}: {d['msg']}" for d in native["detail"]
        )
        return 400, {"error": {"message": words, "type": "invalid_request"}}
    content = {key: llm.reply_from_native(a) for key, a in native["answers"].items()}
    text = json.dumps(content)
    prompt_tokens = native["usage"]["input_tokens"]
    return 200, {
        "id": f"chatcmpl-standin-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "model": CHAT_MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": max(1, len(text) // 4),
            "total_tokens": prompt_tokens + max(1, len(text) // 4),
        },
    }


def native_error(error_type: str, message: str) -> dict[str, Any]:
    """An error other than a validation error, in the provider's shape."""
    return {"detail": {"error_type": error_type, "message": message}}


def chat_error(error_type: str, message: str) -> dict[str, Any]:
    """An error in an OpenAI-compatible endpoint's shape."""
    kind = "invalid_request_error" if error_type != "authentication_error" else error_type
    return {"error": {"message": message, "type": kind, "code": error_type}}


def native_not_json(message: str, position: int) -> tuple[int, dict[str, Any]]:
    """A body that is not JSON, as FastAPI refuses it."""
    return 422, {
        "detail": [
            {
                "loc": ["body", position],
                "msg": "JSON decode error",
                "type": "json_invalid",
                "ctx": {"error": message},
            }
        ]
    }


def chat_not_json(message: str, position: int) -> tuple[int, dict[str, Any]]:
    return 400, chat_error("invalid_json", f"The body is not JSON: {message}")


@dataclass(frozen=True)
class Route:
    """One path the stand-in answers: how it answers a body, and how it words its errors;
    `statuses` turns the handler's own refusals into the route's (the runtime answers a body
    too large with its 422, where the provider's wire says 413)."""

    respond: Callable[[Any], tuple[int, dict[str, Any]]]
    error: Callable[[str, str], dict[str, Any]]
    not_json: Callable[[str, int], tuple[int, dict[str, Any]]]
    statuses: Mapping[int, int] = field(default_factory=dict)


#: what the stand-in serves: path → how it answers a request body and words its errors
ROUTES = {
    "/v1/systemone": Route(respond, native_error, native_not_json),
    "/v1/chat/completions": Route(respond_chat, chat_error, chat_not_json),
}
#: a GET path's answer: its body, or what makes it
Get = dict[str, Any] | Callable[[], dict[str, Any]]
#: the GET paths: path → its answer (each needs the key, as the provider's does)
_GETS: dict[str, Get] = {"/v1/models": MODELS}


class BodyRefused(Exception):
    """A request body the stand-in will not read: (status, error_type, message)."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error_type, self.message = status, error_type, message


def _too_large(after: str) -> BodyRefused:
    limit = MAX_BODY_BYTES // 2**20
    return BodyRefused(413, "request_too_large", f"The request body is over {limit} MiB{after}.")


def unzstd(raw: bytes) -> bytes:
    """A zstd body inflated, frame after frame, refused as soon as it passes MAX_BODY_BYTES (a
    few compressed bytes at a time, so a bomb never inflates far) or if it is not whole zstd."""
    out: list[bytes] = []
    size = pos = 0
    view = memoryview(raw)
    try:
        while pos < len(raw):
            frame = zstandard.ZstdDecompressor().decompressobj()
            while not frame.eof:
                if pos >= len(raw):
                    raise BodyRefused(
                        400, "invalid_encoding", "The zstd body ends in the middle of a frame."
                    )
                step = view[pos : pos + _ZSTD_STEP]
                chunk = frame.decompress(step)
                pos += len(step) - len(frame.unused_data)
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise _too_large(" once decompressed")
                out.append(chunk)
    except zstandard.ZstdError as exc:
        raise BodyRefused(400, "invalid_encoding", f"The body is not valid zstd ({exc}).") from None
    return b"".join(out)


def decode(raw: bytes, content_encoding: str | None) -> bytes:
    """The body as sent before any `Content-Encoding`: as it is, or inflated from zstd."""
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding == "zstd":
        return unzstd(raw)
    shown = json.dumps(content_encoding[:40])
    raise BodyRefused(
        415,
        "unsupported_encoding",
        f"Content-Encoding {shown} is not supported; send the body as it is or as zstd.",
    )


def key_accepted(authorization: str | None) -> bool:
    """Whether an Authorization header carries the stand-in's key as a bearer token."""
    scheme, _, token = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), KEY.encode())


class _Handler(BaseHTTPRequestHandler):
    server_version = "decision-console-standin"
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as one answer, not 40 ms apart
    latency = 0.0
    routes: Mapping[str, Route] = ROUTES
    gets: Mapping[str, Get] = _GETS

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in self.gets:
            if not key_accepted(self.headers.get("Authorization")):
                return self._refuse_key(native_error)
            body = self.gets[path]
            return self._send(200, body() if callable(body) else body)
        if path in self.routes:
            return self._send(405, {"detail": "Method Not Allowed"}, {"Allow": "POST"})
        self._send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        route = self.routes.get(self.path.split("?", 1)[0].rstrip("/"))
        error = route.error if route else native_error
        statuses = route.statuses if route else {}
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True  # where this body ends is unknown: read no further
            return self._send(400, error("invalid_request", "Content-Length is not a number."))
        if length > MAX_BODY_BYTES:
            self.close_connection = True  # the body is left unread
            refused = _too_large("")
            return self._send(statuses.get(413, 413), error(refused.error_type, refused.message))
        raw = self.rfile.read(length)
        if route is None:
            return self._send(404, {"detail": "Not Found"})
        if not key_accepted(self.headers.get("Authorization")):
            return self._refuse_key(route.error)
        try:
            raw = decode(raw, self.headers.get("Content-Encoding"))
        except BodyRefused as refused:
            status = statuses.get(refused.status, refused.status)
            return self._send(status, route.error(refused.error_type, refused.message))
        try:
            body = json.loads(raw)
        except json.JSONDecodeError as exc:
            return self._send(*route.not_json(exc.msg, exc.pos))
        except (ValueError, RecursionError) as exc:  # not UTF-8, or nested beyond parsing
            return self._send(*route.not_json(type(exc).__name__, 0))
        if self.latency:
            time.sleep(self.latency)
        status, out = route.respond(body)
        self._send(status, out)

    def _refuse_key(self, error: Callable[[str, str], dict[str, Any]]) -> None:
        given = self.headers.get("Authorization")
        said = "No API key was given" if not given else "The API key is not valid"
        message = f"{said}; send `Authorization: Bearer <key>` with the stand-in's key."
        self._send(401, error("authentication_error", message), {"WWW-Authenticate": "Bearer"})

    def _send(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-typesafe-request-id", f"standin-{uuid.uuid4().hex[:12]}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the console logs its own calls


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver listens with a backlog of 5: a burst of new connections (a batch run at
    # concurrency 64 opening its pool) overflows it and the kernel resets some of them
    request_queue_size = 1024


def make_server(
    port: int = 0,
    latency_ms: float = 0,
    *,
    routes: Mapping[str, Route] | None = None,
    gets: Mapping[str, Get] | None = None,
) -> ThreadingHTTPServer:
    """A stand-in bound to 127.0.0.1 (port 0: any free port), serving `routes` and `gets`
    beside its own (the runtime's, `questions.dev.standin_runtime`, adds its path so)."""
    attributes = {
        "latency": latency_ms / 1000,
        "routes": {**ROUTES, **(routes or {})},
        "gets": {**_GETS, **(gets or {})},
    }
    return _Server(("127.0.0.1", port), type("Handler", (_Handler,), attributes))


#: how often a server's loop looks for `shutdown()`, which waits up to this long (the standard
#: library's 0.5 s made every test that stops a loopback server wait a quarter second)
SHUTDOWN_POLL = 0.02


def serve_in_background(server: socketserver.BaseServer) -> None:
    """`server` serving in a daemon thread; `server.shutdown()` stops it at once."""
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL}, daemon=True
    ).start()


def serve_in_thread(port: int = 0, latency_ms: float = 0, **served: Any) -> ThreadingHTTPServer:
    """`make_server`'s stand-in (`served`: its routes and gets), serving in a daemon thread."""
    server = make_server(port, latency_ms, **served)
    serve_in_background(server)
    return server
