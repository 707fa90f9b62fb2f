"""The stand-in's runtime (`questions.dev.standin_runtime`): the assistant runtime's `POST
/api/decisions` (seed 000) over the console's approved exports — its request, its answer, its
rules, its 422s and its 503, each error a `detail` and never a traceback, the state never
echoed — called as a function, over HTTP, and as `questions standin` serves it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
import zstandard

from questions import services
from questions.core import answers, spec
from questions.dev import standin, standin_runtime
from tests import factories
from tests.helpers import wait_for
from tests.providers import DOC, StandInRuntime

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = Path(__file__).resolve().parent / "examples"
SEED_REQUEST = json.loads((EXAMPLES / "runtime-request.json").read_text())
SEED_RESPONSE = json.loads((EXAMPLES / "runtime-response.json").read_text())
#: words of a state that no error may echo
CANARY = "canary-words-of-a-users-state"
STATE = {"ticket": f"I was charged twice on my invoice {CANARY}"}


def approve(slug: str, doc: dict):
    writer, checker = factories.author(f"w-{slug}"), factories.reviewer(f"r-{slug}")
    qs = factories.question_set(slug, owner=writer, doc=doc)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    return services.version_approve(
        version=version, reviewer=checker, label="production", confirm_weak_evidence=True
    )


def expected(questions: dict, state) -> dict:
    """The stand-in's own answers to `questions` about `state`."""
    parsed = spec.parse(questions, limits=spec.DEFAULT_LIMITS).questions
    return {qid: standin.answer(q, state) for qid, q in parsed.items()}


# --- the call, as a function ----------------------------------------------------------------------


@pytest.mark.django_db
def test_seed_000s_example_call_is_answered_as_the_runtime_answers_it():
    approve("gestures", SEED_REQUEST["questions"])
    status, body = standin_runtime.respond(SEED_REQUEST)
    assert status == 200
    assert list(body) == list(SEED_RESPONSE)  # model, answers, usage, timing
    assert list(body["answers"]) == list(SEED_REQUEST["questions"])  # the application's ids
    for qid, answer in body["answers"].items():
        assert answer["type"] == SEED_RESPONSE["answers"][qid]["type"]
        assert set(answer) == set(SEED_RESPONSE["answers"][qid])
    assert body["answers"]["energy"]["legend"] == SEED_RESPONSE["answers"]["energy"]["legend"]
    assert body["answers"] == expected(SEED_REQUEST["questions"], SEED_REQUEST["state"])
    parsed = spec.parse(SEED_REQUEST["questions"], limits=spec.DEFAULT_LIMITS)
    answers.check_response(parsed, body, rules=answers.RUNTIME)  # the runtime's own checks
    assert body["model"] == standin.MODEL
    assert set(body["usage"]) == {"input_tokens", "output_tokens"}
    assert body["usage"]["output_tokens"] == 0 and body["usage"]["input_tokens"] > 0
    assert body["timing"]["total_ms"] >= body["timing"]["provider_ms"] >= 0


@pytest.mark.django_db
def test_some_of_an_approved_sets_questions_under_the_applications_own_ids_are_answered():
    approve("tickets", DOC)
    asked = {"is_urgent": DOC["urgent"]}  # one of the two, under another id
    status, body = standin_runtime.respond({"state": STATE, "questions": asked})
    assert status == 200 and body["answers"] == expected(asked, STATE)


@pytest.mark.django_db
def test_an_approval_is_answered_from_the_call_after_it():
    writer, checker = factories.author("w"), factories.reviewer("r")
    qs = factories.question_set("later", owner=writer, doc=DOC)
    body = {"state": STATE, "questions": DOC}
    assert standin_runtime.respond(body)[0] == 422  # a draft is not approved
    version = services.version_submit(version=factories.draft(qs), author=writer)
    assert standin_runtime.respond(body)[0] == 422  # nor is a version in review
    services.version_approve(
        version=version, reviewer=checker, label="production", confirm_weak_evidence=True
    )
    assert standin_runtime.respond(body)[0] == 200


@pytest.mark.django_db
def test_nothing_approved_yet_says_so():
    status, body = standin_runtime.respond({"state": STATE, "questions": DOC})
    assert status == 422
    assert body["detail"].startswith("No version of any set is approved in this console yet")


@pytest.mark.django_db
def test_questions_of_no_approved_set_are_an_unknown_set():
    approve("tickets", DOC)
    other = {"mood": {"type": "noul", "instructions": "Is the customer happy?"}}
    status, body = standin_runtime.respond({"state": STATE, "questions": other})
    assert status == 422
    assert body["detail"].startswith("No approved export holds these questions (1 approved")


@pytest.mark.django_db
def test_changed_and_added_questions_are_named_against_the_nearest_approved_export():
    approve("tickets", DOC)
    changed = json.loads(json.dumps(DOC))
    changed["desk"]["criteria"]["other"] = "something else entirely"
    changed["extra"] = {"type": "noul", "instructions": "Is it spam?"}
    status, body = standin_runtime.respond({"state": STATE, "questions": changed})
    assert status == 422
    assert body["detail"] == (
        "Not the questions of an approved export: tickets v1 holds 1 of the 3 asked; `desk` is "
        "not as tickets v1 approved it (changed since?); `extra` is no question of tickets v1."
    )


BAD_BODIES = {
    "an array": ([STATE], "The body is an array; POST /api/decisions takes an object"),
    "a string": (CANARY, "The body is a string;"),
    "null": (None, "The body is null;"),
    "no state": ({"questions": DOC}, "The body has no `state`"),
    "no questions": ({"state": STATE}, "The body has no `questions`"),
    "neither": ({}, "The body has no `state` and no `questions`"),
    "questions a list": ({"state": STATE, "questions": [DOC]}, "questions is an array;"),
    "one question": ({"state": STATE, "questions": DOC["urgent"]}, "questions is one question"),
    "a profile": (
        {"state": STATE, "questions": DOC, "profile": "concierge"},
        "profile `concierge` is not a registered assistant profile",
    ),
    "a profile of a number": (
        {"state": STATE, "questions": DOC, "profile": 3},
        "profile a number is not a registered",
    ),
    "no question": ({"state": STATE, "questions": {}}, "The body failed validation: questions"),
    "one option": (
        {"state": STATE, "questions": {"q": {"type": "choice", "criteria": {"a": "A"}}}},
        "The body failed validation: questions.q.criteria:",
    ),
    "an unknown type": (
        {"state": STATE, "questions": {"q": {"type": "essay", "instructions": "Why?"}}},
        "The body failed validation: questions.q",
    ),
}


@pytest.mark.django_db
@pytest.mark.parametrize("name", BAD_BODIES)
def test_a_body_of_the_wrong_shape_is_the_runtimes_422_with_a_detail(name):
    approve("tickets", DOC)
    body, words = BAD_BODIES[name]
    status, out = standin_runtime.respond(body)
    assert status == 422 and list(out) == ["detail"]
    assert words in out["detail"], out["detail"]
    assert CANARY not in out["detail"]


@pytest.mark.django_db
def test_the_configured_limits_are_the_runtimes(settings):
    approve("tickets", DOC)
    settings.DECISIONS_LIMITS = spec.Limits(max_questions=1, max_state_bytes=64)
    status, out = standin_runtime.respond({"state": STATE, "questions": DOC})
    assert status == 422 and "at most 1" in out["detail"]
    big = {"ticket": CANARY * 4}
    status, out = standin_runtime.respond({"state": big, "questions": {"u": DOC["urgent"]}})
    assert status == 422 and "state" in out["detail"] and CANARY not in out["detail"]


# --- over HTTP ------------------------------------------------------------------------------------


@pytest.fixture
def served():
    runtime = StandInRuntime()
    yield runtime
    runtime.stop()


def post(url: str, content: bytes, **headers: str) -> httpx.Response:
    sent = {"Authorization": f"Bearer {standin.KEY}", "Content-Type": "application/json"}
    return httpx.post(f"{url}/api/decisions", content=content, headers={**sent, **headers})


@pytest.mark.django_db(transaction=True)
def test_over_http_an_approved_call_is_answered_and_a_new_approval_is_read(served):
    approve("tickets", DOC)
    response = post(served.url, json.dumps({"state": STATE, "questions": DOC}).encode())
    assert response.status_code == 200, response.text
    assert response.json()["answers"] == expected(DOC, STATE)
    other = {"mood": {"type": "noul", "instructions": "Is the customer happy?"}}
    call = json.dumps({"state": STATE, "questions": other}).encode()
    assert post(served.url, call).status_code == 422
    approve("moods", other)  # read from the database at the next call, nothing restarted
    assert post(served.url, call).status_code == 200
    status = httpx.get(
        f"{served.url}/api/decisions/status", headers={"Authorization": f"Bearer {standin.KEY}"}
    )
    assert status.json() == {
        "healthy": True,
        "configured": True,
        "provider": "local stand-in",
        "model": standin.MODEL,
        "approved_versions": 2,
    }


@pytest.mark.django_db(transaction=True)
def test_over_http_every_refusal_is_a_json_detail(served):
    approve("tickets", DOC)
    good = json.dumps({"state": STATE, "questions": DOC}).encode()
    bomb = zstandard.ZstdCompressor().compress(b" " * (standin.MAX_BODY_BYTES + 1))
    refused = {
        "no key": (post(served.url, good, Authorization=""), 401),
        "another key": (post(served.url, good, Authorization="Bearer nope"), 401),
        "not JSON": (post(served.url, b"{'state': 1"), 422),
        "not UTF-8": (post(served.url, b'{"state": "\xff"}'), 422),
        "too large once inflated": (post(served.url, bomb, **{"Content-Encoding": "zstd"}), 422),
        "a GET": (httpx.get(f"{served.url}/api/decisions"), 405),
    }
    for name, (response, status) in refused.items():
        assert response.status_code == status, name
        assert response.headers["Content-Type"] == "application/json", name
        assert isinstance(response.json()["detail"], str), name
        assert standin.KEY not in response.text, name
    assert "over 8 MiB once decompressed" in refused["too large once inflated"][0].json()["detail"]
    assert refused["not JSON"][0].json()["detail"].startswith("The body is not JSON")


def head_only_answer(port: int, length: int) -> bytes:
    """What the server answers a POST whose head announces `length` bytes it never sends."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(
            b"POST /api/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {standin.KEY}\r\nContent-Length: {length}\r\n\r\n".encode()
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_a_body_over_the_stand_ins_bound_is_the_runtimes_422_unread():
    server = standin_runtime.serve_in_thread()
    try:
        answer = head_only_answer(server.server_address[1], standin.MAX_BODY_BYTES + 1)
    finally:
        server.shutdown()
        server.server_close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 422 ")
    assert json.loads(body) == {"detail": "The request body is over 8 MiB."}


# --- as `questions standin` serves it -----------------------------------------------------------


@pytest.mark.slow
def test_questions_standin_serves_the_runtime_and_answers_503_without_the_consoles_exports(
    tmp_path,
):
    """Started on a database that was never migrated, it cannot read the approved exports:
    the runtime's 503 (seed 000: the service is not started), and its status says unhealthy."""
    process = subprocess.Popen(
        [sys.executable, "manage.py", "questions", "standin", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={
            "PATH": os.environ["PATH"],
            "DJANGO_DEBUG": "1",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'never-migrated.sqlite3'}",
        },
    )
    lines: list[str] = []

    def read() -> None:
        for line in process.stdout:
            lines.append(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        said = wait_for(
            lambda: [line for line in lines if line.startswith("stand-in runtime")],
            60,
            "the stand-in to say where its runtime is",
        )[0]
        url = said.split("RUNTIME_URL=")[1].split()[0]
        response = post(url, json.dumps({"state": STATE, "questions": DOC}).encode())
        status = httpx.get(
            f"{url}/api/decisions/status", headers={"Authorization": f"Bearer {standin.KEY}"}
        )
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert f"RUNTIME_TOKEN={standin.KEY}" in said
    assert response.status_code == 503
    assert response.json()["detail"].startswith(
        "Decisions need the console's approved exports, and the local stand-in cannot read them"
    )
    assert CANARY not in response.text
    assert status.json()["healthy"] is False and status.json()["approved_versions"] is None
