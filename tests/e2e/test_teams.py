"""In a real browser: a team's admin adds a member as reviewer on the team's page, changes their
role and reads it in the audit log, filtered; makes an API token that expires; the team page
shows the day's provider calls against the budget. The team, audit and tokens pages fit the
window at 1280 and 390 px, and are photographed for a person to look at (E2E_SHOTS)."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from questions import roles, services
from questions.models import APIToken, AuditEntry, Membership
from tests import factories
from tests.e2e.conftest import SHOTS, WIDTHS, overflow, sign_in_user

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def _team_with_work(settings):
    """Team payments with its admin, a writer, a set with a queued run on a live backend (never
    worked: no provider is asked) and a token."""
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "never-asked", "http://127.0.0.1:9"
    team = factories.team("payments")
    boss = factories.admin("boss", team=team)
    writer = factories.author("writer", team=team)
    qs = factories.question_set("refund-triage", owner=writer, team=team)
    for i in range(3):
        services.sample_state_create(question_set=qs, name=f"s{i}", state={"n": i}, author=writer)
    services.batch_create(
        version=factories.draft(qs), backend="typesafe", user=writer, enqueue=False
    )
    services.api_token_create(name="payments-runtime", user=boss, team=team, sets=["refund-triage"])
    get_user_model().objects.create_user("kim")
    return team, boss


def test_an_admin_adds_a_reviewer_and_reads_it_in_the_audit_log(page, live_server, settings):
    settings.DECISIONS_TEAM_DAILY_CALLS = 500
    _, boss = _team_with_work(settings)
    sign_in_user(page, live_server.url, boss)
    page.goto(f"{live_server.url}/teams/payments/")
    expect(page.get_by_role("heading", name="Provider calls today")).to_be_visible()
    expect(page.locator(".spend")).to_contain_text("3 in flight")  # the queued run
    expect(page.locator(".spend")).to_contain_text("497 left")
    page.get_by_label("User", exact=True).fill("kim")
    page.locator("form[aria-labelledby=add-member-heading] select[name=role]").select_option(
        "reviewer"
    )
    page.get_by_role("button", name="Add member").click()
    expect(page.locator(".message.success")).to_contain_text("kim is reviewer in payments")
    assert Membership.objects.get(user__username="kim").role == roles.REVIEWER
    page.get_by_label("Role of kim").select_option("author")
    page.locator("form", has=page.get_by_label("Role of kim")).get_by_role(
        "button", name="Change role"
    ).click()
    expect(page.locator(".message.success")).to_contain_text("kim is author in payments")
    page.get_by_role("link", name="Audit log").click()
    page.get_by_label("Action").select_option("member.added")
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("#audit-rows tbody tr")
    expect(rows.first).to_contain_text("boss")
    expect(rows.first).to_contain_text("kim")
    expect(rows.first).to_contain_text("reviewer")
    assert "action=member.added" in page.url
    changed = AuditEntry.objects.get(action="member.role_changed")
    assert (changed.actor_name, changed.detail) == (
        "boss",
        {"user": "kim", "from": "reviewer", "to": "author"},
    )


def test_an_admin_makes_a_token_that_expires(page, live_server, settings):
    _, boss = _team_with_work(settings)
    sign_in_user(page, live_server.url, boss)
    page.goto(f"{live_server.url}/tokens/?team=payments")
    page.get_by_label("Name").fill("nightly job")
    page.get_by_label("Expires").select_option("90")
    page.get_by_role("button", name="Create token").click()
    expect(page.locator("#new-token")).to_contain_text("dct_")
    made = APIToken.objects.get(name="nightly job")
    row = page.locator("tr", has_text="nightly job")
    expect(row).to_contain_text(f"{made.expires_at:%Y-%m-%d %H:%M}")  # its Expires cell
    assert made.team.slug == "payments"
    assert AuditEntry.objects.filter(action="token.created", actor_name="boss").exists()


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_the_team_audit_and_tokens_pages_fit_and_are_photographed(
    browser, live_server, settings, width, height
):
    settings.DECISIONS_TEAM_DAILY_CALLS = 500
    _, boss = _team_with_work(settings)
    services.member_set(
        team=services.team_named("payments", user=roles.OPERATOR),
        username="kim",
        role="reviewer",
        user=boss,
    )
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    sign_in_user(page, live_server.url, boss)
    SHOTS.mkdir(parents=True, exist_ok=True)
    wide = []
    for name, path in (
        ("team", "/teams/payments/"),
        ("audit", "/teams/payments/audit/"),
        ("tokens", "/tokens/?team=payments"),
        ("teams", "/teams/"),
    ):
        page.goto(live_server.url + path)
        page.wait_for_load_state()
        if overflow(page) > 0:
            wide.append((path, overflow(page)))
        page.screenshot(path=SHOTS / f"{name}-{width}.png", full_page=True)
    context.close()
    assert wide == []
