"""How the approved set does on live traffic: production's answers read per question
(`core.production`), the production page and `questions production` (by day, the gaps, the near
uniform and unsure shares, the live pass rate beside the hand-made one, the sampling rate and
the retention), production's answers in the labelling queue's ranking, and the retention
(`questions states-purge`, the workers' hourly purge)."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from questions import roles, services
from questions.core import ingest, labelling, production
from questions.models import BatchItem, BatchRun, IngestSettings, SampleState
from questions.selectors.labels import states_to_label
from questions.selectors.production import production_traffic
from tests import factories
from tests.helpers import AGREEMENT_DOC, live_desk, live_world
from tests.providers import run_cli

DESK = labelling.questions_of(AGREEMENT_DOC)[0]
URGENCY = labelling.questions_of(AGREEMENT_DOC)[1]
CHURN = labelling.questions_of(AGREEMENT_DOC)[2]


# --- production's answers, read (pure) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "answer", "read"),
    [
        (DESK, live_desk("billing"), production.Reading("billing", False, False)),
        (DESK, live_desk("other", 0.33, 0.33, 0.34, 0.34), production.Reading("other", True, True)),
        (
            URGENCY,
            {"score": 1.6, "probabilities": {"0": 0.1, "1": 0.2, "2": 0.7}, "confidence": 0.5},
            production.Reading("2", False, True),
        ),
        (CHURN, {"noul": 0.52}, production.Reading("true", True, True)),
        (CHURN, {"noul": 0.05}, production.Reading("false", False, False)),
    ],
)
def test_an_answer_is_read_as_a_label_would_say_it(question, answer, read):
    assert production.read(question, answer) == read


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (DESK, {"choice": "refunds", "probabilities": {}}),  # an option it does not declare
        (DESK, "billing"),
        (URGENCY, {"score": 7.0}),  # past the last level
        (URGENCY, {"score": "high"}),
        (CHURN, {"choice": "billing"}),
    ],
)
def test_an_answer_of_another_shape_is_unreadable_never_guessed(question, answer):
    assert production.read(question, answer) is None


def test_traffic_counts_by_day_finds_the_gap_and_judges_only_the_version_that_answered():
    monday, tuesday = date(2026, 12, 7), date(2026, 12, 8)
    sent = [
        production.Sent(monday, 3, {"desk": live_desk("billing")}, {}),
        production.Sent(monday, 3, {"desk": live_desk("shipping")}, {}),
        production.Sent(tuesday, 3, {"desk": live_desk("other", 0.34, 0.33, 0.33)}, {}),
        production.Sent(tuesday, 3, {"desk": "garbled"}, {}),
    ]
    judged = [
        production.Sent(monday, 3, {"desk": live_desk("billing")}, {"desk": "billing"}),
        production.Sent(monday, 3, {"desk": live_desk("billing")}, {"desk": "shipping"}),
        production.Sent(monday, 2, {"desk": live_desk("billing")}, {"desk": "billing"}),  # v2's
    ]
    (found,) = production.traffic(
        [DESK], sent, version=3, judged=judged, expected={"desk": [("billing", 5), ("shipping", 2)]}
    )
    assert found.by_day == {monday: {"billing": 1, "shipping": 1}, tuesday: {"other": 1}}
    assert (found.answered, found.unreadable, found.near_uniform) == (4, 1, 1)
    assert found.gaps == ["other"]
    assert (found.live.passed, found.live.checked) == (1, 2)
    assert found.as_json()["near_uniform"] == {"count": 1, "share": pytest.approx(1 / 3)}


# --- the page and the command ------------------------------------------------------------------


@pytest.mark.django_db
def test_the_production_page_shows_the_live_pass_rate_the_gap_and_the_rules(client):
    qs, _, owner, _, _ = live_world()
    services.ingest_configure(question_set=qs, user=roles.OPERATOR, keep_one_in=4, retention_days=9)
    client.force_login(owner)
    page = client.get(reverse("set-production", args=["live"])).content.decode()
    assert "Production answers with <strong>v1</strong>" in page
    assert "Live pass rate of v1: <strong>50% (9–91%, n = 2)</strong>" in page
    assert "1 in 4</strong> of the states" in page and "9 days</strong>" in page
    assert "A gap to label:" in page and "<code>other</code>" in page
    assert 'class="chart share"' in page and "labelled" in page


@pytest.mark.django_db
def test_the_command_prints_what_the_page_shows(client):
    live_world()
    code, out, _ = run_cli("production", "--set", "live", "--json")
    assert code == 0
    found = json.loads(out)
    desk_found = next(q for q in found["questions"] if q["id"] == "desk")
    assert found["version"] == 1 and found["label"] == "production"
    assert found["sampling"] == {"keep_one_in": 1} and found["retention_days"] == 30
    assert found["states"]["held"] == 4 and found["states"]["labelled"] == 2
    assert desk_found["live"]["passed"] == 1 and desk_found["live"]["checked"] == 2
    assert desk_found["gaps"] == ["other"] and desk_found["near_uniform"]["count"] == 1
    assert desk_found["expected"] == {"billing": 4, "shipping": 2}  # hand-made and production
    assert sum(d["received"] for d in found["days"]) == 4
    code, text, _ = run_cli("production", "--set", "live")
    assert (
        "live pass rate: 50% (9–91%, n = 2)" in text and "no labelled state expects: other" in text
    )


def _run(qs, version, states, chosen):
    """A finished run of `version` over `states`, answering `chosen` on the desk of each."""
    run = BatchRun.objects.create(
        question_set=qs, version=version, backend="recorded", model="m", status="done"
    )
    for state in states:
        BatchItem.objects.create(
            run=run,
            sample_state=state.current_revision(),
            status="answered",
            answers={"desk": live_desk(chosen)},
        )
    return run


@pytest.mark.django_db
def test_the_hand_made_rate_is_the_runs_on_manual_states_only(client):
    qs, version, owner, *_ = live_world()
    run = _run(qs, version, qs.sample_states.all(), "billing")  # hand-made and production
    found = production_traffic(qs)
    desk_found = next(t for t in found.questions if t.question.id == "desk")
    assert found.hand_made_run == run.pk
    # the four hand-made states: two expect billing; the production states are not counted
    assert (desk_found.hand_made.passed, desk_found.hand_made.checked) == (2, 4)
    assert (found.hand_made.passed, found.hand_made.checked) == (2, 4)
    client.force_login(owner)
    page = client.get(reverse("set-production", args=["live"])).content.decode()
    assert f"run {run.pk}</a>, v1's newest): <strong>50% (15–85%, n = 4)</strong>" in page


@pytest.mark.django_db
def test_the_states_list_of_production_says_its_sampling_and_retention(client):
    qs, _, owner, _, _ = live_world()
    services.ingest_configure(question_set=qs, user=roles.OPERATOR, keep_one_in=3)
    client.force_login(owner)
    listed = client.get(reverse("set-detail", args=["live"]), {"state_source": "production"})
    assert "sampling keeps 1 in 3 of what the application sends" in listed.content.decode()
    every = client.get(reverse("set-detail", args=["live"])).content.decode()
    assert "sampling keeps" not in every


@pytest.mark.django_db
def test_a_set_with_no_production_state_says_how_to_send_one(client):
    owner = factories.author("ann")
    factories.question_set("quiet", owner=owner, doc=AGREEMENT_DOC)
    client.force_login(owner)
    page = client.get(reverse("set-production", args=["quiet"])).content.decode()
    assert "No production states yet" in page and "/api/sets/quiet/states" in page
    assert "No version of this set is approved yet" in page


@pytest.mark.django_db
def test_the_page_costs_the_same_queries_however_many_states(client):
    qs, *_ = live_world()
    client.force_login(qs.owner)
    url = reverse("set-production", args=["live"])
    with CaptureQueriesContext(connection) as few:
        client.get(url)
    body = "\n".join(
        json.dumps({"state": {"more": i}, "answers": {"desk": live_desk("shipping")}, "version": 1})
        for i in range(60)
    )
    services.states_ingest(
        slug="live", body=body.encode(), media_type=ingest.NDJSON, by=roles.OPERATOR
    )
    with CaptureQueriesContext(connection) as many:
        client.get(url)
    assert len(many.captured_queries) == len(few.captured_queries)


# --- production's answers in the ranking -------------------------------------------------------


@pytest.mark.django_db
def test_the_ranking_says_when_production_gives_an_answer_no_label_expects():
    qs, version, *_ = live_world()
    ranked = {c.name: c for c in states_to_label(qs, version, limit=None)}
    gap = next(c for n, c in ranked.items() if n.startswith("production-") and "other" in c.reason)
    assert "production v1 said other, which no labelled state expects" in gap.reason
    weights = labelling.WEIGHTS
    assert gap.score >= weights["gap"] + weights["uniform"] + weights["unsure"]
    calm = [c for n, c in ranked.items() if n.startswith("hand")]
    assert all(gap.score > c.score for c in calm)


@pytest.mark.django_db
def test_production_and_the_draft_disagreeing_is_a_reason():
    qs, *_ = live_world()
    state = qs.sample_states.get(source="production", state_text__contains='"n":13')
    readings = {state.name: [labelling.Reading("v2 typesafe", "desk", live_desk("shipping"))]}
    sent = {
        state.name: [
            labelling.Reading("production v1", "desk", live_desk("billing"), production=True)
        ]
    }
    ranked = labelling.rank(
        [DESK], [(state.name, {})], {state.name: readings[state.name] + sent[state.name]}
    )
    assert (
        "the answers disagree (v2 typesafe: shipping vs production v1: billing)" in ranked[0].reason
    )


def test_a_near_uniform_production_answer_is_a_reason_of_its_own():
    sent = [
        labelling.Reading(
            "production", "desk", live_desk("other", 0.34, 0.33, 0.33), production=True
        )
    ]
    (ranked,) = labelling.rank([DESK], [("s", {})], {"s": sent}, known={"desk": {"other"}})
    assert ranked.reason == "`desk`: production's answer was near uniform"


# --- retention ---------------------------------------------------------------------------------


def _aged(qs, days: int, n: int, **extra) -> list[SampleState]:
    at = (timezone.now() - timedelta(days=days)).isoformat()
    body = "\n".join(
        json.dumps({"state": {"aged": days, "i": i, **extra}, "at": at}) for i in range(n)
    )
    services.states_ingest(
        slug=qs.slug, body=body.encode(), media_type=ingest.NDJSON, by=roles.OPERATOR
    )
    return list(qs.sample_states.filter(state_text__contains=f'"aged":{days}'))


@pytest.mark.django_db
def test_states_purge_deletes_old_unlabelled_production_states_and_keeps_the_rest():
    owner = factories.author("ann")
    qs = factories.question_set("shop", owner=owner)
    old = _aged(qs, 40, 5)
    fresh = _aged(qs, 3, 2)
    services.state_label(sample=old[0], question_id="q0", answer="o0", labeller=owner)
    services.sample_state_create(question_set=qs, name="typed", state={"x": 1}, author=owner)
    code, out, _ = run_cli(
        "states-purge", "--set", "shop", "--source", "production", "--older-than", "30d", "--json"
    )
    assert code == 0 and json.loads(out) == {"deleted": 4, "kept_labelled": 1, "kept_in_runs": 0}
    left = set(qs.sample_states.values_list("pk", flat=True))
    assert {old[0].pk, *(s.pk for s in fresh)} <= left and len(left) == 4  # and the typed one
    code, out, _ = run_cli("states-purge", "--set", "shop", "--older-than", "1d")
    assert code == 0 and "deleted 2 production states; kept 1 labelled" in out


@pytest.mark.django_db
@pytest.mark.parametrize("age", ["thirty", "-3d", "30w"])
def test_states_purge_refuses_an_age_it_cannot_read(age):
    factories.question_set("shop")
    code, _, err = run_cli("states-purge", "--set", "shop", f"--older-than={age}")
    assert code == 2 and "number of days" in err


@pytest.mark.django_db
def test_a_state_a_run_asked_about_is_kept_past_the_retention():
    owner = factories.author("ann")
    qs = factories.question_set("shop", owner=owner)
    old = _aged(qs, 40, 3)
    _run(qs, qs.versions.open_draft(), old[:2], "o0")
    purged = services.production_purge(question_set=qs, user=roles.OPERATOR)
    assert purged.as_json() == {"deleted": 1, "kept_labelled": 0, "kept_in_runs": 2}
    assert qs.sample_states.filter(pk__in=[s.pk for s in old]).count() == 2


@pytest.mark.django_db
def test_the_workers_purge_every_set_once_an_hour():
    qs = factories.question_set("shop")
    _aged(qs, 40, 3)
    ticks = iter([1000.0, 1500.0, 1000.0 + 3600.0])
    last: dict[str, float] = {}
    assert services.production_purge_due(last, clock=lambda: next(ticks)) == 3
    _aged(qs, 41, 2)
    assert services.production_purge_due(last, clock=lambda: next(ticks)) == 0  # not an hour
    assert services.production_purge_due(last, clock=lambda: next(ticks)) == 2


@pytest.mark.django_db
def test_only_reviewers_and_staff_purge():
    qs = factories.question_set("shop")
    with pytest.raises(services.NotAllowed):
        services.production_purge(question_set=qs, user=factories.author("ann"))


@pytest.mark.django_db
def test_a_reviewer_changes_how_the_set_takes_production_states_on_its_page(client):
    qs, _, owner, boss, _ = live_world()
    url = reverse("ingest-settings", args=["live"])
    data = {
        "keep_one_in": "5",
        "retention_days": "7",
        "daily_quota": "5000",
        "drop": "customer.email\n  orders.*.address  \n",
        "mask": "ORD-\\d{6}\n",
        "builtins": ["email", "card"],
    }
    client.force_login(owner)
    assert client.post(url, data).status_code == 403
    client.force_login(boss)
    page = client.post(url, data, follow=True).content.decode()
    found = IngestSettings.of(qs)
    assert (found.keep_one_in, found.retention_days, found.daily_quota) == (5, 7, 5000)
    assert found.drop_paths == ["customer.email", "orders.*.address"]
    assert found.mask_patterns == ["ORD-\\d{6}"] and found.builtins == ["card", "email"]
    assert "Sampling keeps <strong>1 in 5</strong>" in page and "customer.email\n" in page
    refused = client.post(url, {**data, "keep_one_in": "5", "mask": "([unclosed\n"})
    assert refused.status_code == 422 and "is not a regular expression" in refused.content.decode()
    assert IngestSettings.of(qs).mask_patterns == ["ORD-\\d{6}"]  # nothing changed
    shown = client.get(reverse("set-production", args=["live"])).content.decode()
    assert 'name="builtins" value="email" checked' in shown
    assert 'name="builtins" value="phone">' in shown
