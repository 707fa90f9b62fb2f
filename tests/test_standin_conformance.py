"""The stand-in answers like the provider it imitates: the jevcompat conformance suite run
against it, and the parts of the wire that suite does not reach (zstd bodies from the official
SDK, the body size cap, the key on both wires, the legend of structured levels)."""

from __future__ import annotations

import json
import socket

import httpx
import httpx2
import pytest
import zstandard
from django.conf import settings as django_settings
from hypothesis import given, settings
from hypothesis import strategies as st
from jevcompat import runner
from jevcompat import validate as reference
from typesafe_sdk import TypeSafeClient
from typesafe_sdk._core import compression as sdk_compression
from typesafe_sdk._core.retry import RetryPolicy

from questions import services
from questions.core import spec
from questions.dev import standin
from questions.engine.backends import llm
from tests import factories
from tests.providers import DOC

STATE = {"ticket": "Charged twice for March; the refund never came.", "tier": "pro"}


@pytest.fixture
def served():
    server = standin.serve_in_thread()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _big_questions(options: int = 40) -> dict:
    """A request body well over the SDK's 1 KiB compression threshold."""
    return {
        "queue": {
            "type": "choice",
            "instructions": "Which queue should this ticket go to?",
            "criteria": {f"Queue {i:03d}": f"Tickets routed to queue {i}" for i in range(options)},
        },
        "anger": {"type": "score", "criteria": ["calm", "annoyed", "furious"]},
    }


def _post(url: str, content: bytes, **headers: str) -> httpx.Response:
    return httpx.post(
        url,
        content=content,
        headers={"Authorization": f"Bearer {standin.KEY}", **headers},
        timeout=30,
    )


# --- the conformance suite ------------------------------------------------------------------------


def test_jevcompat_finds_no_must_and_no_should_failure(served):
    """jevcompat's 48 requirements, its own cases and its own official-SDK call, in process."""
    report = runner.run(served, key=standin.KEY, timeout=120)
    assert report.aborted is None, report.aborted
    assert not report.case_errors and not report.inconclusive, (
        report.case_errors,
        report.inconclusive,
    )
    failed = {
        level: [
            f"{r.id}: {r.findings[0].message}"
            for r in report.results
            if r.level == level and r.status == "fail"
        ]
        for level in ("MUST", "SHOULD")
    }
    assert not failed["MUST"] and not failed["SHOULD"], failed
    # every MUST that applies was exercised: a pass is not the absence of a test
    assert not report.untested_musts, report.untested_musts


# --- GET /v1/models and the key -------------------------------------------------------------------


def test_the_official_client_lists_the_stand_ins_model(served):
    with TypeSafeClient(api_key=standin.KEY, base_url=served, compression=False) as client:
        listed = client.models.list()
    assert [m.name for m in listed.models] == [standin.MODEL]


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-key", f"Basic {standin.KEY}", "Bearer", f"Bearer {standin.KEY}x"],
)
@pytest.mark.parametrize(
    ("method", "path", "error_of"),
    [
        ("POST", "/v1/systemone", lambda body: body["detail"]["error_type"]),
        ("GET", "/v1/models", lambda body: body["detail"]["error_type"]),
        ("POST", "/v1/chat/completions", lambda body: body["error"]["type"]),
    ],
)
def test_a_missing_or_wrong_key_gets_401_authentication_error(
    served, method, path, error_of, authorization
):
    headers = {"Authorization": authorization} if authorization else {}
    body = b"{}" if method == "POST" else None
    response = httpx.request(method, served + path, content=body, headers=headers, timeout=30)
    assert response.status_code == 401
    assert error_of(response.json()) == "authentication_error"
    assert standin.KEY not in response.text


@pytest.mark.django_db
@pytest.mark.parametrize("backend", ["typesafe", "llm"])
def test_the_console_reports_a_key_the_stand_in_rejects(served, settings, backend):
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "not-the-key", served
    settings.LLM_API_KEY, settings.LLM_BASE_URL = "not-the-key", f"{served}/v1"
    outcome = services.decision_ask(
        backend=backend, state=STATE, user=factories.author(), document=DOC
    )
    assert outcome.provider_status_code == 401 and outcome.error.status == 502
    assert "rejected the key" in outcome.error.detail
    assert "not-the-key" not in outcome.error.detail


def test_other_methods_and_paths_get_the_frameworks_json(served):
    wrong_method = httpx.get(f"{served}/v1/systemone", timeout=30)
    assert wrong_method.status_code == 405 and wrong_method.json() == {
        "detail": "Method Not Allowed"
    }
    nowhere = httpx.get(f"{served}/v1/nothing", timeout=30)
    assert nowhere.status_code == 404 and nowhere.json() == {"detail": "Not Found"}


# --- validation errors ----------------------------------------------------------------------------


def test_a_body_that_is_not_json_gets_a_validation_error(served):
    response = _post(f"{served}/v1/systemone", b'{"state": "x", "questions": {')
    assert response.status_code == 422
    (item,) = response.json()["detail"]
    assert item["loc"][0] == "body" and item["type"] == "json_invalid"


def test_every_missing_field_is_named():
    status, body = standin.respond({"model": "m"})
    assert status == 422
    assert [d["loc"] for d in body["detail"]] == [["body", "state"], ["body", "questions"]]
    status, body = standin.respond([1, 2])
    assert status == 422 and body["detail"][0]["loc"] == ["body"]


# --- confidence and legend ------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    options=st.integers(min_value=2, max_value=255),
    levels=st.integers(min_value=2, max_value=10),
    state=st.text(max_size=40),
)
def test_confidence_is_the_documented_formula(options, levels, state):
    """(p_max − 1/n) / (1 − 1/n) of the answer's own probabilities, two decimals; jevcompat's
    reference implementation is the oracle."""
    questions = {
        "c": {"type": "choice", "criteria": {f"o{i}": None for i in range(options)}},
        "s": {"type": "score", "criteria": [f"level {i}" for i in range(levels)]},
    }
    status, body = standin.respond({"state": state, "questions": questions})
    assert status == 200
    for answer in body["answers"].values():
        p = list(answer["probabilities"].values())
        assert answer["confidence"] == round(reference.choice_confidence(p), 2)


def test_structured_levels_are_echoed_in_the_legend_as_given():
    levels = [
        "Harmless",
        {"what": "reads only; changes nothing", "examples": ["ls -la", "git status"]},
        None,
    ]
    status, body = standin.respond(
        {"state": "rm -rf /", "questions": {"risk": {"type": "score", "criteria": levels}}}
    )
    assert status == 200
    assert body["answers"]["risk"]["legend"] == {"0": levels[0], "1": levels[1], "2": "level 2"}


# --- compressed bodies ----------------------------------------------------------------------------


def test_a_zstd_body_is_answered_as_the_same_body_uncompressed(served):
    raw = spec.wire_json({"state": STATE, "model": "jev-latest", "questions": _big_questions()})
    assert len(raw) > 1024
    packed = _post(
        f"{served}/v1/systemone", zstandard.compress(raw), **{"Content-Encoding": "zstd"}
    )
    plain = _post(f"{served}/v1/systemone", raw)
    assert packed.status_code == 200, packed.text
    assert packed.json()["answers"] == plain.json()["answers"]


def test_the_official_client_with_zstd_on_is_answered(served, monkeypatch):
    """The SDK compresses with `compression.zstd` (Python ≥ 3.14) or `backports.zstd`, neither
    of which this Python has; its compressor table gets zstandard's, which writes the same zstd
    frames, and everything else is the SDK's own: its body, its headers, its transport."""
    monkeypatch.setitem(sdk_compression.COMPRESSORS, "zstd", zstandard.compress)
    sent = []
    hooks = {"request": [lambda request: sent.append(request.headers.get("content-encoding"))]}
    with (
        httpx2.Client(event_hooks=hooks) as http,
        TypeSafeClient(
            api_key=standin.KEY,
            base_url=served,
            compression="zstd",
            http_client=http,
            retry=RetryPolicy(max_retries=0),
        ) as client,
    ):
        result = client.system_one(state=STATE, questions=_big_questions(255))
    assert sent == ["zstd"]
    assert set(result.choices) == {"queue"} and set(result.scores) == {"anger"}
    assert result.choices["queue"].choice in _big_questions(255)["queue"]["criteria"]


def test_the_llm_wire_reads_zstd_too(served):
    parsed = spec.parse(_big_questions(), limits=spec.DEFAULT_LIMITS).questions
    raw = spec.wire_json(llm.request_body(parsed, STATE, "m"))
    assert len(raw) > 1024
    response = _post(
        f"{served}/v1/chat/completions", zstandard.compress(raw), **{"Content-Encoding": "zstd"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["model"] == standin.CHAT_MODEL


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd, gzip", "deflate"])
def test_an_unknown_content_encoding_is_refused_naming_it(served, encoding):
    response = _post(
        f"{served}/v1/systemone", b"\x1f\x8b whatever", **{"Content-Encoding": encoding}
    )
    assert response.status_code == 415
    detail = response.json()["detail"]
    assert detail["error_type"] == "unsupported_encoding"
    assert encoding in detail["message"] and "zstd" in detail["message"]


@pytest.mark.parametrize(
    "body",
    [
        b"not zstd at all",
        zstandard.compress(b'{"state": 1, "questions": {}}')[:-4],  # cut inside its frame
        zstandard.compress(b'{"state": 1, "questions": {}}') + b"trailing",
    ],
    ids=["not-zstd", "truncated", "trailing-bytes"],
)
def test_a_body_that_is_not_whole_zstd_gets_a_400(served, body):
    response = _post(f"{served}/v1/systemone", body, **{"Content-Encoding": "zstd"})
    assert response.status_code == 400
    assert response.json()["detail"]["error_type"] == "invalid_encoding"


def test_two_zstd_frames_are_one_body(served):
    raw = spec.wire_json({"state": STATE, "questions": DOC})
    half = len(raw) // 2
    body = zstandard.compress(raw[:half]) + zstandard.compress(raw[half:])
    response = _post(f"{served}/v1/systemone", body, **{"Content-Encoding": "zstd"})
    assert response.status_code == 200 and set(response.json()["answers"]) == set(DOC)


def test_a_zstd_bomb_is_refused_before_it_inflates(served):
    bomb = zstandard.compress(b" " * (64 * 2**20))  # 64 MiB of blanks in a few KiB
    assert len(bomb) < 64 * 1024
    response = _post(f"{served}/v1/systemone", bomb, **{"Content-Encoding": "zstd"})
    assert response.status_code == 413
    assert response.json()["detail"]["error_type"] == "request_too_large"
    # the stand-in still answers on the same connection pool afterwards
    assert _post(
        f"{served}/v1/systemone", spec.wire_json({"state": 1, "questions": DOC})
    ).is_success


def test_an_oversized_body_is_refused_unread(served):
    port = int(served.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(
            b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {standin.KEY}\r\n".encode()
            + f"Content-Length: {standin.MAX_BODY_BYTES + 1}\r\n\r\n".encode()
        )
        answer = b""
        while chunk := sock.recv(65536):  # the stand-in closes the connection after its answer
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413") and b"Connection: close" in head
    assert json.loads(body)["detail"]["error_type"] == "request_too_large"


def test_the_size_cap_holds_the_largest_request_the_console_sends():
    largest = django_settings.MAX_DOCUMENT_BYTES + spec.DEFAULT_LIMITS.max_state_bytes
    assert largest + 2**20 <= standin.MAX_BODY_BYTES
