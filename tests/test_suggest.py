"""Suggest: rewordings drafted through the `llm` wire (a loopback chat model) from a run's
failing training states and their attribution, each checked and proven on the held-out states
through a loopback provider whose answers follow the words it is sent — so a candidate can be
truly better, truly worse or no different; the plan and its cap before anything is asked; the
candidates ranked by their proof; a draft made from one with where it came from."""

from __future__ import annotations

import json

import pytest

from questions import roles, services
from questions.core import proof, rewording
from questions.engine.backends import drafting
from questions.models import Decision, ReviewEvent, Suggestion, Version
from questions.selectors.holdout import holdout_ids
from questions.services import suggestions
from tests import factories
from tests.helpers import add_suggest_state as add_state
from tests.helpers import suggestable_set as a_set
from tests.providers import BETTER_WORDS as BETTER
from tests.providers import KEY, SAME_WORDS, Provider, run_cli
from tests.providers import SUGGEST_DOC as DOC
from tests.providers import SUGGEST_QID as QID
from tests.providers import chat_answer as chat
from tests.providers import decides_by_words as decide
from tests.providers import decides_or_drafts as reply
from tests.providers import drafted_candidate as candidate

pytestmark = pytest.mark.django_db


@pytest.fixture
def provider(provider_factory, settings):
    """One loopback server for both wires: typesafe's decisions and llm's drafting."""
    server = provider_factory(Provider(default=reply), key=KEY)
    settings.LLM_API_KEY, settings.LLM_BASE_URL = KEY, server.url
    settings.LLM_PRICE_PER_MILLION_INPUT_TOKENS = 2.0
    return server


def suggest(*args: str) -> tuple[int, dict, str]:
    code, out, err = run_cli(
        "suggest", "--set", "desks", "--version", "1", "--question", QID, *args
    )
    return code, (json.loads(out) if out.strip().startswith("{") else {}), err


def drafting_requests(provider) -> list[dict]:
    return [r for r in provider.requests if drafting.is_drafting(r["body"])]


# --- the command line ------------------------------------------------------------------------


def test_three_candidates_are_drafted_and_proven_better_worse_and_not_proven(provider):
    qs, _ = a_set(provider)  # a new user's set of 60 labelled states, or more
    assert qs.sample_states.exclude(expected={}).count() >= 60
    code, found, err = suggest("--json")
    assert code == 0, err
    assert "failing training state" in err and "estimated cost $" in err  # the plan, first
    verdicts = {c["number"]: (c["status"], c["verdict"]) for c in found["candidates"]}
    assert verdicts == {
        1: ("proven", proof.BETTER),
        2: ("proven", proof.WORSE),
        3: ("proven", proof.NOT_PROVEN),
    }
    assert [c["number"] for c in found["candidates"]] == [1, 3, 2]  # ranked by the proof
    better = found["candidates"][0]
    assert better["proof"]["difference_interval"][0] > 0 and better["proof"]["down"] == 0
    assert better["changes"] == [
        {
            "label": "option `billing`",
            "kind": "changed",
            "before": "money",
            "after": "money or a refund",
            "word_diff": "money{+ or a refund+}",
        }
    ]
    assert found["status"] == "done" and found["failed_calls"] == 0
    assert found["calls"] == found["plan"]["calls"] == len(provider.requests)
    held_out = found["plan"]["held_out"]
    assert better["proof"]["n"] == held_out == len(holdout_ids(qs)) - 0  # every held-out state
    assert found["draft_cost"] == pytest.approx(900 * 2.0 / 1_000_000)
    assert Suggestion.objects.get().status == "done"


def test_the_drafter_sees_training_states_only_and_only_the_question_s_own_ids(provider):
    qs, _ = a_set(provider)
    suggest("--json")
    (request,) = drafting_requests(provider)
    body = request["body"]
    assert request["path"] == "/chat/completions"
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    schema = body["response_format"]["json_schema"]["schema"]
    one = schema["properties"]["c1"]
    assert list(schema["properties"]) == ["c1", "c2", "c3"]
    assert one["required"] == ["instructions", "criteria", "why"]
    assert one["properties"]["criteria"]["required"] == ["billing", "tech", "other"]
    assert one["properties"]["criteria"]["additionalProperties"] is False
    assert QID.encode() not in request["raw"]  # addressing, never content
    sent = drafting.read_request(body)
    held = {
        json.dumps(s.state, sort_keys=True) for s in qs.sample_states.filter(pk__in=holdout_ids(qs))
    }
    told = [json.dumps(f["state"], sort_keys=True) for f in sent["failing"] + sent["passing"]]
    assert told and not held & set(told)  # never a held-out state
    assert {f["expected"] for f in sent["failing"]} == {"billing"}
    assert {f["answered"] for f in sent["failing"]} == {"other"}
    evidence = sent["failing"][0]["evidence"]
    assert evidence and evidence[0]["part"] == "criteria.other" and evidence[0]["delta"] < 0
    assert "pulled" in evidence[0]["says"] and "`other`" in evidence[0]["says"]


def test_the_text_lists_word_diffs_ranked_and_how_to_apply(provider):
    a_set(provider)
    code, out, err = run_cli("suggest", "--set", "desks", "--version", "1", "--question", QID)
    assert code == 0, err
    first, worse = out.index("candidate 1: better"), out.index("candidate 2: worse")
    assert first < out.index("candidate 3: not proven") < worse
    assert "option `billing`: money{+ or a refund+}" in out
    assert "option `billing`: money{+ or bugs+}" in out
    assert "up, 0 down, McNemar p = " in out and "shuffled floor: " in out
    assert f"--question {QID} --apply 1 --user U" in out
    assert "evidence: `criteria.other` " in out


def test_the_plan_is_capped_and_a_dry_run_asks_nothing(provider):
    a_set(provider)
    code, found, _ = suggest("--json", "--max-calls", "5")
    assert code == 2 and "more than the limit of 5 calls" in found["detail"]
    code, found, err = suggest("--json", "--dry-run")
    assert code == 0 and found["plan"]["calls"] > 5 and "calls" in err
    plan = found["plan"]
    assert plan["calls"] == plan["attribution_calls"] + 1 + plan["proof_calls"]
    assert provider.requests == [] and Suggestion.objects.count() == 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--question", "nope"), "has no question"),
        (("--candidates", "9"), "1 to 5 candidates"),
    ],
    ids=["no such question", "too many candidates"],
)
def test_bad_input_exits_2_and_asks_nothing(provider, args, words):
    a_set(provider)
    code, _out, err = run_cli(
        "suggest", "--set", "desks", "--version", "1", "--question", QID, *args
    )
    assert code == 2 and words in err
    assert provider.requests == []


def test_nothing_failing_on_the_training_side_is_refused(provider):
    writer = factories.author()
    qs = factories.question_set("desks", owner=writer, doc=DOC)
    for i in range(12):
        add_state(qs, writer, i, "tech")  # every one passes
    v1 = factories.draft(qs)
    run = services.batch_create(version=v1, backend="typesafe", user=writer, enqueue=False)
    services.batch_execute(run.pk)
    code, found, _ = suggest("--json")
    assert code == 2 and "nothing to draft from" in found["detail"]


def test_apply_makes_a_draft_with_its_provenance_once(provider):
    qs, writer = a_set(provider)
    suggest("--json")
    code, out, err = run_cli(
        "suggest", "--set", "desks", "--version", "1", "--question", QID, "--apply", "1",
        "--user", writer.username, "--json",
    )  # fmt: skip
    assert code == 0, err
    made = json.loads(out)
    draft = Version.objects.get(question_set=qs, number=made["version"])
    assert draft.is_draft and draft.parent.number == 1 and made["candidate"] == 1
    assert draft.document[QID]["criteria"] == BETTER
    assert list(draft.document[QID]["criteria"]) == ["billing", "tech", "other"]  # as written
    assert list(draft.document) == list(DOC) and draft.document["urgent"] == DOC["urgent"]
    event = draft.events.get(kind=ReviewEvent.Kind.CREATED)
    assert event.note == made["provenance"]
    assert event.note.startswith("suggested from run ") and " better on " in event.note
    assert " points [" in event.note and "candidate 1)" in event.note
    code, _out, err = run_cli(
        "suggest", "--set", "desks", "--version", "1", "--question", QID, "--apply", "2",
        "--user", writer.username,
    )  # fmt: skip
    assert code == 1 and "made v2 already" in err


# --- the services ----------------------------------------------------------------------------


def planned(qs, **given):
    version = qs.versions.get(number=1)
    return suggestions.suggestion_plan(version=version, question=QID, user=roles.OPERATOR, **given)


def test_a_failed_drafting_call_fails_the_suggestion_without_the_key(provider):
    qs, _ = a_set(provider)
    provider.default = lambda body: (
        {"error": {"message": f"bad key {KEY}"}} if drafting.is_drafting(body) else decide(body)
    )
    plan = planned(qs)
    made = suggestions.suggestion_start(plan=plan, user=roles.OPERATOR, enqueue=False)
    done = suggestions.suggestion_execute(made.pk)
    assert done.status == "failed" and done.detail.startswith("Drafting failed (502)")
    assert KEY not in json.dumps([done.detail, done.plan, done.evidence, done.candidates])
    assert done.candidates == [] and done.calls_done == plan.attribution_calls + 1


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("not json at all", "is not JSON"),
        ({"c1": {}}, "lacks c2"),
    ],
    ids=["not JSON", "a candidate missing"],
)
def test_a_drafting_answer_in_the_wrong_shape_fails_it(provider, content, words):
    qs, _ = a_set(provider)

    def broken(body):
        if not drafting.is_drafting(body):
            return decide(body)
        out = chat({})
        out["choices"][0]["message"]["content"] = (
            content if isinstance(content, str) else json.dumps(content)
        )
        return out

    provider.default = broken
    done = suggestions.suggestion_execute(
        suggestions.suggestion_start(plan=planned(qs), user=roles.OPERATOR, enqueue=False).pk
    )
    assert done.status == "failed" and words in done.detail


def test_a_drafting_answer_larger_than_the_console_reads_fails_it_unread(provider):
    qs, _ = a_set(provider)
    huge = chat({"c1": candidate("Which desk?", BETTER, "x" * drafting.ANSWER_MAX_BYTES)})
    provider.default = lambda body: huge if drafting.is_drafting(body) else decide(body)
    done = suggestions.suggestion_execute(
        suggestions.suggestion_start(plan=planned(qs), user=roles.OPERATOR, enqueue=False).pk
    )
    assert done.status == "failed" and "larger than the console reads" in done.detail
    assert done.candidates == []


def test_a_candidate_that_breaks_its_schema_or_bounds_is_refused_and_the_others_proven(provider):
    qs, _ = a_set(provider)

    def odd(body):
        if not drafting.is_drafting(body):
            return decide(body)
        return chat(
            {
                "c1": candidate("Which desk?", BETTER, "fine"),
                "c2": candidate("Which desk?", {**BETTER, "sales": "deals"}, "adds an option"),
                "c3": candidate("x" * (rewording.MAX_TEXT + 1), BETTER, "too long"),
            }
        )

    provider.default = odd
    done = suggestions.suggestion_execute(
        suggestions.suggestion_start(plan=planned(qs), user=roles.OPERATOR, enqueue=False).pk
    )
    by = {c["number"]: c for c in done.candidates}
    assert by[1]["verdict"] == proof.BETTER
    assert by[2]["status"] == "refused" and "must name exactly" in by[2]["reason"]
    assert by[3]["status"] == "refused" and "at most 1,000" in by[3]["reason"]
    assert done.calls_done == done.calls_planned  # the refused ones were never asked about


def test_a_candidate_s_reason_never_quotes_a_state(provider):
    qs, _ = a_set(provider)

    def quoting(body):
        if not drafting.is_drafting(body):
            return decide(body)
        told = drafting.read_request(body)["failing"][0]["state"]  # says "refund please"
        why = f"as one state says: {json.dumps(told)}"
        return chat({f"c{n}": candidate("Which desk?", BETTER, why) for n in (1, 2, 3)})

    provider.default = quoting
    done = suggestions.suggestion_execute(
        suggestions.suggestion_start(plan=planned(qs), user=roles.OPERATOR, enqueue=False).pk
    )
    assert all(c["why"].startswith("as one state says: ") for c in done.candidates)
    assert all("[a state]" in c["why"] for c in done.candidates)
    assert "refund please" not in done.candidates_text


def test_a_candidate_that_changes_nothing_or_repeats_another_is_not_proven(provider):
    qs, _ = a_set(provider)

    def dull(body):
        if not drafting.is_drafting(body):
            return decide(body)
        same = candidate("Which desk?", SAME_WORDS, "nothing")
        return chat(
            {
                "c1": candidate("Which desk?", BETTER, "a"),
                "c2": same,
                "c3": candidate("Which desk?", BETTER, "b"),
            }
        )

    provider.default = dull
    done = suggestions.suggestion_execute(
        suggestions.suggestion_start(plan=planned(qs), user=roles.OPERATOR, enqueue=False).pk
    )
    by = {c["number"]: c for c in done.candidates}
    assert by[2]["status"] == "unchanged" and by[3]["status"] == "same"
    assert by[3]["reason"] == "the same words as candidate 1"


def test_a_candidate_s_new_lints_are_listed(provider):
    qs, _ = a_set(provider)

    def twin(body):
        if not drafting.is_drafting(body):
            return decide(body)
        twins = {"billing": "bugs", "tech": "bugs", "other": "anything else please"}
        return chat({f"c{n}": candidate("Which desk?", twins, "twins") for n in (1, 2, 3)})

    provider.default = twin
    done = suggestions.suggestion_execute(
        suggestions.suggestion_start(plan=planned(qs), user=roles.OPERATOR, enqueue=False).pk
    )
    first = done.candidates[0]
    assert any("same description" in lint for lint in first["lints"]), first["lints"]


def test_a_cancelled_suggestion_stops_and_keeps_what_it_proved(provider):
    qs, _ = a_set(provider)
    made = suggestions.suggestion_start(plan=planned(qs), user=roles.OPERATOR, enqueue=False)
    done = suggestions.suggestion_cancel(suggestion=made, user=roles.OPERATOR)
    assert done.status == "cancelled"
    assert suggestions.suggestion_execute(made.pk).status == "cancelled"
    assert provider.requests == []


def test_who_may_suggest_and_who_may_apply(provider):
    qs, writer = a_set(provider)
    viewer, reviewer = factories.user(), factories.reviewer()
    with pytest.raises(services.NotAllowed):
        suggestions.suggestion_plan(version=qs.versions.get(number=1), question=QID, user=viewer)
    plan = suggestions.suggestion_plan(
        version=qs.versions.get(number=1), question=QID, user=reviewer
    )
    done = suggestions.suggestion_execute(
        suggestions.suggestion_start(plan=plan, user=reviewer, enqueue=False).pk
    )
    assert done.created_by == reviewer and done.status == "done"
    with pytest.raises(services.NotAllowed):
        suggestions.suggestion_apply(suggestion=done, number=1, author=reviewer)
    made = suggestions.suggestion_apply(suggestion=done, number=1, author=writer)
    assert made.author == writer and Decision.objects.filter(version__isnull=False).exists()


def test_applying_from_the_open_draft_keeps_it_and_continues_in_a_new_one(provider):
    qs, writer = a_set(provider)
    v1 = qs.versions.get(number=1)
    draft = services.version_draft_from(version=v1, author=writer)
    run = services.batch_create(version=draft, backend="typesafe", user=writer, enqueue=False)
    services.batch_execute(run.pk)
    plan = suggestions.suggestion_plan(version=draft, question=QID, user=writer)
    done = suggestions.suggestion_execute(
        suggestions.suggestion_start(plan=plan, user=writer, enqueue=False).pk
    )
    made = suggestions.suggestion_apply(suggestion=done, number=1, author=writer)
    draft.refresh_from_db()
    assert draft.is_kept and made.parent == draft and made.is_draft
    assert made.document[QID]["criteria"] == BETTER


def test_a_draft_elsewhere_or_a_changed_draft_refuses_to_apply(provider):
    qs, writer = a_set(provider)
    done = suggestions.suggestion_execute(
        suggestions.suggestion_start(plan=planned(qs), user=roles.OPERATOR, enqueue=False).pk
    )
    other = services.version_draft_from(version=qs.versions.get(number=1), author=writer)
    with pytest.raises(services.Conflict, match="already has an open draft"):
        suggestions.suggestion_apply(suggestion=done, number=1, author=writer)
    services.version_discard(version=other, author=writer)
    assert suggestions.suggestion_apply(suggestion=done, number=1, author=writer).is_draft


@pytest.mark.django_db(transaction=True)
def test_a_started_suggestion_is_worked_by_the_task_worker(provider):
    """Queued after the commit as django-tasks' task; the database worker works it."""
    from tests.providers import work

    qs, writer = a_set(provider)
    plan = suggestions.suggestion_plan(version=qs.versions.get(number=1), question=QID, user=writer)
    made = suggestions.suggestion_start(plan=plan, user=writer)
    work(lambda: Suggestion.objects.get(pk=made.pk).finished)
    made.refresh_from_db()
    assert made.status == "done" and made.calls_done == made.calls_planned
    assert made.candidates[0]["verdict"] == proof.BETTER
