"""Invariance and coherence controls: the variants an invariance control asks (pure), and each
verdict on a loopback backend built to violate it — asked through the batch engine and the CLI
(`questions controls --invariance --json`), and shown on the run page."""

from __future__ import annotations

import json

import pytest

from questions import services
from questions.core import check, invariance, spec
from questions.dev import standin
from questions.models import BatchRun
from questions.selectors import control_reports
from questions.services import controls as control_services
from tests import factories
from tests.providers import ROUTING, ROUTING_STATE, Provider, overlap_answers, run_cli

LIMITS = spec.Limits()


def parsed(doc):
    return check.validate(doc, limits=LIMITS, lints=False).document.questions


def test_the_variants_rename_reorder_negate_clone_and_ask_alone():
    questions = parsed(ROUTING)
    plan = invariance.variants(questions)
    assert [(v.check, v.question) for v in plan] == [
        (None, None),
        ("renamed", None),
        ("reordered", None),
        ("negated", None),
        ("cloned", None),
        ("alone", "desk"),
        ("alone", "urgent"),
        ("alone", "tone"),
    ]
    renamed = invariance.asked(questions, plan[1])
    assert list(renamed) == ["q1", "q2", "q3"]
    assert [q.to_json() for q in renamed.values()] == [q.to_json() for q in questions.values()]
    assert list(invariance.asked(questions, plan[2])) == ["tone", "urgent", "desk"]
    negated = invariance.asked(questions, plan[3])["urgent"]
    assert negated.instructions == "It is not the case that: Is the customer in a hurry?"
    assert negated.criteria == {"false": "wants an answer today", "true": "no deadline given"}
    cloned = invariance.asked(questions, plan[4])["desk"]
    assert cloned.criteria["billing (clone)"] == cloned.criteria["billing"]
    assert list(invariance.asked(questions, plan[6])) == ["urgent"]
    one = parsed({"only": {"type": "score", "instructions": "How?", "criteria": ["a", "b"]}})
    assert [v.check for v in invariance.variants(one)] == [None, "renamed"]


# --- loopback backends, each built to break one promise ----------------------------------------


def coherent(body):
    """Reads the words (`overlap_answers`) and splits the mass of options with the same
    description among them: every invariance check holds."""
    out = overlap_answers(body)
    for qid, q in body["questions"].items():
        if q["type"] != "choice":
            continue
        shared: dict[str, list[str]] = {}
        for name, text in q["criteria"].items():
            shared.setdefault(json.dumps(text), []).append(name)
        if all(len(names) == 1 for names in shared.values()):
            continue
        single = {k: v for k, v in q["criteria"].items() if k == shared[json.dumps(v)][0]}
        alone = overlap_answers({**body, "questions": {qid: {**q, "criteria": single}}})
        p = alone["answers"][qid]["probabilities"]
        split = {}
        for names in shared.values():
            each = round(p[names[0]] / len(names), 2)
            split.update({n: each for n in names})
        top = max(split, key=split.get)
        split[top] = round(split[top] + 1 - sum(split.values()), 2)
        out["answers"][qid] = {**out["answers"][qid], "probabilities": split, "choice": top}
    return out


def keys_matter(body):
    """Reads the id: a question whose id is q1, q2, … is answered as if its state were empty."""
    out = coherent(body)
    opaque = {k: q for k, q in body["questions"].items() if k.startswith("q")}
    if opaque:
        out["answers"].update(coherent({**body, "state": {}, "questions": opaque})["answers"])
    return out


def order_matters(body):
    """The first question asked is answered as if its state were empty."""
    out = coherent(body)
    first = next(iter(body["questions"]))
    if len(body["questions"]) > 1:
        out["answers"].update(
            coherent({**body, "state": {}, "questions": {first: body["questions"][first]}})[
                "answers"
            ]
        )
    return out


def batch_leaks(body):
    """A noul asked with others leans on them: its P(true) is 0.95 in a batch."""
    out = coherent(body)
    if len(body["questions"]) > 1:
        for qid, q in body["questions"].items():
            if q["type"] == "noul":
                out["answers"][qid] = {"type": "noul", "noul": 0.95}
    return out


def negation_blind(body):
    """A noul's P(true) ignores its words: negating the statement changes nothing."""
    out = coherent(body)
    for qid, q in body["questions"].items():
        if q["type"] == "noul":
            out["answers"][qid] = {"type": "noul", "noul": 0.75}
    return out


@pytest.fixture
def routing_set():
    writer = factories.author()
    qs = factories.question_set("inv", owner=writer, doc=ROUTING)
    services.sample_state_create(question_set=qs, name="refund", state=ROUTING_STATE, author=writer)
    services.sample_state_create(
        question_set=qs, name="crash", state={"ticket": "the app crashes today"}, author=writer
    )
    return services.open_draft(qs), writer


def _broken(answer, version, writer, settings):
    p = Provider(answer)
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k-inv", p.url
    try:
        run = control_services.invariance_create(
            version=version, backend="typesafe", user=writer, enqueue=False
        )
        run = services.batch_execute(run.pk)
    finally:
        p.stop()
    assert run.status == BatchRun.Status.DONE
    assert len(p.requests) == run.items.count() == 2 * 8
    report = control_reports.invariance_report(run)
    return {
        (qid, name) for qid, checks in report.items() for name, c in checks.items() if not c.holds
    }, report


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("answer", "broken"),
    [
        (coherent, set()),
        (keys_matter, {("desk", "renamed"), ("urgent", "renamed")}),
        # desk is first as written, tone (which no state's words move) first reversed
        (order_matters, {("desk", "reordered"), ("desk", "alone")}),
        (batch_leaks, {("urgent", "alone"), ("urgent", "negated")}),
        (negation_blind, {("urgent", "negated")}),
        (overlap_answers, {("desk", "cloned")}),  # two options alike: mass grows, not splits
    ],
    ids=["coherent", "keys", "order", "batch", "negation", "clone"],
)
def test_each_verdict_breaks_on_the_backend_built_to_break_it(
    answer, broken, routing_set, settings
):
    version, writer = routing_set
    found, report = _broken(answer, version, writer, settings)
    assert found == broken
    assert set(report["tone"]) == {
        "renamed",
        "reordered",
        "alone",
    }  # a score: not negated, not cloned


@pytest.mark.django_db(transaction=True)
def test_the_cli_prints_the_controls_json_shape_with_verdicts_and_fails_on_a_break(settings):
    writer = factories.author()
    qs = factories.question_set("inv-cli", owner=writer, doc=ROUTING)
    services.sample_state_create(question_set=qs, name="refund", state=ROUTING_STATE, author=writer)
    p = Provider(negation_blind)
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k-inv", p.url
    try:
        code, out, err = run_cli(
            "controls",
            "--set",
            "inv-cli",
            "--version",
            "1",
            "--backend",
            "typesafe",
            "--invariance",
            "--json",
        )
        assert code == 1, err
        found = json.loads(out)
        control = found["control"]
        assert control["kind"] == "invariance" and control["calls"] == 8
        assert control["broken"] == ["urgent"]
        assert control["questions"]["urgent"]["checks"]["negated"] == {
            "compared": 1,
            "broken": 1,
            "broken_states": ["refund"],
            "largest": 0.5,
            "holds": False,
        }
        assert control["questions"]["desk"]["checks"]["renamed"]["holds"] is True
        code, out, err = run_cli(
            "controls",
            "--set",
            "inv-cli",
            "--version",
            "1",
            "--backend",
            "typesafe",
            "--invariance",
        )
        assert code == 1 and "negated BROKEN" in out and "urgent: an invariance check" in err
        run = BatchRun.objects.filter(kind=invariance.KIND).latest("id")
        from django.test import Client

        client = Client()
        client.force_login(writer)
        page = client.get(f"/runs/{run.pk}/").content.decode()
        assert "Invariance and coherence" in page and "<strong>broken</strong> in 1 of 1" in page
    finally:
        p.stop()


@pytest.mark.django_db(transaction=True)
def test_on_the_local_stand_in_a_negated_noul_holds(routing_set, settings):
    """The stand-in reads "It is not the case that: …" as the statement's opposite, so the
    control judges its nouls instead of calling every one broken."""
    version, writer = routing_set
    server = standin.serve_in_thread()
    settings.TYPESAFE_API_KEY = standin.KEY
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        run = control_services.invariance_create(
            version=version, backend="typesafe", user=writer, enqueue=False
        )
        run = services.batch_execute(run.pk)
    finally:
        server.shutdown()
        server.server_close()
    assert run.status == BatchRun.Status.DONE and run.items.filter(status="failed").count() == 0
    negated = control_reports.invariance_report(run)["urgent"]["negated"]
    assert (negated.compared, negated.broken, negated.holds) == (2, [], True)
    assert negated.largest <= 0.01  # 1 − P(true), rounded to two decimals


def _said_by_the_reference(name: str) -> str:
    """A subcommand's description and epilog, as docs/cli.md prints them, on one line."""
    from questions.cli import reference

    (sub,) = [p for n, _, p in reference.subcommands(reference.parser()) if n == name]
    return " ".join(f"{sub.description} {sub.epilog}".split())


@pytest.mark.django_db(transaction=True)
def test_invariance_exits_with_the_statuses_its_reference_names(routing_set, settings):
    said = _said_by_the_reference("controls")
    assert "Exit status: 0 when every call answered and nothing was found" in said
    assert "an invariance check is broken, or the control is refused" in said
    assert "2 when the command line cannot be parsed" in said
    version, _ = routing_set
    asked = ("controls", "--set", "inv", "--version", str(version.number), "--invariance")
    p = Provider(coherent)
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k-inv", p.url
    try:
        code, out, err = run_cli(*asked, "--backend", "typesafe", "--json")
    finally:
        p.stop()
    assert code == 0, err  # every check held
    assert json.loads(out)["control"]["broken"] == []
    # a replay cannot answer a variant: refused, the reason and its status given
    code, out, _ = run_cli(*asked, "--backend", "recorded", "--json")
    assert code == 1 and json.loads(out)["status"] == 422
    code, _, err = run_cli(*asked[:4], "9", "--invariance", "--backend", "typesafe")
    assert code == 1 and "inv has no version 9" in err


@pytest.mark.django_db
def test_the_controls_page_starts_an_invariance_control(routing_set, settings):
    from django.test import Client

    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k-inv", "http://127.0.0.1:9"
    _, writer = routing_set
    client = Client()
    client.force_login(writer)
    page = client.get("/sets/inv/controls/").content.decode()
    assert "Check invariance and coherence" in page and "ids renamed" in page
    sent = client.post(
        "/sets/inv/controls/start/",
        {"version": "1", "kind": "invariance", "count": "1", "backend": "typesafe"},
    )
    run = BatchRun.objects.get(kind=invariance.KIND)
    assert sent.status_code == 302 and sent.url == f"/runs/{run.pk}/"
    assert run.items.count() == 2 * len(invariance.variants(parsed(ROUTING)))
