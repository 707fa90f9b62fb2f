"""Suggest rewordings on the page: a card whose question its version's last run failed offers it
(to those who may ask), the plan and its cost come before anything is asked, the suggestion's
progress and candidates are read from its record (a GET asks nothing and writes nothing), "Use
this" makes a draft, and the review of that draft names the suggestion and its proof."""

from __future__ import annotations

import pytest

from questions import services
from questions.models import Decision, Suggestion
from questions.services import suggestions
from tests import factories
from tests.helpers import suggestable_set
from tests.providers import BETTER_WORDS, KEY, SUGGEST_QID, Provider, decides_or_drafts

pytestmark = pytest.mark.django_db

EDITOR = "/sets/desks/v1/"
INTO = "suggest-k1"


@pytest.fixture
def provider(provider_factory, settings):
    server = provider_factory(Provider(default=decides_or_drafts), key=KEY)
    settings.LLM_API_KEY, settings.LLM_BASE_URL = KEY, server.url
    return server


@pytest.fixture
def world(provider):
    return suggestable_set(provider)


def test_only_the_failing_question_s_card_offers_it_and_only_to_askers(client, world):
    _, writer = world
    client.force_login(writer)
    page = client.get(EDITOR).content.decode()
    assert page.count('<details class="suggest"') == 1  # `urgent` passed everywhere
    assert f"question={SUGGEST_QID}" in page and "failing in the last run" in page
    client.force_login(factories.user())
    assert '<details class="suggest"' not in client.get(EDITOR).content.decode()


def test_the_plan_comes_first_and_asks_nothing(client, world, provider):
    _, writer = world
    client.force_login(writer)
    launch = client.get(f"{EDITOR}suggest/", {"question": SUGGEST_QID, "into": INTO})
    assert b"Check plan and cost" in launch.content and f'id="{INTO}"'.encode() in launch.content
    plan = client.post(f"{EDITOR}suggest/plan/", {"question": SUGGEST_QID, "into": INTO})
    text = plan.content.decode()
    assert plan.status_code == 200 and 'class="suggest-calls"' in text
    assert "attribution call" in text and "1 drafting call to llm" in text
    assert "proof calls to typesafe on" in text and "Suggest: " in text
    refused = client.post(f"{EDITOR}suggest/plan/", {"question": SUGGEST_QID, "max_calls": "3"})
    assert b"more than the limit of 3 calls" in refused.content
    assert provider.requests == [] and Suggestion.objects.count() == 0


def test_start_progress_candidates_and_use_this(client, world, provider):
    qs, writer = world
    client.force_login(writer)
    started = client.post(f"{EDITOR}suggest/start/", {"question": SUGGEST_QID, "into": INTO})
    assert b'hx-trigger="every 1s"' in started.content  # polls while it runs
    assert provider.requests == []  # a worker asks, not the page
    suggestion = Suggestion.objects.get()
    suggestions.suggestion_execute(suggestion.pk)
    calls = Decision.objects.count()
    shown = client.get(f"/suggestions/{suggestion.pk}/", {"into": INTO}, HTTP_HX_REQUEST="true")
    text = shown.content.decode()
    assert Decision.objects.count() == calls  # a read
    assert b"every 1s" not in shown.content and f'id="{INTO}"' in text
    first, worse = text.index("Candidate 1: "), text.index("Candidate 2: ")
    assert first < text.index("Candidate 3: ") < worse  # ranked by the proof
    assert 'candidate-verdict">better</strong>' in text
    assert 'candidate-verdict">worse</strong>' in text
    assert 'candidate-verdict">not proven</strong>' in text
    assert "<ins> or a refund</ins>" in text and text.count(">Use this</button>") == 3
    assert "pulled" in text  # what the drafter was told
    page = client.get(f"/suggestions/{suggestion.pk}/")  # the page, not the partial
    assert b"<h1>Suggested rewordings of" in page.content
    used = client.post(f"/suggestions/{suggestion.pk}/apply/", {"candidate": "1"})
    draft = qs.versions.get(number=2)
    assert used.status_code == 302 and used.url == draft.get_absolute_url()
    assert draft.document[SUGGEST_QID]["criteria"] == BETTER_WORDS
    services.version_submit(version=draft, author=writer)
    review = client.get(f"/sets/desks/v{draft.number}/review/").content.decode()
    assert "Made from a suggestion:" in review and "better on " in review
    assert "reads as suggested" in review and f"/suggestions/{suggestion.pk}/" in review


def test_use_this_twice_says_why_not_and_a_reader_may_not_use_it(client, world):
    qs, writer = world
    plan = suggestions.suggestion_plan(
        version=qs.versions.get(number=1), question=SUGGEST_QID, user=writer
    )
    done = suggestions.suggestion_execute(
        suggestions.suggestion_start(plan=plan, user=writer, enqueue=False).pk
    )
    client.force_login(factories.user())
    assert client.post(f"/suggestions/{done.pk}/apply/", {"candidate": "1"}).status_code == 403
    client.force_login(writer)
    client.post(f"/suggestions/{done.pk}/apply/", {"candidate": "1"})
    again = client.post(f"/suggestions/{done.pk}/apply/", {"candidate": "2"}, follow=True)
    assert b"Not used: Suggestion" in again.content and b"made v2 already" in again.content
    shown = client.get(f"/suggestions/{done.pk}/").content.decode()
    assert "Used: " in shown and ">Use this</button>" not in shown
