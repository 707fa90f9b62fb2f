"""In a real browser: which words decide, launched from a question's card in the editor and
from the review page — the calls and cost shown first, then the run, then the words with the
decisive parts marked by colour, rank and change — at a laptop's width and at a phone's."""

import pytest
from playwright.sync_api import expect

from questions import roles, services
from questions.core import attribution
from questions.models import BatchRun
from tests import factories
from tests.e2e.conftest import SHOTS, WIDTHS, overflow
from tests.providers import DUMMY_TASKS, ROUTING, ROUTING_STATE, Provider, overlap_answers

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def provider(provider_factory):
    return provider_factory(Provider(overlap_answers), key="k-e2e", TASKS=DUMMY_TASKS)


def _attribute(page, details, state="refund"):
    """Open the card's attribution, check the calls, ask; the worker's part is the test's."""
    details.locator("summary").press("Enter")  # by keyboard
    form = details.locator("form.attribution-form")
    form.locator("select[name=state]").select_option(state)
    form.get_by_role("button", name="Check calls").click()
    expect(details.locator(".attribution-calls")).to_be_visible()
    details.get_by_role("button", name="Ask").click()
    expect(details.locator(".attribution-run")).to_be_visible()
    run = BatchRun.objects.filter(kind=attribution.KIND).latest("id")
    services.batch_execute(run.pk)  # the worker, here in the test's thread
    expect(details.locator(".attribution-words mark.attr-decisive").first).to_be_visible()
    return run


def test_the_decisive_words_are_marked_on_the_card_and_the_review(page, sign_in, provider):
    user = factories.user("author", groups=(roles.AUTHORS,), password="pw-for-browser-tests")
    qs = factories.question_set("attr", owner=user, doc=ROUTING)
    services.sample_state_create(question_set=qs, name="refund", state=ROUTING_STATE, author=user)
    url = sign_in("author")
    page.goto(f"{url}/sets/attr/v1/")
    card = page.locator(".card").first
    details = card.locator("details.attribution")
    expect(details.locator("summary")).to_have_text("Which words decide?")
    _attribute(page, details)
    first = details.locator(".attribution-words mark.attr-decisive").first
    expect(first.locator(".attr-rank")).to_have_text("#1")  # readable without colour
    expect(first).to_contain_text(ROUTING["desk"]["criteria"]["billing"])
    expect(first.locator(".attr-delta")).to_have_text("−0.50")
    expect(details.locator(".attr-plain").first).to_contain_text("Which desk")
    expect(details.locator(".attr-role").first).to_have_text("what:")  # tech's parts, named
    expect(page.locator("#dirty")).not_to_contain_text("Unsaved")  # choosing a state edits nothing
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        details.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"attribution-card-{width}.png"), full_page=False)
        assert overflow(page) <= 0
    page.set_viewport_size({"width": 1280, "height": 800})
    preview = page.locator("#preview details.attribution")
    _attribute(page, preview)
    expect(preview.locator("dt", has_text="state ticket").first).to_be_visible()
    expect(preview.locator("section.attribution-report")).to_have_count(3)
    preview.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "attribution-preview-1280.png"), full_page=False)

    services.version_submit(version=services.open_draft(qs), author=user)
    page.goto(f"{url}/sets/attr/v1/review/")
    urgent = page.locator("article.review-question").nth(1).locator("details.attribution")
    _attribute(page, urgent)
    expect(urgent.locator(".attribution-words mark.attr-decisive").first).to_contain_text(
        "wants an answer today"
    )
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        urgent.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"attribution-review-{width}.png"), full_page=False)
        assert overflow(page) <= 0
    run = BatchRun.objects.filter(kind=attribution.KIND).latest("id")
    page.goto(f"{url}/runs/{run.pk}/")
    expect(page.locator("#attribution-heading")).to_have_text("Which words decide")
    calls = run.items.count()
    expect(page.locator("#run-progress")).to_contain_text(f"1 / 1 state ({calls} / {calls} calls)")
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        page.locator("#attribution-heading").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"attribution-run-{width}.png"), full_page=False)
        page.screenshot(path=str(SHOTS / f"attribution-run-{width}-full.png"), full_page=True)
        assert overflow(page) <= 0
