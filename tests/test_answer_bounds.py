"""A provider's answer is bounded and read for what it is: the security review's modes (T1: an
answer without end, or one that decodes to far more than it sends; T2: an answer that is not
HTTP) against a loopback provider, one state of a run attacked. The attacked state fails with
its own clear error, the bytes read and stored stay bounded, and the run's other states are
answered, each asked once."""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from collections.abc import Iterator

import httpx
import pytest

from questions import roles, services
from questions.dev import standin
from questions.engine import batches
from questions.engine.backends import base, clients
from questions.models import Decision
from questions.selectors import runs
from questions.services.decisions import RESPONSE_TEXT_KEPT
from tests import factories
from tests.providers import DOC, RESET, FlakyProvider

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 256 * 1024  # DECISIONS__ANSWER_MAX_BYTES in these tests
ATTACKED = {"n": 3}
JSON_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


def answer_to(body) -> bytes:
    return json.dumps(standin.respond(body)[1]).encode()


def endless(piece: bytes) -> Iterator[bytes]:
    while True:
        yield piece


def chunked_without_end(body):
    yield JSON_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    yield from endless(b"10000\r\n" + b" " * 0x10000 + b"\r\n")


def close_delimited_without_end(body):
    yield JSON_HEAD + b"Connection: close\r\n\r\n" + answer_to(body)
    yield from endless(b" " * 65536)


def two_gib_announced(body):
    yield JSON_HEAD + f"Content-Length: {2**31}\r\n\r\n".encode() + answer_to(body)
    yield from endless(b" " * 65536)


def one_endless_chunk(body):
    yield JSON_HEAD + b"Transfer-Encoding: chunked\r\n\r\n1000000000000000\r\n" + answer_to(body)
    yield from endless(b" " * 65536)


def _bomb(body, packer, encoding: bytes):
    """A valid answer and 32 MiB of spaces, packed: a few tens of KB sent."""
    packed = packer(answer_to(body) + b" " * (32 * 2**20))
    assert len(packed) < LIMIT  # its Content-Length passes: what it decodes to does not
    yield (
        JSON_HEAD + b"Content-Encoding: " + encoding + b"\r\n"
        + f"Content-Length: {len(packed)}\r\n\r\n".encode() + packed
    )  # fmt: skip


def gzip_bomb(body):
    yield from _bomb(body, gzip.compress, b"gzip")


def deflate_bomb(body):
    yield from _bomb(body, zlib.compress, b"deflate")


T1 = [
    chunked_without_end,
    close_delimited_without_end,
    two_gib_announced,
    one_endless_chunk,
    gzip_bomb,
    deflate_bomb,
]


def _head(*lines: bytes, body: bytes = b"{}") -> bytes:
    fields = b"".join(line + b"\r\n" for line in lines)
    return b"HTTP/1.1 200 OK\r\n" + fields + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


#: T2's modes: what comes back is not HTTP
NOT_HTTP = {
    "a header 1 MiB long": lambda body: [_head(b"X-Big: " + b"a" * 2**20)],
    "100,000 header lines": lambda body: [_head(*[b"X-A: b"] * 100_000)],
    "a bare CR in a header value": lambda body: [_head(b"X-A: a\rb")],
    "two different Content-Lengths": lambda body: [_head(b"Content-Length: 3")],
    "Transfer-Encoding: gzip, chunked": lambda body: [
        JSON_HEAD + b"Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    ],
    "a chunk header that is not hex": lambda body: [
        JSON_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"
    ],
    "a status line that is not one": lambda body: [b"HTTP/1.1 OK\r\n\r\n"],
}


class Counting(httpx.AsyncBaseTransport):
    """httpx's own transport, counting the bytes it reads of each answer (as they come, before
    any decoding), by the state asked about."""

    def __init__(self):
        self.inner = httpx.AsyncHTTPTransport()
        self.read: dict[str, int] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        key = json.dumps(json.loads(request.content)["state"], sort_keys=True)
        counts, stream = self.read, response.stream

        class Counted(httpx.AsyncByteStream):
            async def __aiter__(self):
                async for chunk in stream:
                    counts[key] = counts.get(key, 0) + len(chunk)
                    yield chunk

            async def aclose(self):
                await stream.aclose()

        response.stream = Counted()
        return response

    async def aclose(self) -> None:
        pass  # shared by every slot; closed by the test


@pytest.fixture
def counting():
    transport = Counting()
    with clients.injected(transport):
        yield transport
    batches._Loop.shared().run(transport.inner.aclose())


def attacked_run(settings, raw, *, max_attempts: int = 2, states: int = 8):
    """A run of `states` states, concurrency 4, against a provider whose answer to ATTACKED is
    `raw(body)`: (the run, the provider)."""
    provider = FlakyProvider(raw=lambda body, n: raw(body) if body["state"] == ATTACKED else None)
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k-bounds-test", provider.url
    settings.DECISIONS_ANSWER_MAX_BYTES = LIMIT
    settings.DECISIONS_BATCH_BACKOFF_SECONDS = 0.01
    writer = factories.author()
    qs = factories.question_set(owner=writer, doc=DOC)
    for i in range(states):
        services.sample_state_create(
            question_set=qs, name=f"s{i}", state={"n": i}, author=writer, expected={}
        )
    created = services.batch_create(
        version=services.open_draft(qs),
        backend="typesafe",
        user=writer,
        concurrency=4,
        max_attempts=max_attempts,
        enqueue=False,
    )
    try:
        return services.batch_execute(created.pk), provider
    finally:
        provider.close()


def attacked_item(run):
    [item] = [
        i for i in run.items.select_related("sample_state") if i.sample_state.state == ATTACKED
    ]
    return item


def _the_others_answered_once(run, provider, states: int = 8) -> None:
    assert runs.run_counts(run)["answered"] == states - 1
    others = {k: n for k, n in provider.calls.items() if k != json.dumps(ATTACKED)}
    assert len(others) == states - 1 and set(others.values()) == {1}


@pytest.mark.parametrize("raw", T1, ids=lambda mode: mode.__name__)
def test_an_answer_over_the_limit_is_refused_as_it_arrives(settings, counting, raw):
    run, provider = attacked_run(settings, raw)
    item = attacked_item(run)
    assert (item.status, item.error_status, item.attempts) == ("failed", 502, 1)  # not again
    assert item.error_detail.startswith("The provider's answer is larger than the console reads.")
    assert f"{LIMIT:,} bytes (DECISIONS__ANSWER_MAX_BYTES)" in item.error_detail
    assert provider.calls[json.dumps(ATTACKED)] == 1
    # read: at most the limit and the network's last read past it; stored: nothing of it
    assert counting.read.get(json.dumps(ATTACKED), 0) <= LIMIT + 2 * 65536
    decision = Decision.objects.get(pk=item.decision_id)
    assert (decision.status, decision.response_text) == (502, "")
    _the_others_answered_once(run, provider)


@pytest.mark.parametrize("raw", NOT_HTTP.values(), ids=NOT_HTTP.keys())
def test_an_answer_that_is_not_http_has_its_own_error_and_is_asked_once_more(
    settings, counting, raw
):
    run, provider = attacked_run(settings, raw, max_attempts=4)
    item = attacked_item(run)
    assert (item.status, item.error_status) == ("failed", 502)
    assert item.error_detail == "The provider's answer is not valid HTTP."
    assert item.attempts == provider.calls[json.dumps(ATTACKED)] == 2  # of the run's 4
    assert counting.read.get(json.dumps(ATTACKED), 0) == 0  # no body was taken as one
    _the_others_answered_once(run, provider)


def test_an_answer_that_breaks_off_is_not_taken_for_an_unreachable_provider(settings, counting):
    def reset_mid_body(body):
        yield JSON_HEAD + b"Content-Length: 1000\r\n\r\n" + answer_to(body)[:20]
        yield RESET

    run, provider = attacked_run(settings, reset_mid_body, max_attempts=3)
    item = attacked_item(run)
    assert (item.status, item.error_status) == ("failed", 502)
    assert item.error_detail == "The provider's answer broke off before its end."
    assert item.attempts == provider.calls[json.dumps(ATTACKED)] == 3  # the network's: retried
    _the_others_answered_once(run, provider)


def test_a_single_ask_is_bounded_the_same(settings):
    provider = FlakyProvider(raw=lambda body, n: chunked_without_end(body))
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k-bounds-test", provider.url
    settings.DECISIONS_ANSWER_MAX_BYTES = LIMIT
    try:
        outcome = services.decision_ask(
            backend="typesafe", document=DOC, state=ATTACKED, user=roles.OPERATOR
        )
        assert (outcome.status, outcome.error.provider_status_code) == (502, 200)
        assert outcome.error.detail.startswith("The provider's answer is larger than")
        provider.raw = lambda body, n: gzip_bomb(body)
        outcome = services.decision_ask(
            backend="typesafe", document=DOC, state=ATTACKED, user=roles.OPERATOR
        )
        assert outcome.error.detail.startswith("The provider's answer is larger than")
        provider.raw = lambda body, n: NOT_HTTP["a bare CR in a header value"](body)
        outcome = services.decision_ask(
            backend="typesafe", document=DOC, state=ATTACKED, user=roles.OPERATOR
        )
        assert (outcome.status, outcome.error.detail) == (
            502,
            "The provider's answer is not valid HTTP.",
        )
    finally:
        provider.close()
    assert set(Decision.objects.values_list("response_text", flat=True)) == {""}


def test_a_long_answer_is_stored_cut_and_checked_off_the_engines_loop(settings, monkeypatch):
    """An answer under the limit but over what a decision keeps (a provider adding 200 KB of
    notes): answered, its answers kept whole, its raw text cut and marked; parsed and scrubbed
    on a thread, so the loop's other calls do not wait for it."""
    notes = "n" * 200_000

    def with_notes(state, text):
        return json.dumps({**json.loads(text), "notes": notes}) if state == ATTACKED else text

    where: dict[str, bool] = {}
    read = base.Wire._read

    def noted(self, outcome, response, raw, ask, started):
        key = json.dumps(ask.state, sort_keys=True)
        where[key] = threading.current_thread() is batches._Loop.shared().thread
        return read(self, outcome, response, raw, ask, started)

    monkeypatch.setattr(base.Wire, "_read", noted)
    provider = FlakyProvider(answer=with_notes)
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k-bounds-test", provider.url
    writer = factories.author()
    qs = factories.question_set(owner=writer, doc=DOC)
    for i in range(4):
        services.sample_state_create(question_set=qs, name=f"s{i}", state={"n": i}, author=writer)
    created = services.batch_create(
        version=services.open_draft(qs), backend="typesafe", user=writer, enqueue=False
    )
    try:
        run = services.batch_execute(created.pk)
    finally:
        provider.close()
    assert runs.run_counts(run)["answered"] == 4
    item = attacked_item(run)
    stored = Decision.objects.get(pk=item.decision_id).response_text
    marker = f"\n[cut: the first {RESPONSE_TEXT_KEPT:,} of "
    assert len(stored) < RESPONSE_TEXT_KEPT + 100
    assert stored[RESPONSE_TEXT_KEPT:].startswith(marker) and stored.endswith(
        " characters are kept]"
    )
    assert set(item.answers) == set(DOC)
    assert where == {
        json.dumps(ATTACKED): False,  # on a thread
        **{json.dumps({"n": i}): True for i in (0, 1, 2)},  # short ones on the loop
    }
