"""The local stand-in provider: the `typesafe` wire (`POST /v1/systemone`) and the `llm` wire
(`POST /v1/chat/completions`) on loopback, for development, demos, tests and benchmarks. It
answers every valid request with answers derived deterministically from the question and the
state, rounded to two decimals like Jev's, under a model name that says what it is; its chat
answers are derived apart from its native ones, as a chat model's would differ from Jev's. It is
never used unless the console is pointed at it.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from questions import spec
from questions.backends import llm

MODEL = "local-stand-in (not Jev)"
#: the key `make run` and the demo call the stand-in with (it checks none)
KEY = "stand-in-key"
CHAT_MODEL = "local-stand-in chat (not a real model)"
CHAT_SALT = b"chat\0"


def _weights(seed: bytes, n: int) -> list[float]:
    digest = b""
    counter = 0
    while len(digest) < 2 * n:
        digest += hashlib.sha256(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    raw = [int.from_bytes(digest[2 * i : 2 * i + 2], "big") + 1 for i in range(n)]
    # sharpen so that one option usually leads, as a trained model's answers do
    raw = [w**3 for w in raw]
    total = sum(raw)
    return [w / total for w in raw]


def _rounded(p: list[float]) -> list[float]:
    """Two decimals summing to exactly 1.00, none below 0: whole cents first, then the cents
    left over to the largest remainders (so 255 small values cannot overdraw one)."""
    exact = [x * 100 for x in p]
    cents = [math.floor(x) for x in exact]
    by_remainder = sorted(range(len(p)), key=lambda i: exact[i] - cents[i], reverse=True)
    for i in by_remainder[: 100 - sum(cents)]:
        cents[i] += 1
    return [c / 100 for c in cents]


def answer(question: spec.Question, state: Any, salt: bytes = b"") -> dict[str, Any]:
    """The stand-in's answer to one question about one state: the same every time (`salt`
    derives another, the same every time too)."""
    seed = salt + spec.canonical_json(question.to_json()) + b"\0" + spec.canonical_json(state)
    if question.type == "noul":
        return {"type": "noul", "noul": round(_weights(seed, 2)[0], 2)}
    if question.type == "choice":
        names = question.option_names
        p = _rounded(_weights(seed, len(names)))
        best = max(range(len(names)), key=p.__getitem__)
        return {
            "type": "choice",
            "choice": names[best],
            "probabilities": dict(zip(names, p, strict=True)),
            "confidence": round(max(0.0, min(1.0, p[best] - 0.05)), 2),
        }
    levels = question.level_count
    p = _rounded(_weights(seed, levels))
    return {
        "type": "score",
        "score": round(sum(i * pi for i, pi in enumerate(p)), 2),
        "legend": {
            str(i): spec.entry_text(e) or f"level {i}" for i, e in enumerate(question.criteria)
        },
        "probabilities": {str(i): pi for i, pi in enumerate(p)},
        "confidence": round(max(p), 2),
    }


def respond(body: Any, salt: bytes = b"") -> tuple[int, dict[str, Any]]:
    """(status, JSON body) for a request body, as the provider would answer it."""
    if not isinstance(body, dict) or "state" not in body or "questions" not in body:
        return 422, {
            "detail": [{"loc": ["body", "state"], "msg": "Field required", "type": "missing"}]
        }
    result = spec.validate(
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
    OpenAI-compatible endpoint would answer it: the reply to the response schema, as text."""
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


#: what the stand-in serves: path → how it answers a request body
ROUTES = {"/v1/systemone": respond, "/v1/chat/completions": respond_chat}


class _Handler(BaseHTTPRequestHandler):
    server_version = "decision-console-standin"
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as one answer, not 40 ms apart
    latency = 0.0

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        route = ROUTES.get(self.path.rstrip("/"))
        if route is None:
            return self._send(404, {"detail": "Not Found"})
        if not self.headers.get("Authorization", "").startswith("Bearer "):
            return self._send(401, {"detail": "Missing bearer token"})
        try:
            body = json.loads(raw)
        except ValueError:
            return self._send(422, {"detail": "Body is not JSON"})
        if self.latency:
            time.sleep(self.latency)
        status, out = route(body)
        self._send(status, out)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-typesafe-request-id", f"standin-{uuid.uuid4().hex[:12]}")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the console logs its own calls


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver listens with a backlog of 5: a burst of new connections (a batch run at
    # concurrency 64 opening its pool) overflows it and the kernel resets some of them
    request_queue_size = 1024


def make_server(port: int = 0, latency_ms: float = 0) -> ThreadingHTTPServer:
    """A stand-in bound to 127.0.0.1 (port 0: any free port)."""
    handler = type("Handler", (_Handler,), {"latency": latency_ms / 1000})
    return _Server(("127.0.0.1", port), handler)


def serve_in_thread(port: int = 0, latency_ms: float = 0) -> ThreadingHTTPServer:
    server = make_server(port, latency_ms)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
