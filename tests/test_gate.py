"""The CI gate (`questions gate`): a label's approved version over the set's labelled states,
replayed by default with no network and no key; exit 0 when every bound holds, 1 when one is
crossed (each bound, the per-question floor, a labelled state with no answer), 2 when there is
nothing to gate; the JUnit file parses and names a test case per question and per bound."""

from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
import pytest

from questions import roles, services
from questions.core import gate
from questions.models import BatchRun, Decision, Version
from questions.selectors import review, runs, scorecard, sets
from questions.services import gates as gate_services
from tests import factories
from tests.providers import (
    DOC,
    Provider,
    point_every_wire_at,
    reads_the_words,
    run_cli,
    takes_the_first,
)

pytestmark = pytest.mark.django_db(transaction=True)  # a run's calls write from their threads

#: (name, state, expected): the model reads c's topic as `other`, where `billing` is expected;
#: `d` expects nothing and is never gated
STATES = [
    ("a", {"topic": "money", "urgent": True}, {"desk": "billing", "urgent": True}),
    ("b", {"topic": "bugs", "urgent": False}, {"desk": "tech", "urgent": False}),
    ("c", {"topic": "anything else", "urgent": True}, {"desk": "billing", "urgent": True}),
    ("d", {"topic": "money", "urgent": False}, {}),
]
#: the stand-in's price of the calls: 9 input tokens at the default price per million
COST_PER_1K = 9 * 0.042 / 1_000_000 * 1000


@pytest.fixture
def provider(provider_factory):
    return provider_factory(Provider(default=reads_the_words), every_wire=True)


@pytest.fixture
def gated(settings, provider):
    """Set `g`: DOC approved under `production` on a live run over its states (the evidence),
    then the provider gone and no key: what is gated is replayed."""
    writer, checker = factories.author("w"), factories.reviewer("r")
    qs = factories.question_set("g", owner=writer, doc=DOC)
    for name, state, expected in STATES:
        services.sample_state_create(
            question_set=qs, name=name, state=state, expected=expected, author=writer
        )
    version = services.version_submit(version=factories.draft(qs), author=writer)
    run = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    services.batch_execute(run.pk)
    services.version_approve(version=version, reviewer=checker, label="production")
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "", "http://127.0.0.1:9"
    return Version.objects.get(pk=version.pk)


def gate_json(*args: str) -> tuple[int, dict]:
    code, out, _err = run_cli("gate", "--set", "g", "--label", "production", *args, "--json")
    return code, json.loads(out)


def bound(result: dict, name: str) -> dict:
    return next(b for b in result["bounds"] if b["name"] == name)


def test_a_gate_with_no_bound_crossed_exits_0_with_no_network(gated, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the recorded gate made an HTTP call")

    monkeypatch.setattr(httpx.Client, "send", no_network)
    monkeypatch.setattr(httpx.AsyncClient, "send", no_network)
    calls = Decision.objects.count()
    code, result = gate_json()
    assert code == 0 and result["ok"] is True
    assert result["backend"] == "recorded" and result["version"] == gated.number
    assert result["states"] == 3 and result["answered"] == 3  # d expects nothing
    assert result["pass_rate"] == pytest.approx(5 / 6)
    desk = result["questions"]["desk"]
    assert (desk["checked"], desk["passed"]) == (3, 2)
    [missed] = desk["missed"]
    assert missed == {
        "state": "c",
        "expected": "billing",
        "answered": "other 0.90",
        "wrong_confidence": pytest.approx(missed["wrong_confidence"]),
    }
    assert missed["wrong_confidence"] >= 0.9 - 1e-9  # other at 0.90 leaves billing 0.10 at most
    assert bound(result, "answered") == {
        "name": "answered",
        "flag": "",
        "value": 0.0,
        "limit": 0.0,
        "ok": True,
        "detail": "every labelled state answered (3/3)",
    }
    assert Decision.objects.count() == calls  # nothing was asked: a replay
    assert BatchRun.objects.get(pk=result["run"]).backend == "recorded"


def test_the_floor_holds_for_the_set_and_for_each_question(gated):
    code, result = gate_json("--min-pass-rate", "0.8")
    assert code == 1 and result["ok"] is False
    assert bound(result, "min_pass_rate")["ok"] is True  # 5/6 overall …
    desk = result["questions"]["desk"]
    assert desk["ok"] is False and "c (expected" in desk["message"]
    assert "67% (21–94%, n = 3)" in desk["message"]
    assert result["questions"]["urgent"]["ok"] is True
    code, result = gate_json("--min-pass-rate", "0.6")
    assert code == 0
    code, result = gate_json("--min-pass-rate", "0.9")
    assert code == 1 and bound(result, "min_pass_rate") | {"detail": ""} == {
        "name": "min_pass_rate",
        "flag": "--min-pass-rate",
        "value": pytest.approx(5 / 6),
        "limit": 0.9,
        "ok": False,
        "detail": "",
    }


@pytest.mark.parametrize(
    ("flag", "holds", "crossed", "value"),
    [
        # nouls: 0.8 true twice, 0.2 false once → 0.2; choices: 0.9, right twice in three → 0.233
        ("--max-ece", "0.25", "0.2", 0.9 - 2 / 3),
        ("--max-cost-per-1k", "0.001", "0.0001", COST_PER_1K),
    ],
)
def test_each_ceiling_exits_1_when_crossed_and_0_when_held(gated, flag, holds, crossed, value):
    name = flag.removeprefix("--").replace("-", "_")
    code, result = gate_json(flag, holds)
    assert code == 0, result
    assert bound(result, name)["value"] == pytest.approx(value)
    assert bound(result, name)["ok"] is True
    code, result = gate_json(flag, crossed)
    assert code == 1 and bound(result, name)["ok"] is False


def test_a_replay_decides_as_the_evidence_did(gated):
    code, result = gate_json("--max-flip-rate", "0")
    flips = bound(result, "max_flip_rate")
    assert code == 0 and flips["value"] == 0.0
    assert flips["detail"] == "0/3 states decided otherwise than on approval (0.0%); at most 0.0%"


def test_the_ece_bound_crossed(gated):
    code, result = gate_json("--max-ece", "0.2")
    assert code == 1 and bound(result, "max_ece")["ok"] is False
    assert (
        "noul 0.200 over 3 answers, choice 0.233 over 3 answers"
        in bound(result, "max_ece")["detail"]
    )


def test_a_live_gate_counts_the_states_decided_otherwise_than_on_approval(gated, settings):
    other = Provider(default=takes_the_first)  # b and c now read `billing`
    point_every_wire_at(settings, other)
    try:
        code, result = gate_json("--backend", "typesafe", "--max-flip-rate", "0.5")
    finally:
        other.stop()
    assert code == 1
    flips = bound(result, "max_flip_rate")
    assert flips["value"] == pytest.approx(2 / 3) and flips["ok"] is False
    assert "2/3 states decided otherwise than on approval" in flips["detail"]
    assert sorted(result["questions"]["desk"]["flipped"]) == ["b", "c"]
    assert len(other.requests) == 3  # the labelled states only
    code, result = gate_json("--max-flip-rate", "0.5")  # the newest recordings replayed
    assert code == 1 and bound(result, "max_flip_rate")["value"] == pytest.approx(2 / 3)


def test_a_gate_run_is_its_own_kind_and_never_review_evidence(gated, settings, client):
    """A live gate run (on the default backend, the scorecard's) is newer than the evidence,
    yet the version's latest run, the review's and the scorecard's run, the set list's last
    pass rate and a later approval's evidence stay the real run; the gate run keeps its page,
    a place in the runs list, marked, and its records."""
    evidence = gated.approved_evidence_run
    other = Provider(default=takes_the_first)  # b and c now read `billing`
    point_every_wire_at(settings, other)
    try:
        code, result = gate_json("--backend", "typesafe")
    finally:
        other.stop()
    run = BatchRun.objects.get(pk=result["run"])
    assert code == 0 and run.kind == gate.KIND and run.backend == "typesafe"
    assert run.pk > evidence.pk and run.finished
    assert runs.latest_run(gated) == evidence
    assert review.review_evidence(gated, None)["this"]["run"] == evidence.pk
    card = scorecard.scorecard(gated.question_set)
    assert card["versions"][0]["run"]["run"] == evidence.pk
    found = sets.question_sets(user=roles.OPERATOR).get(slug="g")
    assert found.last_run_id == evidence.pk
    # a new version approved on its own run: its evidence is that run, never a gate's
    writer, checker = gated.author, factories.reviewer("r2")
    v2 = services.version_draft_from(version=gated, author=writer)
    v2_run = services.batch_create(version=v2, backend="recorded", user=writer, enqueue=False)
    services.batch_execute(v2_run.pk)
    services.version_submit(version=v2, author=writer)
    v2_gate, _ = gate_services.gate_run(
        version=v2, backend="recorded", user=writer, bounds=gate.Bounds()
    )
    assert v2_gate.kind == gate.KIND and v2_gate.pk > v2_run.pk
    v2 = services.version_approve(version=v2, reviewer=checker, confirm_weak_evidence=True)
    assert Version.objects.get(pk=v2.pk).approved_evidence_run_id == v2_run.pk
    client.force_login(writer)
    page = client.get(f"/runs/{run.pk}/")
    assert page.status_code == 200 and "Gate run" in page.content.decode()
    listed = client.get("/sets/g/").content.decode()
    assert f'run {run.pk}</a> <small class="run-kind">{gate.TITLE}</small>' in listed
    assert f"/runs/{run.pk}/" not in client.get("/sets/g/controls/").content.decode()
    code, out, _ = run_cli("records", "--set", "g", "--run", str(run.pk), "--format", "jevl")
    assert code == 0 and out.count("\n") == 3  # a record per labelled state


def test_a_labelled_state_with_no_recording_fails_the_gate(gated, tmp_path):
    services.sample_state_create(
        question_set=gated.question_set,
        name="e",
        state={"topic": "bugs", "urgent": True},
        expected={"urgent": True},
        author=factories.author("w2"),
    )
    junit = tmp_path / "gate.xml"
    code, result = gate_json("--junit", str(junit))
    assert code == 1
    answered = bound(result, "answered")
    assert answered["ok"] is False and "e (404: Nothing recorded" in answered["detail"]
    assert result["questions"]["urgent"]["unanswered"] == ["e"]
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert "e" in cases["answered"].find("failure").get("message")
    assert "e (no answer)" in cases["urgent"].find("failure").text


def test_a_state_answered_without_a_question_it_expects_fails_the_gate(gated):
    writer = factories.author("w4")
    v2 = services.version_draft_from(version=gated, author=writer)
    extra = {"type": "noul", "instructions": "Is it a complaint?"}
    services.version_save(
        version=v2, document={**DOC, "extra": extra}, base_revision=v2.revision, author=writer
    )
    services.version_approve(
        version=services.version_submit(version=v2, author=writer),
        reviewer=factories.reviewer("r2"),
        label="next",
        confirm_weak_evidence=True,
    )
    a = gated.question_set.sample_states.get(name="a")
    services.sample_state_update(
        sample=a,
        name="a",
        state=a.state,
        expected={**a.expected, "extra": True},
        base_revision=a.revision,
        author=writer,
    )
    code, out, _ = run_cli("gate", "--set", "g", "--label", "next", "--json")
    result = json.loads(out)
    assert code == 1 and result["unanswered"] == {"a": "answered without extra"}
    assert bound(result, "answered")["ok"] is False
    assert result["questions"]["extra"]["unanswered"] == ["a"]
    assert result["questions"]["desk"]["ok"] is True  # recorded for its own words


def test_the_junit_file_has_a_case_per_question_and_per_bound(gated, tmp_path):
    junit = tmp_path / "out" / "gate.xml"
    junit.parent.mkdir()
    code, out, err = run_cli(
        *("gate", "--set", "g", "--label", "production", "--min-pass-rate", "0.8"),
        *("--max-cost-per-1k", "1", "--junit", str(junit)),
    )
    assert code == 1 and "FAIL question desk" in out and "the gate fails: question desk" in err
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "5" and root.get("failures") == "1"
    [suite] = root.findall("testsuite")
    assert suite.get("name") == f"questions gate g production v{gated.number}"
    cases = {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}
    assert set(cases) == {
        ("g.production.questions", "desk"),
        ("g.production.questions", "urgent"),
        ("g.production.bounds", "answered"),
        ("g.production.bounds", "min_pass_rate"),
        ("g.production.bounds", "max_cost_per_1k"),
    }
    failure = cases[("g.production.questions", "desk")].find("failure")
    assert "below 80.0%" in failure.get("message") and "c (expected billing," in failure.get(
        "message"
    )
    assert cases[("g.production.questions", "urgent")].find("failure") is None


@pytest.mark.parametrize(
    ("args", "status", "words"),
    [
        (["--label", "staging"], 404, "no label 'staging'"),
        (["--label", "production", "--min-pass-rate", "1.5"], 400, "fraction from 0 to 1"),
        (["--label", "production", "--max-cost-per-1k", "-1"], 400, "at least 0"),
        (["--label", "production", "--backend", "openrouter"], 503, "OPENROUTER_API_KEY"),
    ],
)
def test_nothing_to_gate_exits_2(gated, settings, args, status, words):
    settings.OPENROUTER_API_KEY = ""
    code, out, _ = run_cli("gate", "--set", "g", *args, "--json")
    printed = json.loads(out)
    assert code == 2 and printed["status"] == status and words in printed["detail"]


def test_a_set_with_no_labelled_state_has_nothing_to_gate():
    writer, checker = factories.author("w"), factories.reviewer("r")
    qs = factories.question_set("bare", owner=writer, doc=DOC)
    services.sample_state_create(question_set=qs, name="x", state={"n": 1}, author=writer)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    services.version_approve(
        version=version, reviewer=checker, label="production", confirm_weak_evidence=True
    )
    code, out, err = run_cli("gate", "--set", "bare", "--label", "production")
    assert code == 2 and "nothing to gate" in err and out == ""


def test_the_documented_ci_job_is_ten_lines_and_its_gate_runs(gated, tmp_path):
    docs = Path(__file__).resolve().parent.parent / "docs" / "integrating.md"
    job = re.search(r"```yaml\n(.*?)```", docs.read_text(), re.S).group(1)
    assert len(job.splitlines()) == 10
    command = re.search(r"manage\.py questions (gate .*)", job).group(1)
    args = [
        {"gestures": "g", "gate.xml": str(tmp_path / "gate.xml")}.get(a, a)
        for a in shlex.split(command)
    ]
    code, _, err = run_cli(*args)
    assert code == 0, err  # desk's 2/3 is above the documented floor; a replay flips nothing
    assert ET.parse(tmp_path / "gate.xml").getroot().get("failures") == "0"
    code, _, err = run_cli(*[{"0.5": "0.7"}.get(a, a) for a in args])
    assert code == 1 and "question desk" in err  # … and below a higher one


# --- the rules, without a run ---------------------------------------------------------------------


def measured(**kw) -> gate.Measured:
    q = gate.QuestionMeasure("q", "noul", labelled=4, checked=4, passed=3)
    base = {
        "states": 4,
        "unanswered": {},
        "checked": 4,
        "passed": 3,
        "questions": {"q": q},
        "ece": {"noul": (0.1, 4), "choice": (None, 0)},
        "flips": (1, 4),
        "cost_per_call": 0.002,
        "cost_calls": 4,
        "price_per_million": 0.042,
    }
    return gate.Measured(**(base | kw))


def test_a_miss_says_the_expected_answer_as_the_contract_writes_it():
    q = gate.QuestionMeasure(
        "q", "noul", labelled=2, checked=2, passed=0, missed=[gate.Miss("s", True, "false 0.27")]
    )
    [result] = gate.judge(measured(questions={"q": q}), gate.Bounds(min_pass_rate=0.5)).questions
    assert "s (expected true, answered false 0.27)" in result.message
    assert "True" not in result.message


@pytest.mark.parametrize(
    ("bounds", "ok"),
    [
        (gate.Bounds(min_pass_rate=0.75), True),  # a floor is met at equality
        (gate.Bounds(min_pass_rate=0.76), False),
        (gate.Bounds(max_ece=0.1), True),
        (gate.Bounds(max_ece=0.09), False),
        (gate.Bounds(max_flip_rate=0.25), True),
        (gate.Bounds(max_flip_rate=0.2), False),
        (gate.Bounds(max_cost_per_1k=2), True),
        (gate.Bounds(max_cost_per_1k=1.99), False),
    ],
)
def test_each_bound_is_met_at_its_limit(bounds, ok):
    assert gate.judge(measured(), bounds).ok is ok


@pytest.mark.parametrize(
    ("what", "bounds", "words"),
    [
        ({"checked": 0, "passed": 0}, gate.Bounds(min_pass_rate=0), "nothing was checked"),
        ({"ece": {"noul": (None, 0)}}, gate.Bounds(max_ece=1), "nothing to calibrate"),
        (
            {"flips": None, "flips_missing": "no evidence"},
            gate.Bounds(max_flip_rate=1),
            "no evidence",
        ),
        ({"cost_per_call": None}, gate.Bounds(max_cost_per_1k=100), "no cost known"),
    ],
)
def test_a_bound_that_cannot_be_measured_fails_closed(what, bounds, words):
    result = gate.judge(measured(**what), bounds)
    assert result.ok is False
    assert words in next(b for b in result.bounds if b.name != gate.ANSWERED).detail


def test_a_question_no_state_expects_is_skipped_not_failed():
    unlabelled = gate.QuestionMeasure("other", "score")
    result = gate.judge(
        measured(questions={"q": measured().questions["q"], "other": unlabelled}),
        gate.Bounds(min_pass_rate=0.5),
    )
    assert result.ok is True
    root = ET.fromstring(gate.junit_xml(result, suite="s", classname="c"))
    [skipped] = [c for c in root.iter("testcase") if c.find("skipped") is not None]
    assert skipped.get("name") == "other" and root.get("failures") == "0"


def test_a_version_approved_without_evidence_cannot_hold_a_flip_ceiling():
    writer, checker = factories.author("w"), factories.reviewer("r")
    qs = factories.question_set("weak", owner=writer, doc=DOC)
    services.sample_state_create(
        question_set=qs, name="x", state={"n": 1}, expected={"urgent": True}, author=writer
    )
    version = services.version_submit(version=factories.draft(qs), author=writer)
    services.version_approve(
        version=version, reviewer=checker, label="production", confirm_weak_evidence=True
    )
    code, out, _ = run_cli(
        *("gate", "--set", "weak", "--label", "production", "--max-flip-rate", "1", "--json")
    )
    flips = bound(json.loads(out), "max_flip_rate")
    assert code == 1 and flips["ok"] is False and "approved with no evidence run" in flips["detail"]


def test_strict_lints_is_a_bound_of_its_own_naming_each_open_warning():
    line = "questions.q.instructions: “1k” writes a number in one form … [numeric_representation]"
    failing = gate.judge(measured(), gate.Bounds(), gate.LintCheck([line], accepted=2))
    [lints] = [b for b in failing.bounds if b.name == gate.LINTS]
    assert (failing.ok, lints.ok, lints.flag, lints.value) == (False, False, "--strict-lints", 1)
    assert lints.detail.startswith("1 lint warning open (2 accepted with a reason): questions.q")
    assert "accept each with a reason (questions lint-accept)" in lints.detail
    holding = gate.judge(measured(), gate.Bounds(), gate.LintCheck([], accepted=1))
    assert holding.ok is True
    assert holding.bounds[-1].detail == "no lint warning open (1 accepted with a reason)"
    assert gate.LINTS not in {b.name for b in gate.judge(measured(), gate.Bounds()).bounds}
    root = ET.fromstring(gate.junit_xml(failing, suite="s", classname="c"))
    [case] = [c for c in root.iter("testcase") if c.get("name") == gate.LINTS]
    assert case.get("classname") == "c.bounds" and case.find("failure") is not None


def test_the_gate_takes_strict_lints_and_holds_with_none_open(gated):
    code, result = gate_json("--strict-lints")
    assert code == 0 and bound(result, "lints")["ok"] is True  # DOC has no lint warning
    assert bound(result, "lints")["detail"] == "no lint warning open"
