"""`custom`: your own function as a backend. Its answers are checked like any wire's (an
invalid one is a 502 naming the rule), an exception inside it is that state's failure (logged
without the state), a bad setting is a 503 saying what is wrong, and a good one answers through
the preview, a batch run, a control run, compare and the CLI — calibrated: false, no cost."""

from __future__ import annotations

import json
import logging

import pytest
from django.urls import reverse

from questions import services
from questions.core import check, metrics, spec
from questions.dev import demo_rules, demo_sets
from questions.engine import backends
from questions.models import BatchItem, Decision
from tests import factories
from tests.providers import ADVICE_DOC_STATES, run_cli

pytestmark = pytest.mark.django_db

GOOD = "tests.providers:custom_reads_the_words"
DOC = {
    "urgent": {"type": "noul", "instructions": "Is it urgent?"},
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money, refunds", "tech": "bugs, crashes", "other": "else"},
    },
}


def a_set(writer=None):
    writer = writer or factories.author("writer")
    qs = factories.question_set("s", owner=writer, doc=DOC)
    for name, text, desk in ADVICE_DOC_STATES:
        services.sample_state_create(
            question_set=qs,
            name=name,
            state={"ticket": text},
            author=writer,
            expected={"desk": desk},
        )
    return qs, factories.draft(qs), writer


def ask(state="a refund of my money"):
    questions = check.validate(DOC, lints=False, limits=spec.DEFAULT_LIMITS).document.questions
    return backends.get("custom").ask(backends.Ask(questions, state, "custom"))


def test_a_good_function_answers_uncalibrated_at_no_cost_with_its_own_latency(settings):
    settings.DECISIONS_CUSTOM_BACKEND = GOOD
    outcome = ask()
    assert outcome.status == 200, outcome.to_json()
    shown = outcome.to_json()
    assert shown["backend"] == "custom" and shown["calibrated"] is False
    assert shown["answers"]["desk"]["choice"] == "billing" and shown["model"] == "tests' own rules"
    assert shown["cost"] == 0 and shown["timing"]["provider_ms"] is not None
    assert backends.calibrated("custom") is False and "custom" in backends.NAMES
    assert backends.answers_from("custom") == "your own rules"
    assert backends.answers_from("recorded:custom") == "your own rules, recorded"
    assert backends.answers_from("llm") == "a chat model"


@pytest.mark.parametrize(
    "setting, said",
    [
        ("", "need DECISIONS__CUSTOM_BACKEND=package.module:function"),
        ("tests.providers", "must read package.module:function"),
        ("no_such_module_here:f", "module 'no_such_module_here' could not be imported"),
        ("tests.providers:no_such_function", "tests.providers has no 'no_such_function'"),
        ("tests.providers:CUSTOM_NOT_CALLABLE", "is not callable"),
    ],
)
def test_a_bad_setting_is_a_503_saying_what_is_wrong_and_nothing_is_recorded(
    settings, setting, said
):
    settings.DECISIONS_CUSTOM_BACKEND = setting
    outcome = ask()
    assert outcome.status == 503 and said in outcome.error.detail
    assert outcome.request_body is None


def test_an_invalid_answer_is_refused_as_a_502_naming_the_rule(settings):
    settings.DECISIONS_CUSTOM_BACKEND = "tests.providers:custom_breaks_the_sums"
    outcome = ask()
    assert outcome.status == 502 and outcome.checked is None
    assert outcome.error.detail.startswith("The custom backend's answer was rejected: ")
    assert "`desk`" in outcome.error.detail and "sum" in outcome.error.detail


def test_an_answer_that_is_not_an_object_is_a_502_too(settings, monkeypatch):
    monkeypatch.setattr(demo_rules, "answer", lambda state, questions, model: ["no"])
    settings.DECISIONS_CUSTOM_BACKEND = "questions.dev.demo_rules:answer"
    outcome = ask()
    assert outcome.status == 502 and "not an object" in outcome.error.detail


def test_an_exception_is_that_states_failure_logged_without_the_state(settings, caplog):
    settings.DECISIONS_CUSTOM_BACKEND = "tests.providers:custom_raises_on_passwords"
    qs, version, writer = a_set()
    services.sample_state_create(
        question_set=qs, name="hush", state={"ticket": "my password is hunter2"}, author=writer
    )
    run = services.batch_create(version=version, backend="custom", user=writer, enqueue=False)
    with caplog.at_level(logging.INFO):
        run = services.batch_execute(run.pk)
    items = {i.sample_state.sample_state.name: i for i in BatchItem.objects.filter(run=run)}
    failed = items.pop("hush")
    assert failed.status == "failed" and failed.error_status == 502 and failed.attempts == 1
    assert "raised RuntimeError" in failed.error_detail and "hunter2" not in failed.error_detail
    assert {i.status for i in items.values()} == {"answered"}
    assert "custom backend" in caplog.text and "hunter2" not in caplog.text


def test_a_good_function_through_the_preview(settings, client):
    settings.DECISIONS_CUSTOM_BACKEND = GOOD
    _qs, version, writer = a_set()
    client.force_login(writer)
    page = client.post(
        reverse("version-preview", args=["s", version.number]),
        {"preview_backend": "custom", "preview_state_json": json.dumps({"ticket": "refund"})},
    ).content.decode()
    assert "tests&#x27; own rules" in page and "calibrated: false" in page
    # named for what it is: the author's own rules, not a chat model
    assert "These answers come from your own rules (<code>custom</code>)" in page
    assert "chat model" not in page
    assert Decision.objects.get().backend == "custom"
    editor = client.get(reverse("version-edit", args=["s", version.number])).content.decode()
    assert 'value="custom"' in editor  # offered where backends are


def test_a_good_function_through_a_batch_run_a_control_compare_and_the_cli(settings):
    settings.DECISIONS_CUSTOM_BACKEND = GOOD
    a_set()
    code, out, err = run_cli(
        "batch", "--set", "s", "--version", "1", "--backend", "custom", "--json"
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["calibrated"] is False and summary["pass_rate"] == 1.0
    code, out, err = run_cli("ask", "--set", "s", "--state", "a", "--backend", "custom", "--json")
    assert code == 0 and json.loads(out)["backend"] == "custom", err
    code, out, err = run_cli(
        "controls", "--set", "s", "--version", "1", "--backend", "custom", "--shuffle", "2"
    )
    assert code == 0 and "shuffled floor 0% (0–49%, n = 4)" in out, (out, err)
    code, out, err = run_cli(
        "compare",
        "--set",
        "s",
        "--state",
        "a",
        "--col",
        "v1:custom",
        "--col",
        "v1:recorded:custom",
        "--json",
    )
    assert code == 0, err
    compared = json.loads(out)
    assert [c["calibrated"] for c in compared["columns"]] == [False, False]
    desk = next(r for r in compared["rows"] if r["question"] == "desk")
    assert desk["cells"][1]["option_deltas"] == {"billing": 0.0, "tech": 0.0, "other": 0.0}


def test_the_demo_rules_route_the_support_set():
    support = next(s for s in demo_sets.SETS if s["slug"] == "support-routing")
    questions = check.validate(support["versions"][0], lints=False, limits=spec.DEFAULT_LIMITS)
    for state in support["states"]:
        body = demo_rules.answer(state["state"], questions.document.questions_json(), "m")
        checked = spec_checked(questions.document.questions, body)
        assert checked["department"]["choice"] in ("billing", "technical", "sales", "other")
    body = demo_rules.answer("Help! payouts failing", questions.document.questions_json(), "m")
    assert body["answers"]["department"]["choice"] == "billing"
    assert body["answers"]["is_urgent"]["noul"] == 1.0


def spec_checked(questions, body):
    from questions.core import answers

    return answers.check_response(questions, body, price_per_million=0).answers


def test_the_demo_rules_answer_any_question_validly():
    questions = check.validate(
        {**DOC, "anger": {"type": "score", "criteria": ["calm", None]}},
        lints=False,
        limits=spec.DEFAULT_LIMITS,
    ).document
    body = demo_rules.answer("nothing to match", questions.questions_json(), "m")
    answers = spec_checked(questions.questions, body)
    assert answers["desk"]["choice"] == "other" and answers["anger"]["score"] == 0
    assert metrics.passes("noul", answers["urgent"], False)


@pytest.mark.django_db(transaction=True)
def test_the_demo_runs_rules_stand_in_and_llm_side_by_side(settings):
    from questions.models import BatchRun

    settings.DEBUG = True
    settings.CONSOLE_PUBLIC_URL = "http://127.0.0.1:8101"  # as make run PORT=8101 sets it
    code, out, err = run_cli("demo")
    assert code == 0, err
    runs = BatchRun.objects.filter(question_set__slug="support-routing").order_by("pk")
    assert [(r.backend, r.status) for r in runs] == [(b, "done") for b in demo_sets.SIDE_BY_SIDE]
    # the whole link, which a terminal lets one click, not a path
    columns = "&".join(f"col=run:{r.pk}" for r in runs)
    link = f"http://127.0.0.1:8101/sets/support-routing/compare/?{columns}"
    assert f"side by side (custom, typesafe, llm): {link}\n" in out
    rules = runs[0]
    models = set(rules.items.values_list("decision__model_answered", flat=True))
    assert models == {demo_rules.MODEL} and rules.pass_rate > runs[1].pass_rate
