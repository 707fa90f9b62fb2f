"""Wire fidelity: what goes on each wire is the author's document in the author's order, byte for
byte what is recorded; each wire's answer rules; the runtime's own statuses and timing; replay
per source wire; and a call that never raises and never outlives its deadline."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from questions import exports, roles, services
from questions.core import answers, spec
from questions.engine import backends
from questions.engine.backends import clients
from questions.models import Decision, DecisionAnswer
from tests import factories
from tests.providers import STATE, UNSORTED, Provider, answer_all

pytestmark = pytest.mark.django_db

EXAMPLES = Path(__file__).resolve().parent / "examples"
WIRES = ["typesafe", "runtime", "openrouter"]


@pytest.fixture
def provider(provider_factory):
    return provider_factory(Provider(default=answer_all), every_wire=True)


def pairs(value):
    """A JSON value with every object as its list of (key, value) pairs: order made visible."""
    return json.loads(
        value if isinstance(value, str | bytes) else json.dumps(value), object_pairs_hook=list
    )


def wire_questions(raw: bytes):
    return dict(pairs(raw))["questions"]


@pytest.fixture
def approved():
    writer, checker = factories.author(), factories.reviewer()
    qs = factories.question_set(owner=writer, doc=UNSORTED)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    version = services.version_approve(
        confirm_weak_evidence=True, version=version, reviewer=checker
    )
    services.sample_state_create(question_set=qs, name="refund", state=STATE, author=writer)
    return version, writer


# --- 1 and 2: the author's order on every wire, recorded byte for byte ---------------------------


@pytest.mark.parametrize("backend", WIRES)
def test_every_wire_sends_the_export_documents_order_and_records_those_bytes(
    provider, approved, backend
):
    version, writer = approved
    exported = exports.export_document(version)["questions"]
    outcome = services.decision_ask(
        backend=backend, document=version.document, state=STATE, user=writer, version=version
    )
    assert outcome.status == 200, outcome.error
    raw = provider.requests[0]["raw"]
    assert wire_questions(raw) == pairs(exported)
    assert wire_questions(raw) == pairs(UNSORTED)
    assert raw == spec.wire_json(json.loads(raw))  # no whitespace, UTF-8, nothing sorted
    decision = Decision.objects.get()
    assert decision.request_text.encode("utf-8") == raw
    assert decision.request_sha256 == spec.sha256_of(json.loads(raw))  # canonical, for replay


def test_a_batch_run_sends_the_authors_order(provider, approved, transactional_db):
    version, writer = approved
    run = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    run = services.batch_execute(run.pk)
    assert run.status == "done"
    raw = provider.requests[0]["raw"]
    assert wire_questions(raw) == pairs(exports.export_document(version)["questions"])
    assert Decision.objects.get().request_text.encode("utf-8") == raw


def test_the_preview_sends_the_authors_order(provider, approved, client):
    version, writer = approved
    client.force_login(writer)
    sample = version.question_set.sample_states.get()
    response = client.post(
        reverse("version-preview", args=[version.question_set.slug, version.number]),
        {"preview_state": sample.pk, "preview_backend": "openrouter"},
    )
    assert response.status_code == 200 and "zeta" in response.content.decode()
    raw = provider.requests[0]["raw"]
    assert wire_questions(raw) == pairs(exports.export_document(version)["questions"])
    assert Decision.objects.get().request_text.encode("utf-8") == raw


def test_questions_ask_sends_the_files_order(provider, tmp_path):
    (tmp_path / "q.json").write_text(json.dumps(UNSORTED))
    (tmp_path / "s.json").write_text(json.dumps(STATE))
    out = io.StringIO()
    call_command(
        "questions",
        "ask",
        "--file",
        str(tmp_path / "q.json"),
        "--state-file",
        str(tmp_path / "s.json"),
        "--backend",
        "runtime",
        stdout=out,
    )
    assert list(json.loads(out.getvalue())["answers"]) == ["zeta", "alpha", "mid"]
    raw = provider.requests[0]["raw"]
    assert wire_questions(raw) == pairs(UNSORTED)
    assert list(dict(pairs(raw))) == ["state", "questions"]


def test_a_parsed_question_keeps_its_key_order_but_not_in_equality():
    doc = spec.parse(UNSORTED, limits=spec.DEFAULT_LIMITS)
    assert pairs(doc.questions_json()) == pairs(UNSORTED)
    reordered = spec.parse(
        {"mid": {k: UNSORTED["mid"][k] for k in ("type", "instructions", "criteria")}},
        limits=spec.DEFAULT_LIMITS,
    )
    assert reordered.questions["mid"] == doc.questions["mid"]
    assert reordered.questions["mid"].sha256 == doc.questions["mid"].sha256


# --- 3: each wire's answer rules; the runtime's own timing -------------------------------------


def runtime_example() -> dict:
    return json.loads((EXAMPLES / "runtime-response.json").read_text())


def runtime_request() -> dict:
    return json.loads((EXAMPLES / "runtime-request.json").read_text())


def test_the_seeds_own_example_passes_the_runtime_with_a_flag_and_its_timing(provider):
    provider.reply(200, runtime_example())
    body = runtime_request()
    outcome = services.decision_ask(
        backend="runtime",
        document=body["questions"],
        state=body["state"],
        user=roles.OPERATOR,
    )
    assert outcome.status == 200, outcome.error
    shown = outcome.to_json()
    assert shown["answers"]["energy"]["score"] == 2
    assert [f["code"] for f in shown["answers"]["energy"]["flags"]] == ["weighted_score"]
    assert shown["runtime_timing"] == {"total_ms": 356, "provider_ms": 349}
    assert set(shown["timing"]) == {"provider_ms", "total_ms"}
    assert shown["timing"] != shown["runtime_timing"]
    recorded = DecisionAnswer.objects.get(question_id="energy").answer
    assert recorded["flags"][0]["code"] == "weighted_score"
    assert json.loads(Decision.objects.get().response_text)["timing"]["total_ms"] == 356


@pytest.mark.parametrize("backend", ["typesafe", "openrouter"])
def test_the_same_answer_is_a_502_on_a_provider_wire(provider, backend):
    provider.reply(200, runtime_example())
    body = runtime_request()
    outcome = services.decision_ask(
        backend=backend,
        document=body["questions"],
        state=body["state"],
        user=roles.OPERATOR,
    )
    assert outcome.status == 502
    assert "1.85" in outcome.error.detail


def test_the_preview_shows_a_flag_under_its_answer(provider, client):
    writer = factories.author()
    body = runtime_request()
    qs = factories.question_set(owner=writer, doc=body["questions"])
    client.force_login(writer)
    provider.reply(200, runtime_example())
    page = client.post(
        reverse("version-preview", args=[qs.slug, 1]),
        {
            "preview_state": "",
            "preview_state_json": json.dumps(body["state"]),
            "preview_backend": "runtime",
        },
    ).content.decode()
    assert 'class="flags"' in page
    assert "probabilities weigh 1.85" in page


# --- 4: the runtime's 503 ----------------------------------------------------------------------


def test_a_runtime_that_is_not_configured_is_a_503_with_its_detail(provider):
    provider.reply(503, {"detail": "Decisions need TYPESAFE_API_KEY on the runtime"})
    error = services.decision_ask(
        backend="runtime", document=UNSORTED, state=STATE, user=roles.OPERATOR
    ).error
    assert (error.status, error.provider_status_code) == (503, 503)
    assert "Decisions need TYPESAFE_API_KEY on the runtime" in error.detail


@pytest.mark.parametrize("backend", ["typesafe", "openrouter"])
def test_a_provider_503_stays_a_502(provider, backend):
    provider.reply(503, {"detail": "Service Unavailable"})
    error = services.decision_ask(
        backend=backend, document=UNSORTED, state=STATE, user=roles.OPERATOR
    ).error
    assert (error.status, error.provider_status_code) == (502, 503)


def test_the_error_table_has_per_wire_rows():
    assert backends.base.mapping_for(503, "runtime").status == 503
    assert backends.base.mapping_for(503, "typesafe").status == 502
    assert backends.base.mapping_for(500, "runtime").relay_detail is True
    assert backends.base.mapping_for(422, "runtime").with_provider_detail is True


# --- 5: recorded answers every id, and only its source wire's recordings -------------------------


TWINS = {
    "first": {"type": "noul", "instructions": "Is it urgent?"},
    "second": {"type": "noul", "instructions": "Is it urgent?"},
}


def test_recorded_answers_two_ids_with_the_same_words(provider):
    assert (
        services.decision_ask(
            backend="typesafe", document=TWINS, state=STATE, user=roles.OPERATOR
        ).status
        == 200
    )
    replay = services.decision_ask(
        backend="recorded", document=TWINS, state=STATE, user=roles.OPERATOR
    )
    assert replay.status == 200 and replay.missing == []
    assert list(replay.checked.answers) == ["first", "second"]


def test_a_typesafe_replay_never_shows_an_openrouter_answer(provider, settings):
    settings.OPENROUTER_MODEL = settings.DECISIONS_MODEL  # the same model name on both wires
    provider.reply(
        200,
        answer_all({"questions": TWINS})
        | {
            "answers": {
                "first": {"type": "noul", "noul": 0.11},
                "second": {"type": "noul", "noul": 0.11},
            }
        },
    )
    services.decision_ask(backend="openrouter", document=TWINS, state=STATE, user=roles.OPERATOR)
    typesafe_replay = services.decision_ask(
        backend="recorded", document=TWINS, state=STATE, user=roles.OPERATOR
    )
    assert typesafe_replay.status == 404
    assert "typesafe" in typesafe_replay.error.detail
    openrouter_replay = services.decision_ask(
        backend="recorded:openrouter",
        document=TWINS,
        state=STATE,
        user=roles.OPERATOR,
    )
    assert openrouter_replay.checked.answers["first"]["noul"] == 0.11
    assert openrouter_replay.backend == "recorded:openrouter"
    services.decision_ask(backend="typesafe", document=TWINS, state=STATE, user=roles.OPERATOR)
    assert (
        services.decision_ask(
            backend="recorded:typesafe",
            document=TWINS,
            state=STATE,
            user=roles.OPERATOR,
        ).checked.answers["first"]["noul"]
        == 0.7
    )


def test_recorded_names_and_defaults():
    assert backends.NAMES == (
        "typesafe",
        "runtime",
        "openrouter",
        "llm",
        "custom",
        "recorded",
        "recorded:runtime",
        "recorded:openrouter",
        "recorded:llm",
        "recorded:custom",
    )
    assert backends.get("recorded").source.name == "typesafe"
    assert backends.get("recorded:typesafe").name == "recorded"
    with pytest.raises(backends.DecisionError):
        backends.get("recorded:recorded")


def test_a_runtime_replay_rechecks_by_the_runtimes_rules(provider):
    provider.reply(200, runtime_example())
    body = runtime_request()
    services.decision_ask(
        backend="runtime", document=body["questions"], state=body["state"], user=roles.OPERATOR
    )
    replay = services.decision_ask(
        backend="recorded:runtime",
        document=body["questions"],
        state=body["state"],
        user=roles.OPERATOR,
    )
    assert replay.status == 200
    assert replay.checked.answers["energy"]["flags"][0]["code"] == "weighted_score"


# --- 8: never raises, and a total deadline --------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (
            b'{"model": "m", "answers": {"alpha": {"type": "noul", "noul": 1' + b"0" * 400 + b"}}}",
            "too large for a double",
        ),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
@pytest.mark.parametrize("backend", WIRES)
def test_whatever_a_provider_sends_the_call_answers_a_502(provider, backend, raw, words):
    provider.reply(200, raw)
    outcome = services.decision_ask(
        backend=backend,
        document={"alpha": UNSORTED["alpha"]},
        state=STATE,
        user=roles.OPERATOR,
    )
    assert (outcome.status, outcome.error.provider_status_code) == (502, 200)
    assert words in outcome.error.detail
    assert Decision.objects.get().status == 502


def test_a_trickling_provider_cannot_hold_a_call_past_the_timeout(provider, settings):
    settings.DECISIONS_TIMEOUT_SECONDS = 1
    provider.reply(200, answer_all({"questions": UNSORTED}), trickle=0.25)
    started = time.perf_counter()
    outcome = services.decision_ask(
        backend="typesafe", document=UNSORTED, state=STATE, user=roles.OPERATOR
    )
    elapsed = time.perf_counter() - started
    assert outcome.status == 504
    # cut at the deadline although no read waited 1 s (the whole answer would take minutes);
    # the upper bound only tells a cut call from a whole one, however busy the machine
    assert 0.9 <= elapsed < 20
    assert Decision.objects.get().status == 504


def test_a_provider_trickling_a_byte_every_two_seconds_ends_at_the_timeout(provider, settings):
    settings.DECISIONS_TIMEOUT_SECONDS = 1
    provider.reply(200, answer_all({"questions": UNSORTED}), trickle=2)
    started = time.perf_counter()
    outcome = services.decision_ask(
        backend="runtime", document=UNSORTED, state=STATE, user=roles.OPERATOR
    )
    assert outcome.status == 504
    assert time.perf_counter() - started < 20  # not the minutes the whole answer would take


def test_anything_unexpected_in_checking_is_a_502_naming_it(provider, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug, or a body no rule foresaw")

    monkeypatch.setattr(answers, "check_response", broken)
    outcome = services.decision_ask(
        backend="typesafe", document=UNSORTED, state=STATE, user=roles.OPERATOR
    )
    assert (outcome.status, outcome.error.provider_status_code) == (502, 200)
    assert "unexpected shape" in outcome.error.detail
    assert "ZeroDivisionError" in outcome.error.detail


def test_one_client_per_backend_whatever_the_timeout(provider, settings):
    services.decision_ask(backend="typesafe", document=UNSORTED, state=STATE, user=roles.OPERATOR)
    settings.DECISIONS_TIMEOUT_SECONDS = 3
    services.decision_ask(backend="typesafe", document=UNSORTED, state=STATE, user=roles.OPERATOR)
    assert clients.shared("typesafe") is clients._shared["typesafe"]
    assert [k for k in clients._shared if k == "typesafe"] == ["typesafe"]
