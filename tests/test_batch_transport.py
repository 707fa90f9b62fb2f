"""The batch engine's calls: one loop per process, its connections kept from run to run, its
transport (HTTP/1.1 on an asyncio protocol, `questions.engine.backends.streams`) — the same bytes
and headers a client sends, an answer read as h11 reads it, the same errors when the network
or the server fails, kept alive as httpcore keeps a connection — and the recordings written in bulk
(`questions.services.bulk`), on SQLite and PostgreSQL alike."""

from __future__ import annotations

import json
import math
import socket
import ssl
import threading
from datetime import timedelta
from types import SimpleNamespace

import httpx
import pytest
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st

from questions import services
from questions.core import spec
from questions.engine import batches
from questions.engine.backends import streams
from questions.models import Decision, DecisionAnswer
from questions.selectors import runs
from questions.services import batches as batch_services
from questions.services import bulk
from tests import factories
from tests.providers import DOC, FlakyProvider, Receiver, certificate

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def provider(settings):
    p = FlakyProvider()
    settings.TYPESAFE_API_KEY = "k-batch-test"
    settings.TYPESAFE_BASE_URL = p.url
    settings.DECISIONS_BATCH_BACKOFF_SECONDS = 0.01
    settings.DECISIONS_BATCH_BACKOFF_CAP_SECONDS = 0.05
    p.accepted, p.sockets = 0, []
    accept = p.server.get_request

    def counted():
        connection = accept()
        p.accepted += 1
        p.sockets.append(connection[0])
        return connection

    p.server.get_request = counted
    yield p
    p.close()


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
    monkeypatch.setattr(batch_services._Clients, "most", 3)
    batches._Loop.shared().run(_forget_kept())  # what earlier tests' runs left
    version, writer = a_set(10)
    assert runs.run_counts(run(version, writer, concurrency=5))["answered"] == 10
    kept = batches._Loop.shared().run(_idle())
    assert kept == 3


async def _idle() -> int:
    return len(batch_services._clients().idle)


async def _forget_kept() -> None:
    kept = batch_services._clients()
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
    """The engine's call goes straight through the transport, yet reads as a client's call."""
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


# --- the transport, by itself ---------------------------------------------------------------


def _posts(transport, url: str, n: int, timeout: float = 5.0) -> list:
    """`n` POSTs in turn through one transport: each response (read) or the error it raised."""

    async def go():
        results = []
        try:
            for _ in range(n):
                request = httpx.Request(
                    "POST", url, content=b"{}",
                    extensions={"timeout": httpx.Timeout(timeout).as_dict()},
                )  # fmt: skip
                try:
                    response = await transport.handle_async_request(request)
                    await response.aread()
                    await response.aclose()
                    results.append(response)
                except httpx.HTTPError as exc:
                    results.append(exc)
        finally:
            await transport.aclose()
        return results

    return batches._Loop.shared().run(go())  # the engine's loop (a test may hold this thread's)


def _post(transport: httpx.AsyncBaseTransport, url: str, timeout: float = 5.0) -> httpx.Response:
    """One POST through the transport: its response, or the httpx error it raised."""
    [result] = _posts(transport, url, 1, timeout)
    if isinstance(result, Exception):
        raise result
    return result


def test_the_transport_speaks_tls_and_checks_the_certificate(tmp_path):
    cert, key = certificate(tmp_path, "localhost")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    receiver = Receiver(tls=server)
    url = f"https://localhost:{receiver.port}/hooks"
    try:
        trusting = ssl.create_default_context(cafile=cert)
        assert _post(streams.Transport(verify=trusting), url).status_code == 200
        assert receiver.server_names[-1] == "localhost"  # the name went out (SNI)
        with pytest.raises(httpx.ConnectError):  # a certificate nobody vouched for
            _post(streams.Transport(verify=ssl.create_default_context()), url)
    finally:
        receiver.stop()


def test_the_transport_raises_httpx_errors_when_the_network_fails():
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    tls = ssl.create_default_context()
    with pytest.raises(httpx.ConnectError):
        _post(streams.Transport(verify=tls), f"http://127.0.0.1:{port}/")
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    held = []
    threading.Thread(target=lambda: held.append(silent.accept()), daemon=True).start()
    try:
        with pytest.raises(httpx.ReadTimeout):
            _post(
                streams.Transport(verify=tls), f"http://127.0.0.1:{silent.getsockname()[1]}/", 0.3
            )
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


def test_the_transport_keeps_its_connection_alive_between_calls():
    server = Scripted([OK, OK, OK])
    try:
        results = _posts(streams.Transport(verify=ssl.create_default_context()),
                         f"http://127.0.0.1:{server.port}/", 3)  # fmt: skip
        assert [r.content for r in results] == [b"ok"] * 3
        assert server.accepted == 1
    finally:
        server.close()


def test_the_transport_opens_a_new_connection_when_the_server_closes_or_it_idled(monkeypatch):
    closing = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    server = Scripted([closing, OK, OK])
    try:
        url = f"http://127.0.0.1:{server.port}/"
        results = _posts(streams.Transport(verify=ssl.create_default_context()), url, 2)
        assert [r.status_code for r in results] == [200, 200]
        assert server.accepted == 2  # the server asked to close the first
        monkeypatch.setattr(streams, "KEEPALIVE_SECONDS", 0.0)  # every connection too old
        again = Scripted([OK, OK])
        try:
            url = f"http://127.0.0.1:{again.port}/"
            results = _posts(streams.Transport(verify=ssl.create_default_context()), url, 2)
            assert [r.status_code for r in results] == [200, 200]
            assert again.accepted == 2
        finally:
            again.close()
    finally:
        server.close()


def test_the_transport_reads_chunked_and_compressed_answers_as_httpx_does():
    import gzip

    packed = gzip.compress(b'{"answers": {}}')
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
    server = Scripted([chunked, zipped, informational])
    try:
        first, second, third = _posts(
            streams.Transport(verify=ssl.create_default_context()),
            f"http://127.0.0.1:{server.port}/", 3,
        )  # fmt: skip
        assert first.content == b"hello world" and first.headers["x-request-id"] == "r-1"
        assert second.status_code == 429 and second.content == b'{"answers": {}}'
        assert third.status_code == 200 and third.content == b"ok"
        assert first.http_version == "HTTP/1.1" and first.reason_phrase == "OK"
        assert server.accepted == 1
    finally:
        server.close()


def test_the_transport_raises_httpx_errors_when_the_server_misbehaves():
    half = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"
    server = Scripted([None, b"NOT HTTP AT ALL\r\n\r\n", (half,), OK])
    try:
        results = _posts(streams.Transport(verify=ssl.create_default_context()),
                         f"http://127.0.0.1:{server.port}/", 4)  # fmt: skip
        hung_up, garbled, cut, fine = results
        assert isinstance(hung_up, httpx.RemoteProtocolError)  # no answer at all
        assert isinstance(garbled, httpx.RemoteProtocolError)
        assert isinstance(cut, httpx.RemoteProtocolError)  # hung up mid-body
        assert fine.status_code == 200
        assert server.accepted == 4  # each failure closed its connection
    finally:
        server.close()
    with pytest.raises(httpx.UnsupportedProtocol):
        _post(streams.Transport(verify=ssl.create_default_context()), "ftp://127.0.0.1/")


def test_a_cancelled_call_closes_its_connection():
    import asyncio

    server = Scripted([OK])
    silent = socket.create_server(("127.0.0.1", 0))
    held = []
    threading.Thread(target=lambda: held.append(silent.accept()), daemon=True).start()
    transport = streams.Transport(verify=ssl.create_default_context())

    async def go():
        request = httpx.Request("POST", f"http://127.0.0.1:{silent.getsockname()[1]}/",
                                content=b"{}")  # fmt: skip
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):  # the wire's deadline, as `Wire.acall` sets it
                await transport.handle_async_request(request)
        assert transport._connection is None
        response = await transport.handle_async_request(
            httpx.Request("POST", f"http://127.0.0.1:{server.port}/", content=b"{}")
        )
        await transport.aclose()
        return response

    try:
        response = batches._Loop.shared().run(go())
        assert response.status_code == 200 and server.accepted == 1
    finally:
        silent.close()
        server.close()


# what a server may answer, for the transport and h11 to read alike
_REASONS = st.sampled_from([b" OK", b" Too Many Requests", b"", b" ", b" d\xe9j\xe0 vu", b" a\tb"])
_NAMES = st.sampled_from([b"X-Request-Id", b"Retry-After", b"Content-Type", b"x-y"] * 3 + [b"A B"])
_VALUES = st.sampled_from([b"r-1", b"  spaced  ", b"", b"a, b", b"\xff\xfe"] * 2 + [b"ctl\x00"])


@st.composite
def _answers(draw) -> bytes:
    """An HTTP/1.x answer, mostly well formed: its status line, headers (folded lines, odd
    values, Connection, repeated or conflicting Content-Length, Transfer-Encoding) and a body
    framed by length, by chunks (extensions, a trailer) or by the server's close."""
    version = draw(st.sampled_from([b"1.1"] * 6 + [b"1.0"] * 2 + [b"2"]))
    status = draw(st.sampled_from([200, 200, 204, 304, 404, 429, 500, 503]))
    head = [b"HTTP/" + version + b" %d" % status + draw(_REASONS)]
    if draw(st.booleans()) and draw(st.booleans()):
        head = [b"HTTP/1.1 100 Continue", b"", *head]  # an informational answer first
    for name, value in draw(st.lists(st.tuples(_NAMES, _VALUES), max_size=3)):
        head.append(name + b":" + draw(st.sampled_from([b" ", b"", b"\t"])) + value)
        if draw(st.integers(0, 9)) == 0:
            head.append(b" folded on")
    if draw(st.booleans()):
        head.append(b"Connection: " + draw(st.sampled_from([b"close", b"keep-alive", b"Close, x"])))
    body = draw(st.binary(max_size=40))
    framing = draw(st.sampled_from(["length"] * 3 + ["chunked"] * 2 + ["close", "odd"]))
    if framing == "length":
        head.append(b"Content-Length: %d" % (len(body) + draw(st.sampled_from([0, 0, 0, -1, 2]))))
        content = body
    elif framing == "chunked":
        head.append(b"Transfer-Encoding: " + draw(st.sampled_from([b"chunked", b"Chunked"])))
        cut = draw(st.integers(0, len(body)))
        content = (
            b"".join(
                b"%x" % len(part)
                + draw(st.sampled_from([b"", b";ext=1", b" "]))
                + b"\r\n"
                + part
                + b"\r\n"
                for part in (body[:cut], body[cut:])
                if part
            )
            + b"0\r\n"
            + draw(st.sampled_from([b"", b"Trailer: t\r\n"]))
            + b"\r\n"
        )
    elif framing == "odd":
        head.append(draw(st.sampled_from([
            b"Content-Length: 3, 3", b"Content-Length: 3, 4", b"Content-Length: -3",
            b"Transfer-Encoding: gzip", b"Content-Length: 0x3",
        ])))  # fmt: skip
        content = body[:3]
    else:
        content = body
    if draw(st.integers(0, 14)) == 0:  # a byte lost or garbled anywhere
        answer = b"\r\n".join(head) + b"\r\n\r\n" + content
        at = draw(st.integers(0, len(answer) - 1))
        return answer[:at] + draw(st.sampled_from([b"", b"\n", b"\x00", b":"])) + answer[at + 1 :]
    newline = b"\n" if draw(st.integers(0, 9)) == 0 else b"\r\n"
    return newline.join(head) + newline + newline + content


def _h11_reads(pieces: list[bytes], closed: bool):
    """What h11 makes of an answer arriving in `pieces` (then the server's close, if
    `closed`): (status, version, reason, headers, body, whether the next request may go on
    the connection), "error" or "incomplete"."""
    import h11

    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method="POST", target="/", headers=[("Host", "h")]))
    connection.send(h11.EndOfMessage())
    feed, head, body = [*pieces, *([b""] if closed else [])], None, []
    try:
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                if not feed:
                    return "incomplete"
                connection.receive_data(feed.pop(0))
            elif isinstance(event, h11.Response):
                head = event
            elif isinstance(event, h11.Data):
                body.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                done = connection.their_state is h11.DONE and connection.our_state is h11.DONE
                kept = done and not closed  # a closed connection is not used again
                return (head.status_code, head.http_version, head.reason,
                        list(head.headers.raw_items()), b"".join(body), kept)  # fmt: skip
            elif isinstance(event, h11.ConnectionClosed):
                return "error"
    except h11.ProtocolError:
        return "error"


def _transport_reads(pieces: list[bytes], closed: bool):
    """What the transport's connection makes of the same, in `_h11_reads`'s terms."""
    import asyncio

    class Socket:
        def write(self, data):
            pass

        def close(self):
            pass

    async def go():
        connection = streams._Connection((b"http", b"h", 80))
        connection.connection_made(Socket())
        exchange = asyncio.ensure_future(connection.exchange(b"POST / HTTP/1.1\r\n\r\n", 5, 5))
        for piece in pieces:
            await asyncio.sleep(0)
            connection.data_received(piece)
        if closed:
            await asyncio.sleep(0)
            connection.eof_received()
        for _ in range(10):
            await asyncio.sleep(0)
        if not exchange.done():
            exchange.cancel()
            return "incomplete"
        if exchange.exception() is not None:
            assert isinstance(exchange.exception(), httpx.RemoteProtocolError)
            return "error"
        return (*exchange.result(), connection.kept and not connection.ended)

    return batches._Loop.shared().run(go())  # the engine's loop (a test may hold this thread's)


@settings(max_examples=400)
@given(_answers(), st.data())
def test_the_transport_reads_an_answer_as_h11_does_however_it_arrives(answer, data):
    """Status, version, reason, headers (a repeated Content-Length given once), body and
    whether the connection may be kept; an answer h11 refuses is refused, one it waits for is
    waited for, cut into pieces anywhere, with or without the server's close after it."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(answer)), max_size=4)))
    pieces = [answer[a:b] for a, b in zip([0, *cuts], [*cuts, len(answer)], strict=True)]
    pieces = [piece for piece in pieces if piece]  # to h11, no data is the server's close
    closed = data.draw(st.booleans())
    assert _transport_reads(pieces, closed) == _h11_reads(pieces, closed)


def test_the_transport_refuses_a_head_h11_would_find_too_large():
    huge = b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (streams.HEAD_LIMIT + 10)
    assert _transport_reads([huge], closed=False) == _h11_reads([huge], closed=False) == "error"


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
