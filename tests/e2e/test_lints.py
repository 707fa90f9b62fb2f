"""In a real browser: a lint appears live at the question as the author types (a counting
instruction, a state path no sample state has), and the review page shows each question's
lints at the question, at 1280 px and 390 px."""

import pytest
from playwright.sync_api import expect

from questions import services
from tests import factories
from tests.e2e.conftest import sign_in_user

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DOC = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk owns the ticket?",
        "criteria": {
            "billing": "Charges, refunds and invoices",
            "tech": "Something in the product is broken",
            "other": "Anything else, or it is unclear",
        },
    },
    "urgency": {
        "type": "score",
        "instructions": "How urgent is the ticket?",
        "criteria": ["low", "medium", "high"],
    },
}


def _a_set():
    writer = factories.author("writer")
    qs = factories.question_set("triage", owner=writer, doc=DOC)
    services.sample_state_create(
        question_set=qs, name="a ticket", state={"ticket": {"text": "help"}}, author=writer
    )
    return services.open_draft(qs), writer


@pytest.mark.parametrize("width", [1280, 390])
def test_a_lint_appears_live_at_the_question_as_the_author_types(
    page, live_server, width, tmp_path
):
    version, writer = _a_set()
    sign_in_user(page, live_server.url, writer)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/sets/triage/v{version.number}/")
    desk = page.locator(".card", has=page.locator("input[value=desk]"))
    urgency = page.locator(".card", has=page.locator("input[value=urgency]"))
    expect(urgency.locator(".slot").filter(has_text="are bare labels")).to_have_count(1)
    instructions = desk.locator("textarea.instructions-text")
    slot = desk.locator(".instructions .slot")
    expect(slot).not_to_contain_text("count")
    instructions.fill("How many desks does `ticket.owner` need?")
    expect(slot).to_contain_text("“How many” asks the model to count")
    expect(slot).to_contain_text("ticket.owner is in none of the sample states")
    page.screenshot(path=str(tmp_path / f"editor-{width}.png"), full_page=True)
    instructions.fill("Which desk owns `ticket.text`?")
    expect(slot).not_to_contain_text("count")
    expect(slot).not_to_contain_text("sample states")


@pytest.mark.parametrize("width", [1280, 390])
def test_the_review_page_shows_the_lints_at_each_question(page, live_server, width, tmp_path):
    version, writer = _a_set()
    services.version_save(
        version=version,
        document={**DOC, "desk": {**DOC["desk"], "instructions": "Summarise the ticket."}},
        base_revision=version.revision,
        author=writer,
    )
    services.version_submit(version=version, author=writer)
    reviewer = factories.reviewer("rev")
    sign_in_user(page, live_server.url, reviewer)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/sets/triage/v{version.number}/review/")
    desk = page.locator("article#q-desk")
    expect(desk.locator(".question-lints")).to_contain_text("asks the model to write text")
    expect(page.locator("article#q-urgency .question-lints")).to_contain_text("bare labels")
    page.screenshot(path=str(tmp_path / f"review-{width}.png"), full_page=True)
    overflow = page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
    assert not overflow


@pytest.mark.parametrize("width", [1280, 390])
def test_a_finding_accepted_from_the_editor_stops_showing_and_the_review_shows_why(
    page, live_server, width, tmp_path
):
    version, writer = _a_set()
    sign_in_user(page, live_server.url, writer)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/sets/triage/v{version.number}/")
    urgency = page.locator(".card", has=page.locator("input[value=urgency]"))
    bare = urgency.locator(".slot .issue.warning").filter(has_text="are bare labels")
    expect(bare).to_have_count(1)
    bare.get_by_role("link", name="Accept with a reason…").click()
    expect(page.locator(".lint-finding")).to_contain_text("are bare labels")
    page.get_by_label("Why this finding is fine here").fill("the application maps these three")
    page.screenshot(path=str(tmp_path / f"accept-page-{width}.png"), full_page=True)
    assert not page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
    page.get_by_role("button", name="Accept this finding").click()
    expect(page.locator(".messages .message.success")).to_contain_text("Accepted the")
    urgency = page.locator(".card", has=page.locator("input[value=urgency]"))
    expect(urgency.locator(".slot").filter(has_text="are bare labels")).to_have_count(0)
    services.version_submit(version=version, author=writer)
    sign_in_user(page, live_server.url, factories.reviewer("rev"))
    page.goto(f"{live_server.url}/sets/triage/v{version.number}/review/")
    accepted = page.locator("#accepted-lints")
    expect(accepted).to_contain_text("bare_levels")
    expect(accepted).to_contain_text("the application maps these three")
    expect(page.locator("article#q-urgency .question-lints")).to_have_count(0)
    accepted.screenshot(path=str(tmp_path / f"accepted-lints-{width}.png"))
    page.screenshot(path=str(tmp_path / f"accepted-{width}.png"), full_page=True)
    assert not page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
