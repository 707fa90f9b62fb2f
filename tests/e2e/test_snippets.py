"""In a real browser: from the set page to a label's export page, where the code that calls
the approved questions sits in tabs — a click or the arrow keys change the language, the copy
button copies the shown code — at a laptop's width and at a phone's, nothing wider than the
screen."""

import pytest
from playwright.sync_api import expect

from questions import exports, roles, services
from questions.core import snippets
from questions.models import Version
from tests import factories
from tests.e2e.conftest import SHOTS, overflow
from tests.providers import DOC

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_export_page_shows_the_code_in_tabs_with_copy_buttons(page, sign_in):
    writer = factories.user("author", groups=(roles.AUTHORS,), password="pw-for-browser-tests")
    checker = factories.reviewer("checker")
    qs = factories.question_set("support", owner=writer, doc=DOC)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    services.version_approve(
        version=version, reviewer=checker, label="production", confirm_weak_evidence=True
    )
    export = exports.export_document(Version.objects.get(pk=version.pk))
    url = sign_in("author")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{url}/sets/support/")
    page.get_by_role("link", name="export & code").click()
    expect(page.get_by_role("heading", name="production → version 1")).to_be_visible()
    curl, python = page.locator("#panel-curl"), page.locator("#panel-python")
    expect(curl).to_be_visible()
    expect(python).to_be_hidden()
    page.get_by_text("Python (httpx)", exact=True).click()
    expect(python).to_be_visible()
    expect(curl).to_be_hidden()
    page.keyboard.press("ArrowRight")  # the focused tab's group moves to the next language
    expect(page.locator("#panel-typescript")).to_be_visible()
    code = page.locator("#snippet-typescript").inner_text()
    assert code.strip() == snippets.snippet("typescript", export, "production").strip()
    page.locator("#panel-typescript").get_by_role("button", name="Copy").click()
    expect(page.locator("#panel-typescript").get_by_role("button")).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == code.strip()
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in ((1280, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        assert overflow(page) <= 0, f"wider than {width} px"
        page.screenshot(path=SHOTS / f"label-export-{width}.png", full_page=True)
