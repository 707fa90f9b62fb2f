"""A team's daily budget of provider calls: off by default; on, work that would pass it — a run,
a try, a control, a drift run, an attribution, a gate's run, a single ask, a proof — is refused
before anything is sent, with the figures, on the page and the command line; calls in flight
count (a cancelled run's pending states stop counting); the team page shows the day's spend."""

from __future__ import annotations

import json

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from questions import roles, services
from questions.models import BatchRun, CallHold, Decision
from questions.services import attribution as attribution_services
from questions.services import budget, controls, proofs, tries
from tests import factories
from tests.providers import DOC, KEY, Provider, run_cli

pytestmark = pytest.mark.django_db


def reply(body: dict) -> dict:
    answers = {
        qid: {"type": "noul", "noul": 0.7}
        if q["type"] == "noul"
        else {
            "type": "choice",
            "choice": "billing",
            "probabilities": {"billing": 0.8, "tech": 0.1, "other": 0.1},
            "confidence": 0.7,
        }
        for qid, q in body["questions"].items()
    }
    return {"model": "m-1", "answers": answers, "usage": {"input_tokens": 10}}


@pytest.fixture
def provider(provider_factory):
    return provider_factory(Provider(default=reply), key=KEY)


def a_set(states: int, *, slug: str = "s", team=None):
    writer = factories.author(team=team)
    qs = factories.question_set(slug, owner=writer, doc=DOC, team=team)
    for i in range(states):
        services.sample_state_create(
            question_set=qs,
            name=f"s{i:03d}",
            state={"n": i},
            author=writer,
            expected={"desk": "billing", "urgent": True},
        )
    return qs, writer


def ask_once(qs, writer):
    return services.decision_ask(
        backend="typesafe",
        document=DOC,
        state={"n": 1},
        user=writer,
        version=factories.draft(qs),
    )


def test_there_is_no_budget_by_default(provider):
    qs, writer = a_set(3)
    services.batch_create(
        version=factories.draft(qs), backend="typesafe", user=writer, enqueue=False
    )
    assert ask_once(qs, writer).error is None
    spend = budget.team_spend(qs)
    assert (spend.made, spend.in_flight, spend.limit, spend.left) == (1, 3, None, None)
    assert not CallHold.objects.exists()


def test_a_run_over_the_budget_is_refused_with_the_figures(provider, settings):
    settings.DECISIONS_TEAM_DAILY_CALLS = 5
    qs, writer = a_set(6)
    with pytest.raises(budget.OverBudget) as refused:
        services.batch_create(
            version=factories.draft(qs), backend="typesafe", user=writer, enqueue=False
        )
    assert str(refused.value).startswith(
        "This run asks 6 provider calls; today's budget of default has 5 left (5 a day, 0 made"
    )
    assert refused.value.status == 429
    assert not BatchRun.objects.exists() and provider.requests == []


def test_calls_in_flight_and_calls_made_count_and_a_cancelled_run_gives_its_calls_back(
    provider, settings
):
    settings.DECISIONS_TEAM_DAILY_CALLS = 4
    qs, writer = a_set(2)
    first = services.batch_create(
        version=factories.draft(qs), backend="typesafe", user=writer, enqueue=False
    )
    assert ask_once(qs, writer).error is None  # one call made
    assert (budget.team_spend(qs).made, budget.team_spend(qs).in_flight) == (1, 2)
    with pytest.raises(
        budget.OverBudget,
        match=r"asks 2 provider calls; .* has 1 left \(4 a day, 3 made or in flight",
    ):
        services.batch_create(
            version=factories.draft(qs), backend="typesafe", user=writer, enqueue=False
        )
    services.batch_cancel(run=first, user=writer)
    assert budget.team_spend(qs).left == 3
    services.batch_create(
        version=factories.draft(qs), backend="typesafe", user=writer, enqueue=False
    )


def test_a_replay_spends_nothing_and_is_never_refused(settings):
    settings.DECISIONS_TEAM_DAILY_CALLS = 1
    qs, writer = a_set(3)
    for _ in range(2):
        services.batch_create(
            version=factories.draft(qs), backend="recorded", user=writer, enqueue=False
        )
    assert budget.team_spend(qs).used == 0


def test_each_team_has_its_own_budget(provider, settings):
    settings.DECISIONS_TEAM_DAILY_CALLS = 3
    ours, writer = a_set(3, slug="ours")
    theirs, other = a_set(3, slug="theirs", team=factories.team("support"))
    services.batch_create(
        version=factories.draft(ours), backend="typesafe", user=writer, enqueue=False
    )
    services.batch_create(
        version=factories.draft(theirs), backend="typesafe", user=other, enqueue=False
    )
    assert (budget.team_spend(ours).left, budget.team_spend(theirs).left) == (0, 0)


def test_a_single_ask_over_the_budget_sends_nothing(provider, settings):
    settings.DECISIONS_TEAM_DAILY_CALLS = 1
    qs, writer = a_set(0)
    assert ask_once(qs, writer).error is None
    refused = ask_once(qs, writer)
    assert refused.error.status == 429
    assert refused.error.detail.startswith("This ask asks 1 provider call; today's budget")
    assert len(provider.requests) == 1 and Decision.objects.count() == 1
    assert not CallHold.objects.exists()  # the first ask's hold ended with it


@pytest.mark.parametrize("kind", ["try", "control", "drift", "attribution"])
def test_every_kind_of_run_is_held_to_the_budget(provider, settings, kind):
    qs, writer = a_set(4)
    v1 = services.version_submit(version=factories.draft(qs), author=writer)
    services.version_approve(
        version=v1, reviewer=factories.reviewer(), confirm_weak_evidence=True, label="production"
    )
    v1.refresh_from_db()
    baseline = services.batch_create(version=v1, backend="typesafe", user=writer, enqueue=False)
    services.batch_execute(baseline.pk)  # 4 calls made
    settings.DECISIONS_TEAM_DAILY_CALLS = 5  # 1 left
    draft = services.version_draft_from(version=v1, author=writer)
    edited = json.loads(json.dumps(DOC))
    edited["desk"]["instructions"] = "Which desk, exactly?"
    services.version_save(version=draft, document=edited, base_revision=1, author=writer)
    starts = {
        "try": lambda: tries.try_start(
            version=draft,
            plan=tries.try_plan(
                version=draft, document=edited, backend="typesafe", user=writer, against="v1"
            ),
            user=writer,
            enqueue=False,
        ),
        "control": lambda: controls.control_create(
            version=v1, kind="shuffle", count=2, backend="typesafe", user=writer, enqueue=False
        ),
        "drift": lambda: controls.drift_create(version=v1, model="m-2", user=writer, enqueue=False),
        "attribution": lambda: attribution_services.attribution_start(
            plan=attribution_services.attribution_plan(
                version=v1, state="s000", backend="typesafe", user=writer, question="desk"
            ),
            user=writer,
            enqueue=False,
        ),
    }
    words = {"try": "This try", "control": "This control", "drift": "This drift run"}
    with pytest.raises(budget.OverBudget, match=f"^{words.get(kind, 'This attribution')} asks"):
        starts[kind]()
    assert BatchRun.objects.count() == 1  # the baseline only


def test_a_proof_over_the_budget_asks_nothing(provider, settings):
    qs, writer = a_set(40)
    services.version_submit(version=factories.draft(qs), author=writer)
    candidate = json.loads(json.dumps(DOC))
    candidate["desk"]["instructions"] = "Which desk? Be sharp."
    plan = proofs.proof_plan(
        version=qs.versions.get(number=1), candidate=candidate, backend="typesafe", user=writer
    )
    assert plan.calls > 1
    settings.DECISIONS_TEAM_DAILY_CALLS = plan.calls - 1
    with pytest.raises(budget.OverBudget, match=f"^This proof asks {plan.calls} provider calls"):
        proofs.proof_run(plan=plan, user=writer)
    assert provider.requests == []
    settings.DECISIONS_TEAM_DAILY_CALLS = plan.calls
    found = proofs.proof_run(plan=plan, user=writer)
    assert found.calls == len(provider.requests) == plan.calls
    assert budget.team_spend(qs).used == plan.calls and not CallHold.objects.exists()


def test_the_page_and_the_command_line_refuse_with_the_figures(provider, settings):
    settings.DECISIONS_TEAM_DAILY_CALLS = 2
    _, writer = a_set(3)
    client = Client()
    client.force_login(writer)
    response = client.post(
        reverse("run-create", args=["s", 1]), {"backend": "typesafe"}, follow=True
    )
    said = [str(m) for m in get_messages(response.wsgi_request)]
    assert any(
        m.startswith("This run asks 3 provider calls; today's budget of default has 2 left")
        for m in said
    )
    assert "This run asks 3 provider calls" in response.content.decode()
    code, out, _ = run_cli("batch", "--set", "s", "--backend", "typesafe", "--json")
    refused = json.loads(out)
    assert (code, refused["status"]) == (1, 429)
    assert refused["detail"].startswith("This run asks 3 provider calls; today's budget")
    assert not BatchRun.objects.exists()


def test_the_team_page_shows_the_days_spend(provider, settings):
    settings.DECISIONS_TEAM_DAILY_CALLS = 1000
    qs, writer = a_set(3)
    services.batch_create(
        version=factories.draft(qs), backend="typesafe", user=writer, enqueue=False
    )
    ask_once(qs, writer)
    client = Client()
    client.force_login(writer)
    page = client.get(reverse("team-detail", args=["default"])).content.decode()
    assert "<strong>4</strong> made or in flight" in page and "1 made, 3 in flight" in page
    assert "<strong>996 left</strong>" in page
    _, out, _ = run_cli("team", "--json")
    today = json.loads(out)[0]["provider_calls_today"]
    assert (today["made"], today["in_flight"], today["left"]) == (1, 3, 996)


def test_the_operator_is_held_to_the_budget_too(provider, settings):
    settings.DECISIONS_TEAM_DAILY_CALLS = 1
    qs, _ = a_set(2)
    with pytest.raises(budget.OverBudget):
        services.batch_create(
            version=factories.draft(qs), backend="typesafe", user=roles.OPERATOR, enqueue=False
        )


@pytest.mark.django_db(transaction=True)
def test_two_runs_started_at_once_cannot_both_take_the_last_calls(provider, settings):
    from django.db import connection

    from tests.conftest import POSTGRES_ONLY
    from tests.helpers import race

    if connection.vendor != "postgresql":
        pytest.skip(f"{POSTGRES_ONLY}: SQLite serialises writers by locking the whole file")
    settings.DECISIONS_TEAM_DAILY_CALLS = 5
    qs, writer = a_set(3)
    draft = factories.draft(qs)
    results = race(
        4,
        lambda i: services.batch_create(
            version=draft, backend="typesafe", user=writer, enqueue=False
        ),
    )
    started = [r for r in results if isinstance(r, BatchRun)]
    refused = [r for r in results if isinstance(r, budget.OverBudget)]
    assert (len(started), len(refused)) == (1, 3), results
    assert budget.team_spend(qs).in_flight == 3


def test_a_suggestion_over_the_budget_is_refused_and_its_own_calls_are_never_refused(
    provider_factory, settings
):
    from questions.services import suggestions
    from questions.services.suggestion_work import suggestion_execute
    from tests.helpers import suggestable_set
    from tests.providers import SUGGEST_QID, decides_or_drafts

    server = provider_factory(Provider(default=decides_or_drafts), key=KEY)
    settings.LLM_API_KEY, settings.LLM_BASE_URL = KEY, server.url
    qs, _ = suggestable_set(server)
    plan = suggestions.suggestion_plan(
        version=qs.versions.get(number=1), question=SUGGEST_QID, user=roles.OPERATOR
    )
    spent = budget.team_spend(qs).used  # the run the set's v1 was approved on
    settings.DECISIONS_TEAM_DAILY_CALLS = spent + plan.calls - 1
    with pytest.raises(budget.OverBudget, match=f"^This suggestion asks {plan.calls} provider"):
        suggestions.suggestion_start(plan=plan, user=roles.OPERATOR, enqueue=False)
    assert server.requests == []
    settings.DECISIONS_TEAM_DAILY_CALLS = spent + plan.calls
    made = suggestions.suggestion_start(plan=plan, user=roles.OPERATOR, enqueue=False)
    assert budget.team_spend(qs).in_flight == plan.calls  # all of it, before a call is made
    done = suggestion_execute(made.pk)
    assert done.status == "done", done.stage
    assert budget.team_spend(qs).in_flight == 0
    assert len(server.requests) <= plan.calls
