"""In a real browser, under the content security policy: the pages work and nothing is blocked
(every e2e test fails on a violation, see conftest); here, that the policy is enforced and
that a blocked thing is noticed, and the confirmations that used to be inline handlers."""

import pytest
from playwright.sync_api import expect

from questions import roles, services
from questions.models import Version
from tests import factories
from tests.e2e.conftest import csp_violations

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_policy_is_enforced_and_a_violation_is_noticed(page, sign_in, console_messages):
    factories.user("author", groups=(roles.AUTHORS,), password="pw-for-browser-tests")
    url = sign_in("author")
    page.goto(f"{url}/")
    page.wait_for_load_state()
    assert page.evaluate("typeof htmx") == "object"  # the static scripts ran
    assert page.evaluate("htmx.config.allowEval") is False
    assert csp_violations(console_messages) == []
    # an inline script added to the page does not run, and the attempt is reported
    page.evaluate(
        "() => { const s = document.createElement('script');"
        " s.textContent = 'window.ranInline = true'; document.body.append(s); }"
    )
    page.wait_for_timeout(200)
    assert page.evaluate("window.ranInline") is None
    blocked = csp_violations(console_messages)
    assert blocked and "script-src" in blocked[0]
    console_messages.clear()  # seen and expected; the fixture's check is for the pages


@pytest.mark.browser_smoke
def test_editor_validation_preview_and_confirmations_work_under_the_policy(
    page, sign_in, console_messages
):
    user = factories.user("author", groups=(roles.AUTHORS,), password="pw-for-browser-tests")
    qs = factories.question_set("csp", owner=user)
    services.sample_state_create(question_set=qs, name="one", state={"n": 1}, author=user)
    url = sign_in("author")
    page.goto(f"{url}/sets/csp/v1/")
    page.wait_for_load_state()
    card = page.locator("#cards .card").first
    rows = card.locator(".rows .row")
    rows.nth(2).get_by_role("button", name="Remove").click()
    rows.nth(1).get_by_role("button", name="Remove").click()
    errors = card.locator(".slot .issue.error")  # htmx asked the server to validate
    expect(errors).to_contain_text(["has 1 option; at least 2 options"])
    card.get_by_role("button", name="Add option").click()
    rows.nth(1).get_by_label("Option name").fill("other")
    expect(errors).to_have_count(0)
    # Submit with unsaved changes asks first (data-confirm-if); dismissing keeps the draft
    questions = []

    def answer(dialog):
        questions.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", answer)
    page.get_by_role("button", name="Submit for review").click()
    page.wait_for_timeout(300)
    assert questions == ["Submit without your unsaved changes?"]
    assert Version.objects.get(question_set=qs, number=1).status == Version.Status.DRAFT
    page.get_by_role("button", name="Discard draft").click()
    page.wait_for_timeout(300)
    assert questions[-1] == "Discard this draft? Its content is deleted."
    assert Version.objects.filter(question_set=qs, number=1).exists()
    assert csp_violations(console_messages) == []


def test_the_admin_works_under_the_policy(page, sign_in, console_messages, django_user_model):
    django_user_model.objects.create_superuser("boss", password="pw-for-browser-tests")
    url = sign_in("boss")
    for path in ("/admin/", "/admin/axes/accessattempt/", "/admin/questions/version/"):
        page.goto(f"{url}{path}")
        page.wait_for_load_state()
        expect(page.locator("#site-name")).to_be_visible()
    assert csp_violations(console_messages) == []
