"""The batch engine's calls: one loop per process, its clients (`questions.engine.backends.clients`,
httpx) kept from run to run — the same bytes and headers a single ask sends, the gateway's CA
SSL_CERT_FILE names trusted, each failure of the network or the server named by its own row, a
run through the forward proxy HTTP_PROXY names going through the same code as one without —
and the recordings written in bulk (`questions.services.bulk`), on SQLite and PostgreSQL
alike."""

from __future__ import annotations

import http.client
import json
import math
import socket
import ssl
import threading
import urllib.parse
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import httpx
import pytest
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from questions import services
from questions.core import spec
from questions.dev import standin
from questions.engine import batches
from questions.engine.backends import clients
from questions.models import Decision, DecisionAnswer
from questions.selectors import runs
from questions.services import batch_execution, bulk
from tests import factories
from tests.providers import DOC, FlakyProvider, Receiver, certificate

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def provider(provider_factory):
    p = provider_factory(
        FlakyProvider(),
        key="k-batch-test",
        DECISIONS_BATCH_BACKOFF_SECONDS=0.01,
        DECISIONS_BATCH_BACKOFF_CAP_SECONDS=0.05,
    )
    p.accepted, p.sockets = 0, []
    accept = p.server.get_request

    def counted():
        connection = accept()
        p.accepted += 1
        p.sockets.append(connection[0])
        return connection

    p.server.get_request = counted
    return p


def a_set(states: int):
    writer = factories.author()
    qs = factories.question_set(owner=writer, doc=DOC)
    for i in range(states):
        services.sample_state_create(
            question_set=qs, name=f"s{i:02d}", state={"n": i}, author=writer, expected={}
        )
    return services.open_draft(qs), writer


def run(version, writer, concurrency: int):
    created = services.batch_create(
        version=version,
        backend="typesafe",
        user=writer,
        concurrency=concurrency,
        enqueue=False,
    )
    return services.batch_execute(created.pk)


def test_a_second_run_in_the_process_reuses_the_first_runs_connections(provider):
    version, writer = a_set(12)
    first = run(version, writer, concurrency=4)
    opened = provider.accepted
    assert runs.run_counts(first)["answered"] == 12
    assert 1 <= opened <= 4
    second = run(version, writer, concurrency=4)
    assert runs.run_counts(second)["answered"] == 12
    assert provider.accepted == opened  # no new connection: the kept ones answered


def test_a_run_wider_than_the_kept_clients_opens_only_the_missing_ones(provider):
    version, writer = a_set(12)
    run(version, writer, concurrency=2)
    before = provider.accepted
    wider = run(version, writer, concurrency=6)
    assert runs.run_counts(wider)["answered"] == 12
    assert before <= 2 and provider.accepted - before <= 4


def test_at_most_so_many_idle_clients_are_kept(provider, monkeypatch):
    monkeypatch.setattr(batch_execution, "IDLE_CLIENTS", 3)
    batches._Loop.shared().run(_forget_kept())  # what earlier tests' runs left
    version, writer = a_set(10)
    assert runs.run_counts(run(version, writer, concurrency=5))["answered"] == 10
    kept = batches._Loop.shared().run(_idle())
    assert kept == 3


async def _idle() -> int:
    return len(clients.pool().idle)


async def _forget_kept() -> None:
    kept = clients.pool()
    for client in kept.idle:
        await client.aclose()
    kept.idle.clear()


def test_a_connection_the_provider_closed_while_idle_is_opened_again(provider):
    """A kept connection the provider hung up on between runs is noticed (it reads as closed)
    and a new one made: nothing fails."""
    version, writer = a_set(4)
    assert runs.run_counts(run(version, writer, concurrency=2))["answered"] == 4
    opened = provider.accepted
    for sock in provider.sockets:
        sock.shutdown(socket.SHUT_RDWR)
    again = run(version, writer, concurrency=2)
    assert runs.run_counts(again)["answered"] == 4
    assert again.items.filter(attempts=1).count() == 4  # noticed before sending, not retried
    assert provider.accepted > opened


def test_the_batch_sends_the_bytes_and_headers_a_single_ask_sends(settings):
    """A batch slot's client and a single ask's are built alike."""
    from tests.providers import Provider, point_every_wire_at

    p = Provider(default=lambda body: standin_answer(body))
    point_every_wire_at(settings, p)
    try:
        version, writer = a_set(1)
        state = version.question_set.sample_states.get()
        services.decision_ask(
            backend="typesafe", state=state.state, user=writer, document=version.document
        )
        assert runs.run_counts(run(version, writer, concurrency=1))["answered"] == 1
        single, batched = p.requests
        assert single["raw"] == batched["raw"]
        same = {k.lower(): v for k, v in single["headers"].items()}
        assert {k.lower(): v for k, v in batched["headers"].items()} == same
        assert same["user-agent"].startswith("python-httpx/")
    finally:
        p.stop()


def standin_answer(body):
    from questions.dev import standin

    return standin.respond(body)[1]


# --- the clients, by themselves (`questions.engine.backends.clients`) -----------------------


def _on_loop(coroutine):
    return batches._Loop.shared().run(
        coroutine
    )  # the engine's loop (a test may hold this thread's)


def _exchange(url: str, *, seconds: float = 5.0, limit: int = 2**20, through=None):
    """One POST through a slot's client (a new one unless given): (response, body), or the
    exception it raised."""

    async def go():
        client = through or clients.async_client()
        try:
            return await clients.aexchange(client, url, b"{}", {}, seconds, limit)
        except Exception as exc:
            return exc
        finally:
            if through is None:
                await client.aclose()

    return _on_loop(go())


@pytest.fixture
def fresh_clients():
    """Clients built for what the test sets in the environment, and for the next test again."""
    clients.forget()
    yield
    clients.forget()


def test_a_gateways_ca_named_by_ssl_cert_file_is_trusted(tmp_path, monkeypatch, fresh_clients):
    cert, key = certificate(tmp_path, "localhost")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    receiver = Receiver(tls=server)
    url = f"https://localhost:{receiver.port}/hooks"
    try:
        unknown = _exchange(url)  # a certificate nobody the clients trust vouched for
        assert isinstance(unknown, httpx.ConnectError)
        assert clients.failure(unknown) == "unreachable"
        monkeypatch.setenv("SSL_CERT_FILE", cert)
        clients.forget()
        response, body = _exchange(url)
        assert (response.status_code, body) == (200, b'{"ok": true}')
        assert receiver.server_names[-1] == "localhost"  # the name went out (SNI)
    finally:
        receiver.stop()


def test_a_closed_port_is_unreachable_and_a_silent_server_a_timeout():
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    refused = _exchange(f"http://127.0.0.1:{port}/")
    assert isinstance(refused, httpx.ConnectError) and clients.failure(refused) == "unreachable"
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    held = []
    threading.Thread(target=lambda: held.append(silent.accept()), daemon=True).start()
    try:
        waited = _exchange(f"http://127.0.0.1:{silent.getsockname()[1]}/", seconds=0.3)
        assert clients.failure(waited) == "timeout"
    finally:
        silent.close()


class Scripted:
    """A server on 127.0.0.1 that reads each request (head and Content-Length body) and sends
    the next of `answers` as raw bytes; an answer of None hangs up without answering, one
    given as (bytes,) hangs up once it is sent. Counts the connections it accepted."""

    def __init__(self, answers: list[bytes | tuple[bytes] | None]):
        self.answers, self.accepted = list(answers), 0
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                sock, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._talk, args=(sock,), daemon=True).start()

    def _talk(self, sock: socket.socket) -> None:
        data = b""
        with sock:
            while self.answers:
                while b"\r\n\r\n" not in data:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, data = data.partition(b"\r\n\r\n")
                length = int(next(
                    (line.split(b":")[1] for line in head.split(b"\r\n")
                     if line.lower().startswith(b"content-length:")), b"0",
                ))  # fmt: skip
                while len(data) < length:
                    data += sock.recv(65536)
                data = data[length:]
                answer = self.answers.pop(0)
                if answer is None:
                    return
                sock.sendall(answer[0] if isinstance(answer, tuple) else answer)
                if isinstance(answer, tuple):
                    return

    def close(self) -> None:
        self.server.close()


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def _in_turn(server: Scripted, n: int, limit: int = 2**20) -> list:
    """`n` POSTs in turn through one slot's client: each (response, body), or its exception."""

    async def go():
        client = clients.async_client()
        try:
            return [
                await _caught(clients.aexchange(client, server.url, b"{}", {}, 5.0, limit))
                for _ in range(n)
            ]
        finally:
            await client.aclose()

    return _on_loop(go())


async def _caught(call):
    try:
        return await call
    except Exception as exc:
        return exc


def test_a_slots_client_keeps_its_one_connection_alive_and_opens_another_when_told_to_close():
    closing = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    server = Scripted([OK, OK, closing, OK])
    try:
        assert [body for _, body in _in_turn(server, 4)] == [b"ok"] * 4
        assert server.accepted == 2  # the third answer asked to close its connection
    finally:
        server.close()


def test_chunked_and_compressed_answers_are_read_decoded_and_counted_decoded():
    import gzip

    packed = gzip.compress(b'{"answers": {}}' + b" " * 5000)
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Request-Id: r-1\r\n\r\n"
        b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    )
    zipped = (
        b"HTTP/1.1 429 Too Many Requests\r\nContent-Encoding: gzip\r\n"
        + f"Content-Length: {len(packed)}\r\n\r\n".encode()
        + packed
    )
    informational = b"HTTP/1.1 100 Continue\r\n\r\n" + OK
    server = Scripted([chunked, zipped, informational, zipped])
    try:
        first, second, third = _in_turn(server, 3)
        assert first[1] == b"hello world" and first[0].headers["x-request-id"] == "r-1"
        assert second[0].status_code == 429 and second[1].startswith(b'{"answers": {}}  ')
        assert (third[0].status_code, third[1]) == (200, b"ok")
        assert server.accepted == 1
        # the same compressed answer (under 100 bytes as sent) is refused by what it decodes to
        [refused] = _in_turn(server, 1, limit=1000)
        assert len(packed) < 100 and isinstance(refused, clients.AnswerTooLarge)
        assert (refused.status_code, clients.failure(refused)) == (429, "too_large")
    finally:
        server.close()


def test_a_server_that_misbehaves_fails_each_call_by_its_own_row():
    half = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"
    server = Scripted([None, b"NOT HTTP AT ALL\r\n\r\n", (half,), OK])
    try:
        hung_up, garbled, cut, fine = _in_turn(server, 4)
        assert clients.failure(hung_up) == "unreachable"  # no answer at all
        assert clients.failure(garbled) == "protocol"
        assert clients.failure(cut) == "protocol"  # a body shorter than it said
        assert fine[0].status_code == 200
        assert server.accepted == 4  # each failure closed its connection
    finally:
        server.close()


def test_a_call_cut_at_its_deadline_leaves_its_client_fit_for_the_next(fresh_clients):
    server = Scripted([OK])
    silent = socket.create_server(("127.0.0.1", 0))
    held = []
    threading.Thread(target=lambda: held.append(silent.accept()), daemon=True).start()

    async def go():
        client = clients.async_client()
        try:
            cut = await _caught(
                clients.aexchange(
                    client, f"http://127.0.0.1:{silent.getsockname()[1]}/", b"{}", {}, 0.2, 99
                )
            )
            then = await clients.aexchange(client, server.url, b"{}", {}, 5.0, 99)
            return cut, then
        finally:
            await client.aclose()

    try:
        cut, (response, body) = _on_loop(go())
        assert clients.failure(cut) == "timeout"
        assert (response.status_code, body, server.accepted) == (200, b"ok", 1)
    finally:
        silent.close()
        server.close()


def test_a_larger_content_length_is_refused_before_its_body_is_read(fresh_clients):
    """Through an injected transport: the body's stream would fail if it were read at all."""

    class Unread(httpx.AsyncByteStream, httpx.SyncByteStream):
        def __iter__(self):
            raise AssertionError("the body was read")

        async def __aiter__(self):
            raise AssertionError("the body was read")
            yield b""

    def answer(request):
        return httpx.Response(200, headers={"Content-Length": str(2**31)}, stream=Unread())

    with clients.injected(httpx.MockTransport(answer)):
        refused = _exchange("http://provider.invalid/v1/systemone", limit=2**22)
        with pytest.raises(clients.AnswerTooLarge):
            clients.exchange("typesafe", "http://provider.invalid/", b"{}", {}, 5.0, 2**22)
    assert isinstance(refused, clients.AnswerTooLarge) and refused.limit == 2**22


# --- behind a forward proxy (HTTP_PROXY), and without -------------------------------------


class ForwardProxy:
    """An HTTP forward proxy on 127.0.0.1: takes a request for an absolute URL, sends it on to
    that server and relays the answer; records every URL it was asked for."""

    def __init__(self):
        self.seen: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                proxy.seen.append(self.path)
                target = urllib.parse.urlsplit(self.path)
                upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                hop = {"proxy-connection", "connection", "keep-alive", "host"}
                headers = {k: v for k, v in self.headers.items() if k.lower() not in hop}
                upstream.request("POST", target.path or "/", body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                upstream.close()
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in hop | {"content-length", "transfer-encoding", "date"}:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        standin.serve_in_background(self.server)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def forward_proxy(monkeypatch, fresh_clients):
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxy = ForwardProxy()
    yield proxy
    proxy.stop()


def test_a_batch_run_reaches_the_provider_through_the_proxy_http_proxy_names(
    provider, forward_proxy, monkeypatch
):
    version, writer = a_set(6)
    monkeypatch.setenv("HTTP_PROXY", forward_proxy.url)
    clients.forget()
    proxied = run(version, writer, concurrency=3)
    assert runs.run_counts(proxied)["answered"] == 6
    assert forward_proxy.seen == [f"{provider.url}/v1/systemone"] * 6  # each call, through it
    assert sum(provider.calls.values()) == 6
    state = version.question_set.sample_states.order_by("name").first()
    services.decision_ask(
        backend="typesafe", state=state.state, user=writer, document=version.document
    )
    assert len(forward_proxy.seen) == 7  # a single ask too
    # NO_PROXY naming the provider's host: straight to it
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    clients.forget()
    direct = run(version, writer, concurrency=3)
    assert runs.run_counts(direct)["answered"] == 6
    assert len(forward_proxy.seen) == 7 and sum(provider.calls.values()) == 13
    # and without any proxy variable, the same code and the same records
    monkeypatch.delenv("HTTP_PROXY")
    monkeypatch.delenv("NO_PROXY")
    clients.forget()
    plain = run(version, writer, concurrency=3)
    assert runs.run_counts(plain)["answered"] == 6
    assert len(forward_proxy.seen) == 7 and sum(provider.calls.values()) == 19
    recorded = {
        key: sorted(
            Decision.objects.filter(pk__in=done.items.values("decision_id")).values_list(
                "request_text", "response_text", "status"
            )
        )
        for key, done in (("proxied", proxied), ("direct", direct), ("plain", plain))
    }
    assert recorded["proxied"] == recorded["direct"] == recorded["plain"]


# --- recordings in bulk ---------------------------------------------------------------------

AWKWARD = 'tab\there, newline\nthere, back\\slash, "quotes", \\N, NUL-free ünïcode ✓ \r end'


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(st.dictionaries(st.text(), _JSON, max_size=5))
def test_an_object_of_encoded_answers_is_the_text_json_gives_the_object(members):
    """A call's answers are encoded once, for its answer rows and for its item's answers."""
    text = bulk.json_object({key: bulk.json_text(value) for key, value in members.items()})
    assert text == json.dumps(members) and type(text) is bulk.JSONText


def test_bulk_insert_keeps_every_value_as_the_orm_reads_it():
    version, writer = a_set(1)
    rows = [
        {
            "backend": "typesafe",
            "model_asked": "jev-latest",
            "model_answered": "jev-1",
            "request_text": AWKWARD * 50,
            "request_sha256": "a" * 64,
            "state_sha256": "b" * 64,
            "questions_sha256": "c" * 64,
            "response_text": spec.wire_json({"x": AWKWARD}).decode(),
            "status": 200,
            "provider_status_code": None,
            "detail": "",
            "provider_detail": "",
            "usage": {"input_tokens": 3, "nested": [1, None, "\\"]},
            "cost": 0.25,
            "provider_ms": None,
            "total_ms": 1.5,
            "request_id": f"r{i}",
            "calibrated": i % 2 == 0,
            "version_id": version.pk,
            "sample_state_id": None,
            "user_id": writer.pk,
        }
        for i in range(3)
    ]
    ids = bulk.insert(Decision, rows)
    assert len(ids) == 3 and ids == sorted(ids)
    for pk, row in zip(ids, rows, strict=True):
        stored = Decision.objects.get(pk=pk)
        assert {k: getattr(stored, k) for k in row} == row
        assert stored.created_at is not None  # auto_now_add
    answers = bulk.insert(
        DecisionAnswer,
        [
            {
                "decision_id": ids[0],
                "question_id": "desk",
                "question_sha256": "d" * 64,
                "state_sha256": "b" * 64,
                "model": "jev-latest",
                "answer": {"choice": AWKWARD, "probabilities": {"a": 0.5, "b": 0.5}},
            }
        ],
    )
    stored = DecisionAnswer.objects.get(pk=answers[0])
    assert stored.answer["choice"] == AWKWARD
    assert stored.model_answered == ""  # left out: its default
    # JSON already encoded is written as it is; any other text is a JSON string
    given = {"choice": AWKWARD, "probabilities": {"a": 0.5}}
    encoded, plain = bulk.insert(
        DecisionAnswer,
        [
            {"decision_id": ids[0], "question_id": "e", "question_sha256": "d" * 64,
             "state_sha256": "b" * 64, "model": "m", "answer": answer}
            for answer in (bulk.json_text(given), json.dumps(given))
        ],
    )  # fmt: skip
    assert DecisionAnswer.objects.get(pk=encoded).answer == given
    assert DecisionAnswer.objects.get(pk=plain).answer == json.dumps(given)
    assert bulk.insert(Decision, []) == []
    # without their ids: the database numbers them, and they are stored the same
    unnumbered = [{**row, "request_id": f"u{i}"} for i, row in enumerate(rows)]
    assert bulk.insert(Decision, unnumbered, ids=False) == []
    stored = Decision.objects.filter(request_id__startswith="u").order_by("pk")
    assert [{k: getattr(d, k) for k in row} for d in stored] == unnumbered
    assert min(d.pk for d in stored) > max(ids)


def test_bulk_insert_of_rows_that_give_different_fields_gives_each_its_own():
    version, writer = a_set(1)
    made = timezone.now() - timedelta(days=3)
    base = {
        "backend": "typesafe", "model_asked": "jev-latest", "request_text": "{}",
        "request_sha256": "a" * 64, "state_sha256": "b" * 64, "questions_sha256": "c" * 64,
        "status": 200, "total_ms": 1.0, "version_id": version.pk, "user_id": writer.pk,
    }  # fmt: skip
    rows = [
        {**base, "request_id": "given", "usage": {"n": 1}, "created_at": made},
        {**base, "request_id": "left out"},  # usage, created_at: its default, the time now
        {**base, "request_id": "none", "usage": None, "created_at": None},
    ]
    ids = bulk.insert(Decision, rows)
    given, left, none = (Decision.objects.get(pk=pk) for pk in ids)
    assert (given.usage, given.created_at) == ({"n": 1}, made)
    assert left.usage is None and left.model_answered == "" and left.created_at > made
    assert none.usage is None and none.created_at == left.created_at  # None: the time now
    # the same rows, each inserted alone, are stored the same
    alone = [Decision.objects.get(pk=bulk.insert(Decision, [row])[0]) for row in rows]
    assert [(d.usage, d.request_id, d.model_answered) for d in alone] == [
        (d.usage, d.request_id, d.model_answered) for d in (given, left, none)
    ]
    assert alone[0].created_at == made and alone[1].created_at > made


def test_bulk_update_of_one_field_or_none_to_take_as_it_is(provider):
    from questions.models import BatchItem

    version, writer = a_set(2)
    created = services.batch_create(
        version=version, backend="typesafe", user=writer, concurrency=1, enqueue=False
    )
    first, second = created.items.order_by("pk")
    bulk.update(BatchItem, ["status"], [{"id": first.pk, "status": "failed"}])
    bulk.update(BatchItem, ["answers"], [{"id": second.pk, "answers": {"a": [AWKWARD]}}])
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, first.answers) == ("failed", None)
    assert (second.status, second.answers) == ("pending", {"a": [AWKWARD]})


def test_bulk_update_keeps_every_value_as_the_orm_reads_it(provider):
    from questions.models import BatchItem

    version, writer = a_set(2)
    created = services.batch_create(
        version=version, backend="typesafe", user=writer, concurrency=1, enqueue=False
    )
    first, second = created.items.order_by("pk")
    answers = {"desk": {"choice": AWKWARD, "probabilities": {"a": 0.5, "b": 0.5}}, "n": [1.5, None]}
    bulk.update(
        BatchItem,
        ["status", "answers", "error_detail", "misses"],
        [
            {"id": first.pk, "status": "answered", "answers": answers, "error_detail": AWKWARD,
             "misses": 2},
            {"id": second.pk, "status": "failed", "answers": None, "error_detail": "",
             "misses": None},
        ],
    )  # fmt: skip
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, first.answers, first.error_detail, first.misses) == (
        "answered", answers, AWKWARD, 2,
    )  # fmt: skip
    assert (second.status, second.answers, second.misses) == ("failed", None, None)
    assert BatchItem.objects.filter(pk=second.pk, answers__isnull=True).exists()  # SQL NULL


def test_a_batch_records_what_a_single_ask_records(provider):
    version, writer = a_set(2)
    state = version.question_set.sample_states.order_by("name").first()
    services.decision_ask(
        backend="typesafe",
        state=state.state,
        user=writer,
        document=version.document,
        version=version,
    )
    done = run(version, writer, concurrency=2)
    recorded = done.items.values_list("decision_id", flat=True)
    single = Decision.objects.exclude(pk__in=recorded).get()
    batched = Decision.objects.get(pk__in=recorded, state_sha256=single.state_sha256)
    skip = {"id", "created_at", "provider_ms", "total_ms", "sample_state", "request_id"}
    fields = [f.attname for f in Decision._meta.concrete_fields if f.name not in skip]
    assert {f: getattr(batched, f) for f in fields} == {f: getattr(single, f) for f in fields}
    keyed = sorted(
        (a.question_id, a.question_sha256, a.state_sha256, a.model, a.answer)
        for a in batched.answers.all()
    )
    assert keyed == sorted(
        (a.question_id, a.question_sha256, a.state_sha256, a.model, a.answer)
        for a in single.answers.all()
    )


def test_one_loop_serves_the_runs_of_a_process_and_one_that_stopped_is_replaced(provider):
    version, writer = a_set(2)
    run(version, writer, concurrency=2)
    first = batches._Loop.shared()
    run(version, writer, concurrency=2)
    assert batches._Loop.shared() is first
    first.loop.call_soon_threadsafe(first.loop.stop)
    first.thread.join(5)
    assert runs.run_counts(run(version, writer, concurrency=2))["answered"] == 2
    assert batches._Loop.shared() is not first


def test_what_came_back_is_written_when_the_run_stops_on_an_error():
    """A tick (or a claim, or a write) that raises stops the run; the calls in flight end, and
    every outcome that came back — answered or released unasked — is still handed to `write`."""
    import asyncio

    items, written = list(range(6)), []
    first_back, release = threading.Event(), threading.Event()

    def claim(n):
        taken = items[:n]
        del items[:n]
        return taken

    async def ask(item, slot):
        if item == 5:  # still in flight when the run stops
            while not release.is_set():
                await asyncio.sleep(0.01)
        first_back.set()
        return SimpleNamespace(error=None, item=item)

    def tick():
        if first_back.is_set():
            release.set()
            raise RuntimeError("the database went away")
        return False

    with pytest.raises(RuntimeError, match="went away"):
        batches.run_pipeline(
            claim=claim,
            ask=ask,
            write=lambda batch: written.extend(batch),
            tick=tick,
            concurrency=2,
            max_attempts=1,
        )
    assert sorted(d.item for d in written) == list(range(6))  # none lost, none twice
    assert any(d.item == 5 and d.tried for d in written)  # the call in flight, answered


def test_the_writing_thread_is_woken_when_what_it_waits_for_has_come_back():
    # not by each outcome (a hand-over of the GIL for every state): by the count it waits for
    results = batches._Results()
    assert results.take(0, 3, math.inf) == []  # waits for three from now on
    results.put(batches.Done(1))
    results.put(batches.Done(2))
    assert not results.ready.is_set()
    results.put(batches.Done(3))
    assert results.ready.is_set()
    assert [d.item for d in results.take(30, 3, 2)] == [1, 2]  # at once; `most` at a time
    assert [d.item for d in results.take(0, 1, math.inf)] == [3]


def test_a_run_claims_in_chunks_and_writes_in_batches_however_fast_the_calls_come_back():
    items, claims, writes = list(range(300)), [], []

    def claim(n):
        claims.append(n)
        taken = items[:n]
        del items[:n]
        return taken

    async def ask(item, slot):
        return SimpleNamespace(error=None, item=item)

    batches.run_pipeline(
        claim=claim,
        ask=ask,
        write=lambda batch: writes.append([d.item for d in batch]),
        tick=lambda: False,
        concurrency=32,
        max_attempts=1,
    )
    assert sorted(i for batch in writes for i in batch) == list(range(300))
    assert min(claims) >= batches.CLAIM_AHEAD // 2  # never a claim per state
    assert all(len(batch) <= batches.WRITE_BATCH for batch in writes)
