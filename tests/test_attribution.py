"""Attribution: the parts a question and a state are made of, the requests with one left out,
the report against the noise floor (pure); and the run through the batch engine against a
loopback model that reads the words, recorded, with its CLI and its errors."""

from __future__ import annotations

import json

import pytest

from questions import services
from questions.core import attribution, check, spec
from questions.models import BatchItem, BatchRun, Decision
from questions.services import attribution as attribution_services
from questions.services import errors
from tests import factories
from tests.providers import ROUTING, ROUTING_STATE, Provider, overlap_answers, run_cli

LIMITS = spec.Limits()


def parsed(doc):
    return check.validate(doc, limits=LIMITS, lints=False).document.questions


# --- the parts (pure) -----------------------------------------------------------------------------


def test_every_part_is_named_where_it_is():
    the_plan = attribution.plan(parsed(ROUTING), ROUTING_STATE, limits=LIMITS)
    assert [(p.question, p.path, p.text) for p in the_plan.parts] == [
        ("desk", "instructions[0]", "Which desk should take the ticket?"),
        ("desk", "instructions[1]", "Read the whole ticket."),
        ("desk", "criteria.billing", "a refund of a charge on a card or an invoice"),
        ("desk", "criteria.tech.what", "crashes and errors in the app"),
        ("desk", "criteria.tech.not_for", "questions about payments"),
        ("desk", "criteria.tech.examples[0]", "the app crashes on login"),
        ("desk", "criteria.other", "anything else"),
        ("urgent", "instructions[0]", "Is the customer in a hurry?"),
        ("urgent", "criteria.true", "wants an answer today"),
        ("urgent", "criteria.false", "no deadline given"),
        ("tone", "instructions[0]", "How angry is the customer?"),
        ("tone", "criteria[0]", "calm and polite"),
        ("tone", "criteria[1]", "annoyed"),
        ("tone", "criteria[2]", "furious and shouting"),
        (None, "state.ticket", "Please refund the invoice today."),
        (None, "state.note", "charged twice on my card"),
    ]
    assert the_plan.skipped == []
    assert the_plan.calls == 1 + attribution.DEFAULT_REPEATS + 16


def test_a_text_state_is_left_out_a_sentence_at_a_time():
    the_plan = attribution.plan(
        parsed(ROUTING), "My card was charged twice. Refund it!", question="desk", limits=LIMITS
    )
    state_parts = [p for p in the_plan.parts if p.question is None]
    assert [p.path for p in state_parts] == ["state[0]", "state[1]"]
    _, state = attribution.leave_out(
        parsed(ROUTING), "My card was charged twice. Refund it!", state_parts[0]
    )
    assert state == "Refund it!"


def test_each_left_out_request_asks_one_question_without_its_part_and_the_rest_stays():
    questions = parsed(ROUTING)
    the_plan = attribution.plan(questions, ROUTING_STATE, limits=LIMITS)
    by_path = {(p.question, p.path): p for p in the_plan.parts}
    asked, state = attribution.leave_out(
        questions, ROUTING_STATE, by_path["desk", "criteria.billing"]
    )
    assert list(asked) == ["desk"] and state == ROUTING_STATE
    assert asked["desk"].criteria["billing"] is None
    asked, _ = attribution.leave_out(
        questions, ROUTING_STATE, by_path["desk", "criteria.tech.not_for"]
    )
    assert asked["desk"].criteria["tech"] == {
        "what": "crashes and errors in the app",
        "examples": ["the app crashes on login"],
    }
    asked, _ = attribution.leave_out(questions, ROUTING_STATE, by_path["desk", "instructions[0]"])
    assert asked["desk"].instructions == "Read the whole ticket."
    asked, _ = attribution.leave_out(questions, ROUTING_STATE, by_path["tone", "criteria[1]"])
    assert asked["tone"].criteria == ["calm and polite", "", "furious and shouting"]
    asked, _ = attribution.leave_out(questions, ROUTING_STATE, by_path["urgent", "criteria.true"])
    assert asked["urgent"].criteria == {"false": "no deadline given"}
    asked, state = attribution.leave_out(questions, ROUTING_STATE, by_path[None, "state.note"])
    assert list(asked) == ["desk", "urgent", "tone"] and state == {
        "ticket": ROUTING_STATE["ticket"]
    }
    assert questions == parsed(ROUTING)  # nothing written was changed


def test_a_part_whose_removal_makes_the_request_invalid_is_not_asked_and_says_why():
    questions = parsed({"spam": {"type": "noul", "instructions": "Is it spam?"}})
    the_plan = attribution.plan(questions, {"text": "hi"}, limits=LIMITS)
    assert [p.path for p in the_plan.parts] == ["state.text"]
    [skipped] = the_plan.skipped
    assert skipped.part.path == "instructions[0]"
    assert "invalid" in skipped.reason and "judge" in skipped.reason


def test_more_calls_than_an_attribution_asks_are_refused_before_anything_is_asked():
    state = {f"field{i}": "words" for i in range(attribution.MAX_CALLS)}
    with pytest.raises(ValueError, match="at most 2,000: attribute one question"):
        attribution.plan(parsed(ROUTING), state, limits=LIMITS)


def test_bad_question_and_repeat_counts_are_refused():
    with pytest.raises(KeyError):
        attribution.plan(parsed(ROUTING), ROUTING_STATE, question="nope", limits=LIMITS)
    with pytest.raises(ValueError, match="1 to 10 repeats"):
        attribution.plan(parsed(ROUTING), ROUTING_STATE, repeats=0, limits=LIMITS)


# --- the report (pure) ----------------------------------------------------------------------------


def _choice(p_billing):
    rest = round((1 - p_billing) / 2, 2)
    return {
        "type": "choice",
        "choice": "billing",
        "confidence": p_billing,
        "probabilities": {"billing": p_billing, "tech": rest, "other": rest},
    }


def test_only_what_moves_more_than_the_noise_floor_is_decisive():
    questions = parsed(ROUTING)
    the_plan = attribution.plan(questions, ROUTING_STATE, question="desk", repeats=2, limits=LIMITS)
    paths = [p.path for p in the_plan.parts]
    answers = {0: {"desk": _choice(0.80)}, 1: {"desk": _choice(0.74)}, 2: {"desk": _choice(0.83)}}
    moved = {"criteria.billing": 0.30, "state.ticket": 0.70, "instructions[0]": 0.75}
    for i, path in enumerate(paths):
        answers[3 + i] = {"desk": _choice(moved.get(path, 0.80))}
    answers[3 + paths.index("criteria.other")] = None  # that call failed
    [r] = attribution.report(the_plan, answers)
    assert r.noise_floor == pytest.approx(0.06)
    assert [(f.part.path, round(f.delta, 2), f.decisive) for f in r.findings[:3]] == [
        ("criteria.billing", -0.5, True),
        ("state.ticket", -0.1, True),
        ("instructions[0]", -0.05, False),  # within the floor
    ]
    failed = next(f for f in r.findings if f.part.path == "criteria.other")
    assert failed.delta is None and not failed.decisive and r.findings[-1] is failed
    assert r.rank(r.findings[1].part) == 2 and r.rank(r.findings[2].part) is None


def test_an_unmoving_model_still_has_the_rounding_floor():
    the_plan = attribution.plan(
        parsed(ROUTING), ROUTING_STATE, question="urgent", repeats=1, limits=LIMITS
    )
    noul = {"type": "noul", "noul": 0.3}  # came down false: delta is in P(false)
    answers = {v: {"urgent": noul} for v in range(the_plan.calls)}
    answers[2] = {"urgent": {"type": "noul", "noul": 0.31}}
    [r] = attribution.report(the_plan, answers)
    assert r.noise_floor == attribution.ROUNDING_FLOOR
    assert r.findings[0].delta == pytest.approx(-0.01) and not r.findings[0].decisive


# --- the run: batch engine, recorded, CLI ---------------------------------------------------


@pytest.fixture
def reader(settings):
    p = Provider(overlap_answers)
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k-attribution", p.url
    yield p
    p.stop()


@pytest.fixture
def routing():
    writer = factories.author()
    qs = factories.question_set(owner=writer, doc=ROUTING)
    services.sample_state_create(question_set=qs, name="refund", state=ROUTING_STATE, author=writer)
    return services.open_draft(qs), writer


@pytest.mark.django_db(transaction=True)
def test_attribution_on_a_model_that_reads_the_words_ranks_the_overlapping_words_first(
    reader, routing
):
    version, writer = routing
    plan = attribution_services.attribution_plan(
        version=version, state="refund", backend="typesafe", user=writer
    )
    run = attribution_services.attribution_start(plan=plan, user=writer, enqueue=False)
    run = services.batch_execute(run.pk)
    assert run.status == BatchRun.Status.DONE and run.kind == attribution.KIND
    assert len(reader.requests) == plan.calls == run.items.count()
    assert Decision.objects.filter(version=version).count() == plan.calls  # every call recorded
    left_out = [r["body"] for r in reader.requests if list(r["body"]["questions"]) == ["desk"]]
    assert {json.dumps(b["questions"]["desk"]["criteria"]["billing"]) for b in left_out} == {
        "null",
        json.dumps(ROUTING["desk"]["criteria"]["billing"]),
    }
    asked = len(reader.requests)
    reports = {r.question: r for r in attribution_services.attribution_report(run)}
    assert len(reader.requests) == asked  # reading the report asks nothing
    desk, urgent, tone = reports["desk"], reports["urgent"], reports["tone"]
    assert desk.answer["choice"] == "billing"
    assert desk.findings[0].part.path == "criteria.billing" and desk.findings[0].decisive
    assert desk.findings[0].delta < 0
    assert {f.part.path for f in desk.decisive} == {
        "criteria.billing",
        "state.ticket",
        "state.note",
    }
    assert urgent.findings[0].part.path == "criteria.true" and urgent.findings[0].decisive
    assert tone.decisive == []  # no level shares a word with the state
    assert all(r.noise_floor == attribution.ROUNDING_FLOOR for r in reports.values())


def _cli(*extra):
    return run_cli("attribute", "--set", "s-attr", "--version", "1", "--state", "refund", *extra)


@pytest.fixture
def routing_cli():
    writer = factories.author()
    qs = factories.question_set("s-attr", owner=writer, doc=ROUTING)
    services.sample_state_create(question_set=qs, name="refund", state=ROUTING_STATE, author=writer)
    return qs


@pytest.mark.django_db(transaction=True)
def test_the_cli_prints_exactly_the_json_shape(reader, routing_cli):
    code, out, err = _cli("--question", "desk", "--json")
    assert code == 0, err
    assert "calls via typesafe" in err and "estimated cost" in err
    found = json.loads(out)
    assert list(found) == ["question", "answer", "noise_floor", "parts"]
    assert found["question"] == "desk" and found["answer"]["choice"] == "billing"
    assert found["noise_floor"] == attribution.ROUNDING_FLOOR
    assert all(list(p) == ["path", "text", "delta", "decisive"] for p in found["parts"])
    assert found["parts"][0] == {
        "path": "criteria.billing",
        "text": ROUTING["desk"]["criteria"]["billing"],
        "delta": found["parts"][0]["delta"],
        "decisive": True,
    }
    code, out, _ = _cli("--json")
    assert code == 0 and [r["question"] for r in json.loads(out)] == ["desk", "urgent", "tone"]
    code, out, _ = _cli("--question", "urgent")
    assert code == 0 and "#1 decisive" in out and "criteria.true" in out


@pytest.mark.django_db(transaction=True)
def test_bad_names_are_refused_clearly_and_nothing_is_asked(reader, routing_cli):
    code, out, err = _cli("--question", "nope")
    assert code == 1 and "has no question 'nope'" in err and "desk, urgent, tone" in err
    code, out, err = run_cli(
        "attribute", "--set", "s-attr", "--version", "1", "--state", "gone", "--json"
    )
    assert code == 1 and json.loads(out) == {
        "status": 404,
        "detail": "s-attr has no sample state named 'gone'; its states: refund.",
    }
    code, out, err = _cli("--backend", "recorded")
    assert code == 1 and "replays recordings" in err
    code, out, err = run_cli("attribute", "--set", "s-attr", "--version", "9", "--state", "refund")
    assert code == 1 and "has no version 9" in err
    assert reader.requests == [] and not BatchItem.objects.exists()


@pytest.mark.django_db
def test_only_those_who_may_ask_live_plan_an_attribution(routing):
    version, _ = routing
    with pytest.raises(errors.NotAllowed):
        attribution_services.attribution_plan(
            version=version, state="refund", backend="typesafe", user=factories.user()
        )


# --- the page: launch, plan, start, progress (htmx partials) ------------------------------------


def _post(client, version, name, **data):
    slug, number = version.question_set.slug, version.number
    return client.post(f"/sets/{slug}/v{number}/attribution/{name}/", data)


@pytest.mark.django_db(transaction=True)
def test_the_page_shows_the_calls_and_cost_first_then_marks_the_decisive_words(reader, routing):
    from django.test import Client

    version, writer = routing
    client = Client()
    client.force_login(writer)
    slug = version.question_set.slug
    launch = client.get(f"/sets/{slug}/v1/attribution/?question=desk&into=attribution-k1")
    assert launch.status_code == 200 and b'name="state"' in launch.content
    assert b'value="refund"' in launch.content and reader.requests == []
    shown = _post(client, version, "plan", state="refund", question="desk", into="attribution-k1")
    html = shown.content.decode()
    calls = 1 + attribution.DEFAULT_REPEATS + 9  # desk's 7 parts and the state's 2
    assert shown.status_code == 200 and f"{calls} live calls" in html
    assert "estimated cost" in html and 'id="attribution-k1"' in html
    assert reader.requests == [] and not BatchRun.objects.exists()  # nothing asked yet
    started = _post(
        client, version, "start", state="refund", question="desk", into="attribution-k1"
    )
    run = BatchRun.objects.get(kind=attribution.KIND)
    assert started.status_code == 200 and "every 1s" in started.content.decode()
    services.batch_execute(run.pk)  # what the worker does
    asked = len(reader.requests)
    assert asked == calls
    page = client.get(f"/runs/{run.pk}/attribution/?into=attribution-k1").content.decode()
    assert len(reader.requests) == asked  # opening it again asks nothing
    assert "every 1s" not in page
    billing = ROUTING["desk"]["criteria"]["billing"]
    assert (
        f'<span class="attr-rank">#1</span> {billing} <span class="attr-delta">−0.50</span>' in page
    )
    assert '<span class="attr-plain" title="criteria.tech.what">' in page
    assert "state ticket" in page and "noise floor 0.01" in page
    run_page = client.get(f"/runs/{run.pk}/").content.decode()  # the run's own page: the same
    assert "Which words decide" in run_page and '<span class="attr-rank">#1</span>' in run_page
    assert len(reader.requests) == asked


@pytest.mark.django_db
def test_the_page_refuses_a_bad_state_or_question_by_name_and_a_reader_may_not_ask(reader, routing):
    from django.test import Client

    version, writer = routing
    client = Client()
    client.force_login(writer)
    shown = _post(client, version, "plan", state="gone", question="desk")
    assert (
        shown.status_code == 200
        and "has no sample state named &#x27;gone&#x27;" in shown.content.decode()
    )
    shown = _post(client, version, "plan", state="refund", question="nope")
    assert "has no question &#x27;nope&#x27;" in shown.content.decode()
    shown = _post(client, version, "plan", question="desk")
    assert "Pick the sample state" in shown.content.decode()
    reader_client = Client()
    reader_client.force_login(factories.user())
    assert _post(reader_client, version, "start", state="refund").status_code == 403
    assert not BatchRun.objects.exists()
