"""Disputes settled (issue 38, part 4): two labellers disagree on a set needing two labels, the
dispute is listed with the labels side by side and the state, a third user (a reviewer who did
not label it) settles it on the page (htmx or not) or with `questions disputes`, a labeller who
is also a reviewer is refused in words, and an ambiguous state is left out of the pass rates and
counted where they show."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from questions import roles, services
from questions.core import settling, spec
from questions.models import BatchItem, BatchRun, LabelSettlement
from questions.selectors import disputes, runs, scorecard
from questions.selectors.runs import run_report_and_misses
from questions.services import gates, labels
from tests import factories
from tests.providers import run_cli, stand_in_serving

pytestmark = pytest.mark.django_db

DOC = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money", "shipping": "parcels", "other": "else"},
    },
    "urgency": {"type": "score", "criteria": ["calm", "soon", "now: threatens to leave"]},
}


@pytest.fixture
def people():
    return {
        "ann": factories.author("ann"),
        "bob": factories.author("bob"),
        "rev": factories.reviewer("rev"),
        # a reviewer who labels too: she may not settle what she labelled while rev exists
        "lee": factories.user("lee", groups=(roles.AUTHORS, roles.REVIEWERS)),
        "viv": factories.user("viv"),
    }


@pytest.fixture
def qs(people):
    question_set = factories.question_set("eyes", owner=people["ann"], doc=DOC)
    return labels.labelling_configure(question_set=question_set, user=people["rev"], needed=2)


def _state(qs, people, name, **labelled):
    """A state of `qs` with labels: question id → (labeller, answer) pairs."""
    sample = services.sample_state_create(
        question_set=qs, name=name, state={"ticket": f"{name} text"}, author=people["ann"]
    )
    for qid, given in labelled.items():
        for who, answer in given:
            labels.state_label(sample=sample, question_id=qid, answer=answer, labeller=people[who])
    sample.refresh_from_db()
    return sample


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _disputed(qs, people, name="s1", who=("ann", "bob")):
    return _state(qs, people, name, desk=[(who[0], "billing"), (who[1], "shipping")])


def test_two_labellers_disagree_and_the_dispute_is_listed_side_by_side(qs, people):
    sample = _disputed(qs, people)
    _state(qs, people, "agreed", desk=[("ann", "other"), ("bob", "other")])
    assert sample.expected == {}  # a dispute settles nothing
    found = disputes.disputes(qs)
    assert found.disputed_total == 1 and found.settled == []
    (row,) = found.disputed
    assert (row.state_name, row.question.id, row.status) == ("s1", "desk", settling.DISPUTED)
    assert [(x.labeller, x.answer) for x in row.labels] == [("ann", "billing"), ("bob", "shipping")]
    assert row.content == {"ticket": "s1 text"}
    page = _client(people["rev"]).get("/sets/eyes/disputes/").content.decode()
    assert 'id="dispute-' in page and "s1 text" in page
    assert "<td>ann</td><td><strong>billing</strong>" in page
    assert "<td>bob</td><td><strong>shipping</strong>" in page
    assert 'name="answer" value="other"' in page  # every choice the question offers
    assert "1 question</span>" in page


def test_a_reviewer_who_did_not_label_settles_it_on_the_page(qs, people):
    sample = _disputed(qs, people)
    rev = _client(people["rev"])
    response = rev.post(
        f"/sets/eyes/disputes/{sample.pk}/", {"question": "desk", "answer": "shipping"}
    )
    assert response.status_code == 302
    assert response.url == "/sets/eyes/disputes/#disputed-heading"
    sample.refresh_from_db()
    assert sample.expected == {"desk": "shipping"}
    settlement = LabelSettlement.objects.get()
    assert (settlement.reviewer, settlement.outcome) == (people["rev"], settling.BY_REVIEWER)
    page = rev.get(response.url).content.decode()
    assert "settled as shipping" in page
    assert "Settled by a reviewer" in page and "settled: shipping" in page
    assert "0 questions</span>" in page


def test_from_htmx_the_row_is_swapped_and_the_count_follows(qs, people):
    sample = _disputed(qs, people)
    _disputed(qs, people, "s2")
    response = _client(people["rev"]).post(
        f"/sets/eyes/disputes/{sample.pk}/",
        {"question": "desk", "ambiguous": "yes"},
        headers={"HX-Request": "true"},
    )
    text = response.content.decode()
    assert response.status_code == 200 and "<html" not in text
    assert f'id="dispute-{sample.pk}-desk"' in text and "status-ambiguous" in text
    assert "marked ambiguous; the pass rates leave it out" in text
    assert '<span id="disputed-count" hx-swap-oob="true">1 question</span>' in text
    sample.refresh_from_db()
    assert sample.expected == {}


def test_a_labeller_who_reviews_is_refused_in_words_page_and_htmx(qs, people):
    sample = _disputed(qs, people, who=("lee", "bob"))
    client = _client(people["lee"])
    url = f"/sets/eyes/disputes/{sample.pk}/"
    refused = client.post(url, {"question": "desk", "answer": "billing"})
    assert refused.status_code == 403
    assert "You labelled s1" in refused.content.decode()
    swapped = client.post(
        url, {"question": "desk", "answer": "billing"}, headers={"HX-Request": "true"}
    )
    text = swapped.content.decode()
    assert swapped.status_code == 200  # the row with the refusal in it, where she clicked
    assert 'class="message error" role="alert"' in text and "You labelled s1" in text
    assert "Nothing was settled." in text and "status-disputed" in text
    assert not LabelSettlement.objects.exists()


def test_the_other_refusals_are_words_at_their_status(qs, people):
    sample = _disputed(qs, people)
    agreed = _state(qs, people, "agreed", desk=[("ann", "other"), ("bob", "other")])
    rev = _client(people["rev"])
    not_disputed = rev.post(
        f"/sets/eyes/disputes/{agreed.pk}/", {"question": "desk", "answer": "x"}
    )
    assert not_disputed.status_code == 409
    assert "agreed: `desk` is not disputed" in not_disputed.content.decode()
    no_answer = rev.post(f"/sets/eyes/disputes/{sample.pk}/", {"question": "desk"})
    assert no_answer.status_code == 422
    assert "desk in v1 takes billing, shipping, other" in no_answer.content.decode()
    reader = _client(people["viv"])
    assert 'name="answer"' not in reader.get("/sets/eyes/disputes/").content.decode()
    denied = reader.post(f"/sets/eyes/disputes/{sample.pk}/", {"question": "desk", "answer": "x"})
    assert denied.status_code == 403
    assert "Only reviewers settle disputed labels." in denied.content.decode()


def test_the_set_page_and_the_labelling_page_link_it_with_a_count(qs, people):
    _disputed(qs, people)
    _disputed(qs, people, "s2")
    client = _client(people["ann"])
    set_page = client.get("/sets/eyes/").content.decode()
    assert 'href="/sets/eyes/disputes/" class="disputes-link">Disputes (2)</a>' in set_page
    label_page = client.get("/sets/eyes/label/").content.decode()
    assert "2 disputed questions</a>" in label_page


def test_the_page_costs_the_same_queries_for_two_disputes_or_twelve(qs, people):
    client = _client(people["rev"])
    for i in range(2):
        _disputed(qs, people, f"a{i}")
    client.get("/sets/eyes/disputes/")  # the session, read once

    def counted() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/sets/eyes/disputes/").status_code == 200
        return len(captured)

    few = counted()
    for i in range(10):
        sample = _disputed(qs, people, f"b{i}")
        if i % 3 == 0:
            labels.dispute_settle(
                sample=sample, question_id="desk", reviewer=people["rev"], answer="other"
            )
    assert counted() == few


# --- the command line ---------------------------------------------------------------------------


def test_the_command_line_lists_the_dispute_and_a_third_user_settles_it(qs, people):
    sample = _disputed(qs, people)
    _state(qs, people, "s2", urgency=[("ann", 1), ("bob", 2)])
    code, out, err = run_cli("disputes", "--set", "eyes")
    assert code == 0, err
    assert out.splitlines() == [
        "eyes: 2 labels needed; 2 disputed, 0 settled by a reviewer",
        "s1\tdesk\tdisputed\tann: billing · bob: shipping",
        "s2\turgency\tdisputed\tann: 1: soon · bob: 2: now: threatens to leave",
    ]
    code, out, err = run_cli(
        "disputes", "--set", "eyes", "--settle", "s2", "--question", "urgency", "--answer", "2",
        "--user", "rev", "--json",
    )  # fmt: skip
    assert code == 0, err
    row = json.loads(out)
    assert row["status"] == "settled" and row["settlement"]["reviewer"] == "rev"
    assert row["settlement"]["answer"] == 2
    code, out, err = run_cli(
        "disputes", "--set", "eyes", "--ambiguous", "s1", "--question", "desk", "--user", "rev"
    )
    assert (code, out.strip()) == (0, "s1: desk marked ambiguous; the pass rates leave it out")
    sample.refresh_from_db()
    assert sample.expected == {} and qs.sample_states.get(name="s2").expected == {"urgency": 2}
    code, out, _ = run_cli("disputes", "--set", "eyes", "--json")
    listed = json.loads(out)
    assert listed["disputed_total"] == 0 and listed["disputed"] == []
    assert [(d["state"], d["status"]) for d in listed["settled"]] == [
        ("s1", "ambiguous"),
        ("s2", "settled"),
    ]
    assert listed["settled"][0]["labels"][0]["labeller"] == "ann"


def test_the_command_line_refuses_a_labeller_who_reviews_and_says_why(qs, people):
    _disputed(qs, people, who=("lee", "bob"))
    code, out, _ = run_cli(
        "disputes", "--set", "eyes", "--settle", "s1", "--question", "desk", "--answer",
        "billing", "--user", "lee", "--json",
    )  # fmt: skip
    assert code == 1
    assert json.loads(out) == {
        "status": 403,
        "detail": "You labelled s1's `desk`; a reviewer who did not settles it.",
    }
    code, _, err = run_cli(
        "disputes", "--set", "eyes", "--settle", "s1", "--question", "desk", "--answer", "billing"
    )
    assert code == 1 and "A settlement is a reviewer's: name them (--user)." in err
    assert not LabelSettlement.objects.exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--question", "desk"], "go with --settle STATE or --ambiguous STATE"),
        (["--settle", "s1", "--answer", "billing"], "name the question with --question Q"),
        (["--settle", "s1", "--question", "desk"], "--settle needs the answer"),
        (["--ambiguous", "s1", "--question", "desk", "--answer", "x"], "takes no --answer"),
    ],
)
def test_the_command_line_says_which_arguments_do_not_go_together(qs, people, args, words):
    code, _, err = run_cli("disputes", "--set", "eyes", *args)
    assert code == 2 and words in err


def test_the_command_line_names_what_is_missing(qs, people):
    code, out, _ = run_cli("disputes", "--set", "nope", "--json")
    assert (code, json.loads(out)["status"]) == (1, 404)
    code, _, err = run_cli(
        "disputes", "--set", "eyes", "--ambiguous", "ghost", "--question", "desk", "--user", "rev"
    )
    assert code == 1 and "eyes has no sample state ghost." in err


# --- ambiguous states and the pass rates --------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_an_ambiguous_state_is_left_out_of_the_pass_rates_and_counted_where_they_show(settings):
    with stand_in_serving(settings):
        writer, bob = factories.author("writer"), factories.author("bob")
        rev = factories.reviewer("rev")
        version = factories.tickets_draft(writer, count=6)
        qs = labels.labelling_configure(question_set=version.question_set, user=rev, needed=2)
        sample = qs.sample_states.get(name="s1")
        labels.state_label(sample=sample, question_id="desk", answer="other", labeller=bob)
        labels.dispute_settle(sample=sample, question_id="desk", reviewer=rev, ambiguous=True)
        created = services.batch_create(
            version=version, backend="typesafe", user=roles.OPERATOR, enqueue=False
        )
        run = services.batch_execute(created.pk)
    report, _ = run_report_and_misses(run)
    assert (report.questions["desk"].checked, report.questions["urgent"].checked) == (5, 6)
    assert disputes.ambiguous_counts(qs, run=run) == {"desk": 1}
    client = _client(writer)
    run_page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "(1 ambiguous left out)" in run_page  # beside the overall rate
    assert '<small class="muted ambiguous-left-out">1 ambiguous left out</small>' in run_page
    card_page = client.get(f"/sets/{qs.slug}/scorecard/").content.decode()
    assert "<code>desk</code><br><small" in card_page and "1 ambiguous left out" in card_page
    assert scorecard.scorecard(qs)["ambiguous"] == {"desk": 1}
    code, out, _ = run_cli("scorecard", "--set", qs.slug)
    assert code == 0 and "ambiguous states left out of the pass rates: desk 1" in out


def test_on_a_blind_set_a_labeller_sees_no_label_of_a_question_they_may_still_label(qs, people):
    labels.labelling_configure(question_set=qs, user=people["rev"], needed=3)
    _disputed(qs, people)  # two of the three labels: ann's and bob's, differing
    cy = factories.author("cy")
    seen = {
        who: _client(user).get("/sets/eyes/disputes/").content.decode()
        for who, user in (("cy", cy), ("ann", people["ann"]), ("rev", people["rev"]))
    }
    assert "hidden: this set is labelled blind" in seen["cy"]
    assert "<td>ann</td>" not in seen["cy"] and "<strong>billing</strong>" not in seen["cy"]
    assert "<td>bob</td><td><strong>shipping</strong>" in seen["ann"]  # she has labelled it
    assert "<td>bob</td><td><strong>shipping</strong>" in seen["rev"]  # a reviewer settles
    labels.labelling_configure(question_set=qs, user=people["rev"], show_model=True)
    shown = _client(cy).get("/sets/eyes/disputes/").content.decode()
    assert "<td>ann</td><td><strong>billing</strong>" in shown  # not blind any more


def test_compare_the_review_and_the_gate_say_what_ambiguous_states_they_leave_out(qs, people):
    sample = _disputed(qs, people)
    labels.dispute_settle(sample=sample, question_id="desk", ambiguous=True, reviewer=people["rev"])
    version = qs.versions.get()
    run = BatchRun.objects.create(
        question_set=qs,
        version=version,
        backend="recorded",
        model="m",
        status="done",
        checked=1,
        passed=1,
    )
    BatchItem.objects.create(
        run=run,
        sample_state=sample.current_revision(),
        state=sample,
        status="answered",
        answers={"desk": {"type": "choice", "choice": "billing"}},
    )
    assert runs.overall(run, left_out=True).left_out == 1
    compare = _client(people["rev"]).get(f"/sets/eyes/compare/?col=run:{run.pk}").content.decode()
    assert "1 ambiguous left out" in compare
    measured = gates.gate_measure(run, spec.parse(DOC, limits=spec.DEFAULT_LIMITS).questions)
    assert measured.ambiguous == {"desk": 1} and measured.left_out == "1 ambiguous left out"
    assert (measured.checked, measured.questions["desk"].labelled) == (0, 0)  # settled only
