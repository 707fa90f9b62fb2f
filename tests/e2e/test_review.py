"""In a real browser: an author submits, a reviewer approves with the production label, and the
downloaded export validates against the published schema."""

import json
from pathlib import Path

import jsonschema
import pytest
from playwright.sync_api import expect

from questions import exports
from questions.selectors import sets
from tests import factories

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-for-browser-tests"


def test_submit_approve_with_production_and_download_a_valid_export(page, live_server, browser):
    writer = factories.author("writer")
    writer.set_password(PASSWORD)
    writer.save()
    checker = factories.reviewer("checker")
    checker.set_password(PASSWORD)
    checker.save()
    factories.question_set("routing", owner=writer)

    def sign_in(p, username):
        p.goto(f"{live_server.url}/accounts/login/")
        p.get_by_label("Username").fill(username)
        p.get_by_label("Password").fill(PASSWORD)
        p.get_by_role("button", name="Sign in").click()
        p.wait_for_load_state()

    sign_in(page, "writer")
    page.goto(f"{live_server.url}/sets/routing/v1/")
    page.get_by_role("button", name="Submit for review").click()
    expect(page.get_by_text("is submitted for review")).to_be_visible()

    reviewer_context = browser.new_context(accept_downloads=True)
    review = reviewer_context.new_page()
    sign_in(review, "checker")
    review.get_by_role("link", name="Reviews").click()
    review.get_by_role("link", name="v1 — review").click()
    expect(review.get_by_role("heading", name="Review Routing · v1")).to_be_visible()
    # the whole content of every question, though nothing was approved before
    version = sets.version_named("routing", number=1)
    for qid, question in version.document.items():
        card = review.locator(f"#q-{qid}")
        expect(card).to_contain_text(question.get("instructions") or "(no instructions)")
        if question["type"] == "choice":
            for option in question["criteria"]:
                expect(card.locator("dt", has_text=option).first).to_be_visible()
    # no run: approving needs the explicit confirmation, which the server requires
    review.get_by_label("Note").fill("Checked the options")
    review.get_by_role("button", name="Approve").click()
    expect(review.get_by_role("alert")).to_contain_text("has no finished batch run")
    review.get_by_label("Approve anyway").check()
    review.get_by_label("Note").fill("Checked the options")
    review.get_by_label("Point a label at it on approval (optional)").fill("production")
    review.get_by_role("button", name="Approve").click()
    expect(review.get_by_text("Approved version 1.")).to_be_visible()
    expect(review.locator(".events")).to_contain_text(
        "Approved although this version has no finished batch run over the sample states "
        "(confirmed). Checked the options"
    )

    with review.expect_download() as download:
        review.get_by_role("button", name="Download export").click()
    document = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    schema = review.request.get(f"{live_server.url}/schemas/question-set-1.json").json()
    jsonschema.Draft202012Validator(schema).validate(document)
    assert schema == json.loads(exports.EXPORT_SCHEMA_PATH.read_text())
    assert (document["question_set"], document["version"], document["approved_by"]) == (
        "routing",
        1,
        "checker",
    )

    review.goto(f"{live_server.url}/sets/routing/")
    expect(review.locator(".label-chip")).to_contain_text("production → v1")
    reviewer_context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_review_warns_when_the_stand_in_answered_the_evidence(
    page, live_server, settings, width
):
    """The evidence run is answered by the local stand-in (a real loopback server): the review
    says which model answered it and warns that production asks another."""
    from questions import services
    from tests.providers import stand_in_serving

    writer, checker = factories.author("writer"), factories.reviewer("checker")
    checker.set_password(PASSWORD)
    checker.save()
    qs = factories.question_set("routing", owner=writer)
    services.sample_state_create(question_set=qs, name="s0", state={"n": 0}, author=writer)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    with stand_in_serving(settings):
        run = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
        services.batch_execute(run.pk)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("checker")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()
    page.goto(f"{live_server.url}/sets/routing/v1/review/")
    pin = page.locator("#pin")
    expect(pin.locator(".resolution")).to_contain_text("jev-latest answered by local-stand-in")
    expect(pin.locator(".model-warning")).to_contain_text("the local stand-in")
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    pin.scroll_into_view_if_needed()
    page.screenshot(path=f"/tmp/review-model-warning-{width}.png")
