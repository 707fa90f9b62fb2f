"""Loopback providers the tests share, and their helpers.

`Provider` is a real HTTP server on 127.0.0.1 that records the raw bytes of every request and
answers what the test queued — or, when nothing is queued, the default answer (a body, or a
function of the request's JSON); `point_every_wire_at` aims every wire at it. `FlakyProvider`
answers with the stand-in's answers and can rate-limit, fail, hang up or answer oddly, for the
batch runs; `DOC` is the question map they ask; `run_cli` calls the command line.
For webhooks: `Receiver` answers POSTs (over TLS too), `Listener` records every connection and
can trickle its answer a byte at a time, `resolving` points the console's name lookups at a
table, `work` runs django-tasks' database worker until a condition holds. `StandIn` is the local
stand-in on a free port; the `provider_factory` fixture (conftest.py) starts any of them for a
test, aims the console at it and stops it at the end. For suggestions: `decides_or_drafts`
answers both wires, reading `SUGGEST_DOC`'s words and drafting a better, a worse and an
unchanged candidate."""

from __future__ import annotations

import contextlib
import io
import json
import re
import select
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from django.core.management import call_command

from questions.core import spec
from questions.dev import standin
from questions.engine.backends import drafting

KEY = "sk-test-4f9c2a7e1b"
#: django-tasks' dummy backend: a run is queued and not worked (the test works it, or not)
DUMMY_TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}

#: what a `FlakyProvider.raw` answer yields to reset its connection
RESET = b"<reset>"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # a batch run opens up to 128 connections at once


class Provider:
    """Replies are (status, body, headers, delay, trickle): `delay` seconds before answering;
    `trickle` > 0 sends the body one byte at a time, that many seconds apart."""

    def __init__(self, default: dict | Callable[[Any], dict] | None = None):
        self.default = default if default is not None else {}
        self.replies: list[tuple[int, bytes, dict, float, float]] = []
        self.requests: list[dict] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw)
                provider.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "raw": raw, "body": body}
                )
                status, out, headers, delay, trickle = (
                    provider.replies.pop(0) if provider.replies else provider.default_reply(body)
                )
                time.sleep(delay)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    chunks = [out[i : i + 1] for i in range(len(out))] if trickle else [out]
                    for chunk in chunks:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                        time.sleep(trickle)

            def log_message(self, *args):
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        standin.serve_in_background(self.server)

    def default_reply(self, body: Any) -> tuple[int, bytes, dict, float, float]:
        out = self.default(body) if callable(self.default) else self.default
        return 200, json.dumps(out).encode(), {}, 0, 0

    def reply(
        self, status: int, body, headers: dict | None = None, delay: float = 0, trickle: float = 0
    ):
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.replies.append((status, raw, headers or {}, delay, trickle))

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def stand_in_serving(settings):
    """The local stand-in on a free loopback port, with the typesafe and llm wires pointed at
    it (as `make run` does without keys)."""
    server = standin.serve_in_thread()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = standin.KEY, base
    settings.LLM_API_KEY, settings.LLM_BASE_URL = standin.KEY, f"{base}/v1"
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


#: the tests' provider timeout: generous, so a loaded machine does not turn an answer into a
#: 504; a test of the timeout itself sets a short one and a longer delay
TIMEOUT = 5.0


def point_every_wire_at(settings, provider: Provider, timeout: float = TIMEOUT) -> None:
    """Configure typesafe, runtime and openrouter to call `provider` with the test key."""
    settings.TYPESAFE_API_KEY = KEY
    settings.TYPESAFE_BASE_URL = provider.url
    settings.RUNTIME_URL = provider.url
    settings.RUNTIME_TOKEN = KEY
    settings.OPENROUTER_API_KEY = KEY
    settings.OPENROUTER_BASE_URL = provider.url
    settings.DECISIONS_TIMEOUT_SECONDS = timeout


DOC = {
    "urgent": {"type": "noul", "instructions": "Is it urgent?"},
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money", "tech": "bugs", "other": "anything else"},
    },
}


class FlakyProvider:
    """The stand-in's answers, after `latency` seconds, with the first `fail_first` calls for
    each state answered `fail_status` (and `Retry-After` when given); counts calls in flight.
    The first `hang_up_first` calls for each state get no answer at all (the connection is
    closed), and `answer(state, body)` may rewrite the raw JSON text of a 200 answer.
    `hold(provider)`, when given, is called as each call arrives, once it is counted in flight
    (e.g. to hold the calls until enough are). `raw(body, n)`, when given, may take over the
    n-th call for a state: the bytes it yields (an answer's head included) go to the socket as
    they come, until it ends or the client hangs up, and the connection is closed (reset,
    when it yields RESET); `sent` counts them by state. None leaves the call to the others."""

    def __init__(
        self,
        latency=0.0,
        fail_first=0,
        fail_status=429,
        retry_after=None,
        always_fail=(),
        hang_up_first=0,
        answer: Callable[[Any, str], str] | None = None,
        hold: Callable[[FlakyProvider], None] | None = None,
        raw: Callable[[Any, int], Iterable[bytes] | None] | None = None,
    ):
        self.latency, self.fail_first, self.fail_status = latency, fail_first, fail_status
        self.retry_after, self.always_fail = retry_after, set(always_fail)
        self.hang_up_first, self.answer, self.hold = hang_up_first, answer, hold
        self.raw = raw
        self.calls: dict[str, int] = {}
        self.sent: dict[str, int] = {}
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = json.dumps(body["state"], sort_keys=True)
                with provider.lock:
                    provider.calls[key] = provider.calls.get(key, 0) + 1
                    n = provider.calls[key]
                    provider.in_flight += 1
                    provider.max_in_flight = max(provider.max_in_flight, provider.in_flight)
                try:
                    if provider.hold is not None:
                        provider.hold(provider)
                    time.sleep(provider.latency)
                    headers = {}
                    pieces = provider.raw(body, n) if provider.raw is not None else None
                    if pieces is not None:
                        self.send_raw(key, pieces)
                        return
                    if n <= provider.hang_up_first:
                        self.close_connection = True
                        return
                    if key in provider.always_fail or n <= provider.fail_first:
                        status, out = provider.fail_status, {"detail": "Slow down"}
                        if provider.retry_after is not None:
                            headers["Retry-After"] = str(provider.retry_after)
                    else:
                        status, out = standin.respond(body)
                finally:
                    with provider.lock:
                        provider.in_flight -= 1
                text = json.dumps(out)
                if status == 200 and provider.answer is not None:
                    text = provider.answer(body["state"], text)
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def send_raw(self, key: str, pieces: Iterable[bytes]) -> None:
                self.close_connection = True
                try:
                    for piece in pieces:
                        if piece is RESET:  # closed with a reset, not a FIN
                            linger = struct.pack("ii", 1, 0)
                            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                            self.connection.close()
                            return
                        self.wfile.write(piece)
                        with provider.lock:
                            provider.sent[key] = provider.sent.get(key, 0) + len(piece)
                except OSError:  # the client hung up (or reset the connection)
                    return

            def log_message(self, *a):
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        standin.serve_in_background(self.server)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    stop = close  # as `Provider`'s, for `provider_factory`


class StandIn:
    """The local stand-in provider (`questions.dev.standin`) on a free loopback port, with its
    `url` and `stop()` as a `Provider` has them."""

    def __init__(self):
        self.server = standin.serve_in_thread()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class StandInRuntime(StandIn):
    """The stand-in as `questions standin` serves it: the provider's wires and the runtime's
    `POST /api/decisions` over the test database's approved exports (a test that reaches it
    commits what it reads: `django_db(transaction=True)`)."""

    def __init__(self):
        from questions.dev import standin_runtime

        self.server = standin_runtime.serve_in_thread()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.environment = local_environment(self.url)


def local_environment(base_url: str) -> dict[str, str]:
    """The variables the export page's local block sets (`snippets.local_environment`), as an
    environment a snippet runs in."""
    from questions.core import snippets

    return exported_variables(snippets.local_environment(base_url, standin.KEY))


def exported_variables(lines: str) -> dict[str, str]:
    """The NAME=VALUE words of shell `export` lines (comments left out)."""
    import shlex

    found = {}
    for line in lines.splitlines():
        words = shlex.split(line, comments=True)
        for word in words[1:] if words[:1] == ["export"] else []:
            name, _, value = word.partition("=")
            found[name] = value
    return found


#: how the suite runs each language's snippet: the interpreter, the file it is saved as, and
#: where the answers are in what it prints (curl prints the whole response)
SNIPPET_RUNS = {
    "curl": (["sh"], "decide.sh", ("answers",)),
    "python": ([sys.executable], "decide.py", ()),
    "typescript": (["node"], "decide.mjs", ()),  # no TypeScript-only syntax: node runs it
    "sdk": ([sys.executable], "decide_direct.py", ()),
}


def run_snippet(language: str, code: str, env: dict[str, str], folder) -> tuple[Any, str]:
    """Save a snippet in `folder`, run it with only `env` (and PATH, HOME) in its environment,
    and return the answers it printed and its stderr; an AssertionError when it fails."""
    import os

    argv, name, answers_at = SNIPPET_RUNS[language]
    script = folder / name
    script.write_text(code)
    done = subprocess.run(
        [*argv, str(script)],
        env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"{language}: exit {done.returncode}: {done.stderr[-2000:]}"
    printed = json.loads(done.stdout)
    for key in answers_at:
        printed = printed[key]
    return printed, done.stderr


def run_cli(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """`manage.py questions ARGS…`, reading `stdin` when given: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()))
    try:
        call_command("questions", *args, stdout=out, stderr=err)
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()


class Receiver:
    """A webhook receiver on 127.0.0.1: records every POST (raw body and headers) and answers
    `statuses` in turn (then 200), after `delay` seconds, with `body` as its answer. With `tls`
    (a server context) it speaks HTTPS and records the name each client asked for (SNI)."""

    def __init__(
        self,
        statuses=(),
        delay: float = 0.0,
        body: bytes = b'{"ok": true}',
        tls: ssl.SSLContext | None = None,
    ):
        self.statuses = list(statuses)
        self.delay, self.body = delay, body
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle(self):
                # a webhook attempt hangs up without reading the answer's body
                with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                    super().handle()

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.requests.append({"headers": dict(self.headers), "raw": raw})
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                time.sleep(receiver.delay)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(receiver.body)))
                    self.end_headers()
                    self.wfile.write(receiver.body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.server_names: list[str | None] = []
        if tls is not None:

            def named(sock, name, context):
                self.server_names.append(name)

            tls.sni_callback = named
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}/hooks"
        standin.serve_in_background(self.server)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def certificate(directory, name: str) -> tuple[str, str]:
    """A self-signed certificate for the host `name` (openssl): (certificate file, key file)."""
    cert, key = str(directory / f"{name}.pem"), str(directory / f"{name}.key")
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt"),
            *("ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"),
            *("-subj", f"/CN={name}", "-addext", f"subjectAltName=DNS:{name}"),
            *("-keyout", key, "-out", cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class Listener:
    """A bare TCP server on 127.0.0.1 that records every connection made to it, in order, with
    whether each is still open. With `trickle`, it reads the request's head and then sends an
    HTTP answer one byte every `every` seconds (`trickle` bytes at most, or until `release`),
    noticing at once when the client hangs up; without, it closes each connection at once."""

    def __init__(self, trickle: int = 0, every: float = 0.05):
        self.trickle, self.every = trickle, every
        self.connections: list[dict] = []
        self.lock = threading.RLock()  # conditions read `open_now`, which takes it too
        self.changed = threading.Condition(self.lock)
        self.released = threading.Event()
        self.most_open = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks"
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def open_now(self) -> int:
        with self.lock:
            return sum(1 for c in self.connections if c["open"])

    def wait_for(self, condition, seconds: float = 30) -> None:
        """Until `condition(listener)` holds (it is checked on every change)."""
        with self.changed:
            assert self.changed.wait_for(lambda: condition(self), seconds), "never happened"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            record = {"open": True, "head": b""}
            with self.changed:
                self.connections.append(record)
                self.most_open = max(self.most_open, sum(c["open"] for c in self.connections))
                self.changed.notify_all()
            threading.Thread(target=self._serve, args=(conn, record), daemon=True).start()

    def _serve(self, conn: socket.socket, record: dict) -> None:
        try:
            if self.trickle:
                self._trickle(conn, record)
        finally:
            conn.close()
            with self.changed:
                record["open"] = False
                self.changed.notify_all()

    def _trickle(self, conn: socket.socket, record: dict) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(65536)
            if not chunk:
                return
            head += chunk
        with self.changed:
            record["head"] = head
            self.changed.notify_all()
        answer = b"HTTP/1.1 200 OK\r\nX-Pad: " + b"." * self.trickle
        for byte in answer[: self.trickle]:
            readable, _, _ = select.select([conn], [], [], self.every)
            try:
                if readable and not conn.recv(65536):
                    return  # the client hung up
            except OSError:
                return  # … or reset the connection
            if self.released.is_set() or self._stop.is_set():
                return
            try:
                conn.sendall(bytes([byte]))
            except OSError:
                return
        with contextlib.suppress(OSError):
            conn.sendall(b"\r\nContent-Length: 0\r\n\r\n")

    def stop(self) -> None:
        self._stop.set()
        self.released.set()
        self.sock.close()


@contextlib.contextmanager
def resolving(table: dict[str, list[str]]):
    """The console's name lookups (`questions.core.addresses.getaddrinfo`) answer from `table` (a
    name → its addresses); any other name does not resolve. The calls are recorded."""
    from questions.core import addresses

    calls: list[str] = []

    def lookup(host, port, *args, **kwargs):
        calls.append(host)
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (
                socket.AF_INET6 if ":" in a else socket.AF_INET,
                socket.SOCK_STREAM,
                socket.IPPROTO_TCP,
                "",
                (a, port, 0, 0) if ":" in a else (a, port),
            )
            for a in table[host]
        ]

    kept, addresses.getaddrinfo = addresses.getaddrinfo, lookup
    try:
        yield calls
    finally:
        addresses.getaddrinfo = kept


def work(until: Callable[[], bool], seconds: float = 120, queues=("default", "webhooks")) -> None:
    """Run django-tasks' database worker (the real one, in batch mode) on `queues` until
    `until()` holds."""
    deadline = time.monotonic() + seconds
    while not until():
        assert time.monotonic() < deadline, "the worker did not finish in time"
        worker(queues).run()
        time.sleep(0.02)


def worker(queues=("default", "webhooks"), worker_id: str = "test-worker"):
    """django-tasks' database worker on `queues`, in batch mode (it stops when they are empty)."""
    from django_tasks_db.management.commands.db_worker import Worker

    return Worker(
        queue_names=list(queues),
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id=worker_id,
        excluded_queue_names=[],
    )


def webhooks_finished() -> bool:
    """No webhook delivery is pending."""
    from questions.models import WebhookDelivery

    return not WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING).exists()


#: nothing here is in sorted order: ids, option keys, criteria keys, a question's own keys
UNSORTED = {
    "zeta": {
        "type": "choice",
        "instructions": "What does the customer want?",
        "criteria": {
            "refund": "money back for an order",
            "upgrade": {"what": "a bigger plan", "examples": ["more seats"]},
            "other": "anything else",
        },
    },
    "alpha": {
        "instructions": "Is the customer angry?",
        "type": "noul",
        "criteria": {"false": "calm words", "true": "shouting or threats"},
    },
    "mid": {
        "criteria": ["calm", "annoyed", "furious"],
        "type": "score",
        "instructions": {"rubric": "tone", "data": "`ticket`"},
    },
}


STATE = {"ticket": "I want my money back", "channel": "email"}


def answer_all(body: dict) -> dict:
    """A valid provider answer to whatever was asked: the first option, the first level."""
    out = {}
    for qid, q in body["questions"].items():
        if q["type"] == "choice":
            names = list(q["criteria"])
            p = {n: 0.0 for n in names} | {names[0]: 1.0}
            out[qid] = {"type": "choice", "choice": names[0], "probabilities": p, "confidence": 0.9}
        elif q["type"] == "score":
            levels = {str(i): 0.0 for i in range(len(q["criteria"]))} | {"0": 1.0}
            legend = {str(i): str(c) for i, c in enumerate(q["criteria"])}
            out[qid] = {
                "type": "score",
                "score": 0,
                "probabilities": levels,
                "legend": legend,
                "confidence": 0.9,
            }
        else:
            out[qid] = {"type": "noul", "noul": 0.7}
    return {"model": "jev-1.13.0", "answers": out, "usage": {"input_tokens": 50}}


TOPICS = {"billing": "money", "tech": "bugs", "other": "anything else"}


def _choice(options: list[str], chosen: str) -> dict:
    rest = round(0.1 / (len(options) - 1), 2)
    probabilities = {o: rest for o in options}
    probabilities[chosen] = round(1 - rest * (len(options) - 1), 2)
    return {"type": "choice", "choice": chosen, "probabilities": probabilities, "confidence": 0.85}


def _answers(body: dict, pick) -> dict:
    out = {}
    for qid, q in body["questions"].items():
        if q["type"] == "choice":
            out[qid] = _choice(list(q["criteria"]), pick(q["criteria"], body))
        else:
            out[qid] = {"type": "noul", "noul": 0.8 if body["state"].get("urgent") else 0.2}
    return {"model": body.get("model") or "m", "answers": out, "usage": {"input_tokens": 9}}


def reads_the_words(body: dict) -> dict:
    """A model whose choice follows the option descriptions: the one naming the state's topic."""
    return _answers(
        body,
        lambda criteria, b: next(o for o, text in criteria.items() if text == b["state"]["topic"]),
    )


def ignores_the_words(body: dict) -> dict:
    return _answers(body, lambda criteria, b: "billing")


def takes_the_first(body: dict) -> dict:
    return _answers(body, lambda criteria, b: next(iter(criteria)))


# --- your own function as a backend (`custom`, DECISIONS__CUSTOM_BACKEND=tests.providers:…) ----


def custom_reads_the_words(state: Any, questions: dict, model: str) -> dict:
    """A good custom backend: the word-reading stand-in's answers, under its own model name,
    with no usage."""
    _, body = standin.respond({"state": state, "model": model, "questions": questions})
    return {"model": "tests' own rules", "answers": body["answers"]}


def custom_breaks_the_sums(state: Any, questions: dict, model: str) -> dict:
    """A custom backend whose choice probabilities sum to 1.5 (its least likely option's
    raised by 0.5)."""
    body = custom_reads_the_words(state, questions, model)
    for answer in body["answers"].values():
        if answer["type"] == "choice":
            least = min(answer["probabilities"], key=answer["probabilities"].get)
            answer["probabilities"][least] = round(answer["probabilities"][least] + 0.5, 2)
    return body


def custom_raises_on_passwords(state: Any, questions: dict, model: str) -> dict:
    """Raises, quoting the state, for a state that says `password`; answers the others."""
    if "password" in json.dumps(state):
        raise RuntimeError(f"cannot route {state!r}")
    return custom_reads_the_words(state, questions, model)


#: not callable: a setting that names it is refused at use
CUSTOM_NOT_CALLABLE = 3


#: labelled tickets a word reader routes by `custom`'s test questions: (name, text, desk)
ADVICE_DOC_STATES = [
    ("a", "I want a refund of my money", "billing"),
    ("b", "The app crashes, a bug", "tech"),
]


_WORD = re.compile(r"[a-z]{3,}")
_COMMON = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "are",
        "was",
        "what",
        "which",
        "any",
        "anything",
        "else",
    ]
)


def _words(value: Any) -> set[str]:
    return set(_WORD.findall(spec.entry_text(value).casefold())) - _COMMON


def _spread(weights: list[float]) -> list[float]:
    """Probabilities from weights, two decimals, summing to exactly 1 (the largest takes the
    rest)."""
    total = sum(weights)
    p = [round(w / total, 2) for w in weights]
    top = p.index(max(p))
    p[top] = round(1 - sum(x for i, x in enumerate(p) if i != top), 2)
    return p


def overlap_answers(body: dict) -> dict:
    """A loopback model that reads the words: a choice's option (a score's level) whose name
    and description share most words with the state wins, each weighted 1 + 3 × its overlap; a
    noul's P(true) rises with the state's words in its true case and instructions and falls with
    those in its false case. Deterministic, valid by the gateway's rules."""
    seen = _words(body["state"])
    out = {}
    for qid, q in body["questions"].items():
        criteria = q.get("criteria")
        if q["type"] in ("choice", "score"):
            choice = q["type"] == "choice"
            texts = list(criteria.items()) if choice else list(enumerate(criteria))
            names = [str(k) for k, _ in texts]
            weights = [
                1 + 3 * len(seen & (_words(v) | (_words(k) if choice else set()))) for k, v in texts
            ]
            p = _spread(weights)
            if choice:
                best = names[p.index(max(p))]
                out[qid] = {
                    "type": "choice",
                    "choice": best,
                    "probabilities": dict(zip(names, p, strict=True)),
                    "confidence": max(p),
                }
            else:
                out[qid] = {
                    "type": "score",
                    "score": round(sum(i * x for i, x in enumerate(p)), 2),
                    "probabilities": {str(i): x for i, x in enumerate(p)},
                    "legend": {str(i): str(v) for i, v in enumerate(criteria)},
                    "confidence": max(p),
                }
        else:
            cases = criteria if isinstance(criteria, dict) else {}
            yes = len(seen & (_words(cases.get("true")) | _words(q.get("instructions"))))
            no = len(seen & _words(cases.get("false")))
            out[qid] = {"type": "noul", "noul": round((1 + 2 * yes) / (2 + 2 * yes + 2 * no), 2)}
    return {"model": "overlap-1", "answers": out, "usage": {"input_tokens": 40}}


#: a set whose words `overlap_answers` reads: the state's words are billing's description and
#: the urgent noul's true case, so leaving those out moves the answers
ROUTING = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk should take the ticket? Read the whole ticket.",
        "criteria": {
            "billing": "a refund of a charge on a card or an invoice",
            "tech": {
                "what": "crashes and errors in the app",
                "not_for": "questions about payments",
                "examples": ["the app crashes on login"],
            },
            "other": "anything else",
        },
    },
    "urgent": {
        "type": "noul",
        "instructions": "Is the customer in a hurry?",
        "criteria": {"true": "wants an answer today", "false": "no deadline given"},
    },
    "tone": {
        "type": "score",
        "instructions": "How angry is the customer?",
        "criteria": ["calm and polite", "annoyed", "furious and shouting"],
    },
}
ROUTING_STATE = {"ticket": "Please refund the invoice today.", "note": "charged twice on my card"}


class Gate:
    """Holds every call until `wanted` are in flight at once, then (`opens_itself`) lets them
    all go, or holds them until the test `open`s it."""

    def __init__(self, wanted: int, *, opens_itself: bool = False):
        self.wanted, self.opens_itself = wanted, opens_itself
        self.reached, self.opened = threading.Event(), threading.Event()

    def __call__(self, provider: FlakyProvider) -> None:
        with provider.lock:
            in_flight = provider.in_flight
        if in_flight >= self.wanted:
            self.reached.set()
            if self.opens_itself:
                self.opened.set()
        self.opened.wait(60)

    def open(self) -> None:
        self.opened.set()


# --- suggestions: a model that reads the words, and a chat model that drafts three candidates --

#: the question's id is addressing: it never reaches a model (an id no text holds)
SUGGEST_QID = "q_route_7f"
SUGGEST_DOC = {
    "urgent": {"type": "noul", "instructions": "Is it urgent?"},
    SUGGEST_QID: {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money", "tech": "bugs", "other": "anything else please"},
    },
}
#: what the states of each desk say: billing's share only "please" with `other`, so v1 sends
#: them there; tech's say what tech's description says
SUGGEST_SAYS = {"billing": "refund please", "tech": "bugs"}
#: the loopback drafter's candidates (`drafts_three`): truly better, truly worse, no different
BETTER_WORDS = {"billing": "money or a refund", "tech": "bugs", "other": "anything else please"}
WORSE_WORDS = {"billing": "money or bugs", "tech": "bugs", "other": "anything else please"}
SAME_WORDS = dict(SUGGEST_DOC[SUGGEST_QID]["criteria"])
DRAFT_REASONS = ("adds refund to billing", "gives billing the bugs", "asks politely")


def decides_by_words(body: dict) -> dict:
    """A model that reads the words: the option whose description shares most words with
    what the state says wins (the first on a tie; the first when none shares one)."""
    said = set(body["state"]["says"].split())
    answers = {}
    for qid, q in body["questions"].items():
        if q["type"] != "choice":
            answers[qid] = {"type": "noul", "noul": 0.7}
            continue
        names = list(q["criteria"])
        shared = [len(said & set(str(q["criteria"][o] or "").split())) for o in names]
        pick = names[shared.index(max(shared))]
        rest = round(0.2 / (len(names) - 1), 4)
        p = {o: 0.8 if o == pick else rest for o in names}
        answers[qid] = {"type": "choice", "choice": pick, "probabilities": p, "confidence": 0.7}
    return {"model": "reader-1", "answers": answers, "usage": {"input_tokens": 10}}


def drafted_candidate(instructions: str, criteria: dict, why: str) -> dict:
    return {"instructions": instructions, "criteria": criteria, "why": why}


def drafts_three(body: dict) -> dict:
    """A chat model that drafts the three candidates (as many as asked, the last repeated)."""
    asked = drafting.read_request(body)["candidates"]
    written = [
        drafted_candidate("Which desk?", BETTER_WORDS, DRAFT_REASONS[0]),
        drafted_candidate("Which desk?", WORSE_WORDS, DRAFT_REASONS[1]),
        drafted_candidate("Which desk, please?", SAME_WORDS, DRAFT_REASONS[2]),
    ]
    content = {f"c{n}": written[min(n, 3) - 1] for n in range(1, asked + 1)}
    return chat_answer(content)


def chat_answer(content) -> dict:
    """A chat completion whose message is `content` as JSON."""
    return {
        "id": "chatcmpl-loopback",
        "model": "drafter-1",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": json.dumps(content)},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 900, "completion_tokens": 200},
    }


def decides_or_drafts(body: dict) -> dict:
    """One loopback server for both wires: typesafe's decisions, llm's drafting."""
    return drafts_three(body) if drafting.is_drafting(body) else decides_by_words(body)
