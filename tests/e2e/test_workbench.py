"""In a real browser: the small helps a product owner meets first — a slug that follows the
name, and a one-time token that copies with one click."""

import pytest
from playwright.sync_api import expect

from questions import services
from tests import factories
from tests.e2e.conftest import sign_in_user

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_slug_follows_the_name_until_it_is_edited(page, live_server):
    sign_in_user(page, live_server.url, factories.author("writer"))
    page.goto(f"{live_server.url}/sets/new/")
    page.get_by_label("Name").fill("Refund triage EU — Ünïcode!")
    slug = page.get_by_label("Slug")
    expect(slug).to_have_value("refund-triage-eu-unicode")
    slug.fill("refunds")
    page.get_by_label("Name").fill("Something else")
    expect(slug).to_have_value("refunds")
    page.get_by_role("button", name="Create with a first draft").click()
    expect(page).to_have_url(f"{live_server.url}/sets/refunds/v1/")


def test_the_new_token_copies_to_the_clipboard(page, live_server, browser):
    writer, checker = factories.author("writer"), factories.reviewer("checker")
    qs = factories.question_set("triage", owner=writer)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    services.version_approve(
        confirm_weak_evidence=True, version=version, reviewer=checker, label="production"
    )
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in_user(page, live_server.url, checker)
    page.get_by_role("link", name="API tokens").click()
    page.get_by_label("Name").fill("runtime")
    page.get_by_role("button", name="Create token").click()
    token = page.locator("#new-token").inner_text()
    page.locator('[data-copy="#new-token"]').click()
    expect(page.locator('[data-copy="#new-token"]')).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == token
    page.locator('[data-copy="#new-curl"]').click()
    curl = page.evaluate("navigator.clipboard.readText()")
    assert curl == (
        f'curl -H "Authorization: Bearer {token}" '
        f'"{live_server.url}/api/sets/triage/export.json?label=production"'
    )
