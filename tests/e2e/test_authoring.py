"""In a real browser: an author builds a set by typing, sees limits as they are broken, saves,
makes a new draft and reads the diff."""

import re

import pytest
from playwright.sync_api import expect

from questions import roles
from questions.models import Version
from tests import factories

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def author_signed_in(page, sign_in, django_user_model):
    factories.user("author", role=roles.AUTHOR, password="pw-for-browser-tests")
    return sign_in("author")


def test_author_builds_saves_drafts_and_diffs(page, author_signed_in):
    url = author_signed_in
    page.get_by_role("button", name="New set").click()
    page.get_by_label("Name").fill("Routing")
    page.get_by_label("Slug").fill("routing")
    page.get_by_role("button", name="Create with a first draft").click()
    page.wait_for_load_state()  # htmx and editor.js are deferred scripts
    expect(page.get_by_role("heading", name="Routing · v1")).to_be_visible()

    # a new choice question, built by typing
    page.locator(".editor-bar").get_by_role("button", name="choice", exact=True).click()
    card = page.locator("#cards .card").nth(1)
    expect(card.get_by_label("Question id")).to_have_value("question_2")
    card.get_by_label("Question id").fill("department")
    card.get_by_label("Instructions", exact=True).fill("Which desk should answer?")
    rows = card.locator(".rows .row")
    rows.nth(0).get_by_label("Option name").fill("billing")
    rows.nth(0).get_by_label("Description").fill("Payments and invoices")
    rows.nth(1).get_by_role("button", name="Remove").click()
    errors = card.locator(".slot .issue.error")
    expect(errors).to_contain_text(["choice department has 1 option; at least 2 options"])
    expect(card.locator(".counter")).to_have_text("1 / 255 options")
    card.get_by_role("button", name="Add option").click()
    rows.nth(1).get_by_label("Option name").fill("other")
    rows.nth(1).get_by_label("Description").fill("Anything else, or unclear")
    expect(card.locator(".counter")).to_have_text("2 / 255 options")
    expect(card.get_by_text("at least 2 options")).to_have_count(0)
    expect(card.locator(".card-status")).to_have_text("valid")

    # and a score
    page.locator(".editor-bar").get_by_role("button", name="score", exact=True).click()
    score = page.locator("#cards .card").nth(2)
    score.get_by_label("Question id").fill("urgency")
    levels = score.locator(".rows .row")
    levels.nth(0).get_by_label("Description").fill("can wait a week")
    levels.nth(1).get_by_label("Description").fill("needs an answer today")
    expect(score.locator(".counter")).to_have_text("2 / 10 levels")

    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Saved revision 2.")).to_be_visible()
    version = Version.objects.get(question_set__slug="routing", number=1)
    assert list(version.document) == ["first_question", "department", "urgency"]
    assert version.document["department"]["criteria"] == {
        "billing": "Payments and invoices",
        "other": "Anything else, or unclear",
    }
    assert version.document["urgency"]["criteria"] == ["can wait a week", "needs an answer today"]

    page.get_by_role("button", name="Submit for review").click()
    expect(page.get_by_text("is submitted for review")).to_be_visible()
    page.get_by_role("button", name="New draft from this version").click()
    page.wait_for_load_state()
    expect(page.get_by_role("heading", name="Routing · v2")).to_be_visible()
    page.locator("#cards .card").nth(2).locator(".rows .row").nth(1).get_by_label(
        "Description"
    ).fill("needs an answer within the hour")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Saved revision 2.")).to_be_visible()

    page.goto(f"{url}/sets/routing/diff/")
    expect(page.get_by_text("v1 → v2")).to_be_visible()
    diff = page.locator("article.diff")
    expect(diff).to_have_count(1)
    expect(diff.locator("del")).to_have_text(" today")
    expect(diff.locator("ins")).to_have_text(" within the hour")


def test_unsaved_work_is_flagged(page, author_signed_in):
    url = author_signed_in
    page.get_by_role("button", name="New set").click()
    page.get_by_label("Name").fill("Flags")
    page.get_by_label("Slug").fill("flags")
    page.get_by_role("button", name="Create with a first draft").click()
    page.wait_for_load_state()  # htmx and editor.js are deferred scripts
    page.locator("#cards .card").first.get_by_label("Instructions", exact=True).fill("Typed")
    expect(page.locator("#dirty")).to_have_text("Unsaved changes")
    assert url


def test_retype_duplicate_and_reorder_questions(page, author_signed_in):
    page.get_by_role("button", name="New set").click()
    page.get_by_label("Name").fill("Moves")
    page.get_by_label("Slug").fill("moves")
    page.get_by_role("button", name="Create with a first draft").click()
    page.wait_for_load_state()  # htmx and editor.js are deferred scripts
    first = page.locator("#cards .card").first
    first.get_by_role("button", name="Duplicate").click()
    cards = page.locator("#cards .card")
    expect(cards).to_have_count(2)
    expect(cards.nth(1).get_by_label("Question id")).to_have_value("first_question_copy")
    cards.nth(1).get_by_label("Type").select_option("score")
    expect(cards.nth(1).locator(".counter")).to_have_text("3 / 10 levels")
    cards.nth(1).get_by_role("button", name="Move question up").click()
    expect(cards.nth(0).get_by_label("Question id")).to_have_value("first_question_copy")
    rows = cards.nth(1).locator(".rows .row")
    rows.nth(2).get_by_role("button", name="Move up").click()
    expect(rows.nth(1).get_by_label("Option name")).to_have_value("unclear")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Saved revision 2")).to_be_visible()
    version = Version.objects.get(question_set__slug="moves", number=1)
    assert list(version.document) == ["first_question_copy", "first_question"]
    assert version.document["first_question_copy"]["type"] == "score"
    assert list(version.document["first_question"]["criteria"]) == ["yes", "unclear", "no"]


def test_a_large_card_opens_on_a_click_and_nothing_is_lost(page, author_signed_in):
    """Cards of more than 40 options render closed; one opened, edited and saved keeps every
    other card (closed or moved) exactly as stored."""
    from django.contrib.auth import get_user_model

    from questions import services
    from tests import factories

    url = author_signed_in
    author = get_user_model().objects.get(username="author")
    document = factories.document(2, options=60) | {"small": factories.document(1)["q0"]}
    question_set = factories.question_set("large", owner=author, doc=document)
    page.goto(f"{url}/sets/large/v1/")
    page.wait_for_load_state()
    cards = page.locator("#cards .card")
    expect(cards).to_have_count(3)
    expect(page.locator("#cards .card.closed")).to_have_count(2)
    assert page.locator("#cards .card.closed .row").count() == 0  # no option rendered yet

    second = cards.nth(1)
    second.get_by_role("button", name="Open to edit").click()
    second = page.locator("#cards .card").nth(1)
    expect(second.locator(".rows .row")).to_have_count(60)
    expect(second.get_by_label("Question id")).to_have_value("q1")
    row = second.locator(".rows .row").nth(5)
    expect(row.get_by_label("Option name")).to_have_value("o5")
    row.get_by_label("Description").fill("option five, edited in the browser")
    expect(page.locator("#dirty")).to_have_text("Unsaved changes")
    expect(second.locator(".card-status")).to_have_text("valid")
    # the first card stays closed and moves below the opened one
    cards.nth(0).get_by_role("button", name="Move question down").click()
    expect(page.locator("#cards .card").nth(1)).to_have_class(re.compile(r"\bclosed\b"))

    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Saved revision 2.")).to_be_visible()
    saved = services.open_draft(question_set)
    document["q1"]["criteria"]["o5"] = "option five, edited in the browser"
    assert list(saved.document) == ["q1", "q0", "small"]
    assert saved.document == document
