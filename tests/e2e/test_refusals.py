"""In a real browser: a refused htmx request says so. htmx 2 swaps no 4xx response itself, so
without console.js's handler these clicks changed nothing and said nothing."""

import pytest
from playwright.sync_api import expect

from questions import roles, services
from tests import factories
from tests.e2e.conftest import sign_in_user
from tests.providers import KEY, Provider

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

BIG = {
    "big": {"type": "choice", "criteria": {f"option_{i}": f"words {i}" for i in range(45)}},
    "small": {"type": "noul", "instructions": "Is it urgent?"},
}


def test_opening_a_card_whose_question_went_away_says_so(page, live_server):
    writer = factories.author("writer")
    qs = factories.question_set("triage", owner=writer, doc=BIG)
    sign_in_user(page, live_server.url, writer)
    page.goto(f"{live_server.url}/sets/triage/v1/")
    opener = page.get_by_role("button", name="Open to edit")
    expect(opener).to_be_visible()
    draft = qs.versions.open_draft()
    services.version_save(  # another tab removes the question while this page is open
        version=draft, document={"small": BIG["small"]}, base_revision=1, author=writer
    )
    opener.click()
    expect(page.locator("#request-error [role=alert]")).to_contain_text(
        "has no question 'big' (any more): reload the page"
    )
    expect(opener).to_be_visible()  # the card is left as it was


def test_a_preview_refused_after_the_role_was_taken_says_why(page, live_server, settings):
    provider = Provider(default={})
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = KEY, provider.url
    try:
        writer = factories.author("writer")
        factories.question_set("triage", owner=writer, doc=BIG)
        sign_in_user(page, live_server.url, writer)
        page.goto(f"{live_server.url}/sets/triage/v1/")
        page.locator("select[name=preview_backend]").select_option("typesafe")
        services.member_set(  # the role taken while the page is open
            team=services.team_default(), username="writer", role=roles.VIEWER, user=roles.OPERATOR
        )
        page.locator("#preview-form button[type=submit]").click()
        expect(page.locator("#request-error [role=alert]")).to_contain_text(
            services.LIVE_ASKERS_ONLY
        )
        assert provider.requests == []
    finally:
        provider.stop()
