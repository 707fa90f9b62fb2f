"""In a real browser, on the demo as `make run` loads it (a fresh database: the same ids, the
same held-out split): refund-triage v1's `desk` card offers "Suggest rewordings"; the plan and
its cost come first; the suggestion's progress, then its candidates with their verdicts and
word diffs — closer proven better on the held-out states, apart refuted; "Use this" makes a
draft, and its review names the suggestion and its proof. At a laptop's width and a phone's."""

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from questions import services
from questions.core import proof
from questions.dev import demo
from questions.models import Suggestion, Version
from questions.services import suggestions
from tests.e2e.conftest import SHOTS, WIDTHS, overflow
from tests.providers import DUMMY_TASKS, stand_in_serving

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, reset_sequences=True)]


@pytest.fixture
def demo_world(settings):
    """The demo, loaded as `make run` loads it, and the stand-in serving both wires; a
    suggestion is queued and not worked (the test works it, as a worker would)."""
    settings.TASKS = DUMMY_TASKS
    demo.demo_load()
    with stand_in_serving(settings):
        yield


def sign_in_demo(page, url: str, username: str) -> None:
    page.goto(f"{url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(demo.PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()


def shoot(page, locator, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        locator.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=False)
        locator.screenshot(path=str(SHOTS / f"{name}-{width}-whole.png"))
        assert overflow(page) <= 0, (name, width)
    page.set_viewport_size({"width": 1280, "height": 800})


def test_suggest_rewordings_from_the_card_to_a_draft_and_its_review(page, live_server, demo_world):
    sign_in_demo(page, live_server.url, "author")
    page.goto(f"{live_server.url}/sets/refund-triage/v1/")
    offers = page.locator("details.suggest")
    expect(offers).to_have_count(3)  # each question of v1 missed some state in its run
    details = offers.first  # desk's
    expect(details.locator("summary")).to_contain_text("Suggest rewordings")
    shoot(page, details, "suggest-offer")
    details.locator("summary").press("Enter")  # by keyboard
    shown = details.locator(".suggestion")
    expect(shown.locator(".candidate")).to_have_count(3)  # the demo's own suggestion
    expect(shown.locator(".candidate").first.locator(".candidate-verdict")).to_have_text(
        proof.BETTER
    )
    shoot(page, details, "suggest-demo")

    form = details.locator("form.suggest-form")
    form.get_by_role("button", name="Check plan and cost").click()
    plan = details.locator(".suggest-plan")
    expect(plan.locator(".suggest-calls")).to_contain_text("calls")
    expect(plan).to_contain_text("1 drafting call to llm")
    expect(plan).to_contain_text("held-out states")
    shoot(page, plan, "suggest-plan")
    calls = int(re.search(r"\d+", plan.locator(".suggest-calls").inner_text()).group())
    plan.get_by_role("button", name=re.compile(r"^Suggest: ")).click()
    running = details.locator(".suggestion")
    expect(running.locator("progress")).to_be_visible()
    made = Suggestion.objects.latest("id")
    assert made.status == "queued" and made.calls_planned == calls
    shoot(page, running, "suggest-running")

    suggestions.suggestion_execute(made.pk)  # the worker's part, here in the test's thread
    candidates = running.locator(".candidate")
    expect(candidates).to_have_count(3)  # the page polled its record
    expect(running.locator("progress")).to_have_count(0)
    verdicts = candidates.locator(".candidate-verdict")
    expect(verdicts).to_have_text([proof.BETTER, proof.NOT_PROVEN, proof.WORSE])
    better = candidates.first
    expect(better).to_contain_text("Candidate 1")
    expect(better.locator(".candidate-difference")).to_contain_text(" points [")
    expect(better.locator(".candidate-diff ins").first).to_contain_text("courier")
    expect(candidates.last.locator(".candidate-diff del").first).to_contain_text("refund")
    expect(running.locator(".suggest-key")).to_contain_text("held-out states only")
    shoot(page, running, "suggest-candidates")

    better.get_by_role("button", name="Use this").click()
    page.wait_for_url(re.compile(r"/sets/refund-triage/v2/$"))
    expect(page.locator(".messages, .message").first).to_contain_text("suggested from run")
    draft = Version.objects.get(question_set__slug="refund-triage", number=2)
    assert "courier" in draft.document["desk"]["criteria"]["shipping"]
    assert draft.parent.number == 1 and draft.is_draft

    author = get_user_model().objects.get(username="author")
    services.version_submit(version=draft, author=author)
    page.goto(f"{live_server.url}/sets/refund-triage/v2/review/")
    provenance = page.locator(".made-from")
    expect(provenance).to_contain_text("Made from a suggestion")
    expect(provenance).to_contain_text(f"{proof.BETTER} on ")
    expect(provenance).to_contain_text("reads as suggested")
    shoot(page, provenance, "suggest-review")

    page.goto(f"{live_server.url}/suggestions/{made.pk}/")  # its own page, readable alone
    expect(page.locator("h1")).to_contain_text("Suggested rewordings of desk")
    expect(page.locator(".suggestion .message.info")).to_contain_text("Used: v2")
    expect(page.locator(".candidate")).to_have_count(3)
    expect(page.get_by_role("button", name="Use this")).to_have_count(0)  # it made its draft
    shoot(page, page.locator("h1"), "suggestion-page")
