"""API tokens per team: a token reaches its own team's sets only (another team's export is a
404, as a set that is not there), may expire, shows its last use, and is made and revoked by the
team's admins and reviewers on the tokens page and the command line."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from questions import roles, services
from questions.models import APIToken
from tests import factories
from tests.helpers import token_form
from tests.providers import run_cli

pytestmark = pytest.mark.django_db


def _approved(slug: str, team=None):
    qs = factories.question_set(slug, team=team)
    services.version_approve(
        version=services.version_submit(version=factories.draft(qs), author=qs.owner),
        reviewer=factories.reviewer(team=team),
        confirm_weak_evidence=True,
        label="production",
    )
    return qs


def _fetch(slug: str, raw: str) -> int:
    return (
        Client()
        .get(f"/api/sets/{slug}/export.json?label=production", HTTP_AUTHORIZATION=f"Bearer {raw}")
        .status_code
    )


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_token_of_team_a_gets_404_on_team_bs_export():
    payments, support = factories.team("payments"), factories.team("support")
    _approved("refunds", payments)
    _approved("tickets", support)
    boss = factories.admin("boss", team=payments)
    _, every = services.api_token_create(name="rt", user=boss, team=payments)
    _, named = services.api_token_create(name="rt2", user=boss, team=payments, sets=["refunds"])
    assert (_fetch("refunds", every), _fetch("tickets", every)) == (200, 404)
    assert (_fetch("refunds", named), _fetch("tickets", named)) == (200, 404)
    body = Client().get(
        "/api/sets/tickets/export.json?label=production", HTTP_AUTHORIZATION=f"Bearer {every}"
    )
    assert body.json() == {"status": 404, "code": "not_found", "detail": "There is no set tickets."}
    # the same answer as for a set that is not there at all
    assert _fetch("nowhere", every) == 404


def test_a_token_names_only_its_own_teams_sets():
    payments = factories.team("payments")
    _approved("tickets")  # the default team's
    boss = factories.admin("boss", team=payments)
    with pytest.raises(services.Invalid, match="There is no set tickets"):
        services.api_token_create(name="rt", user=boss, team=payments, sets=["tickets"])


def test_a_token_expires():
    _approved("s")
    token, raw = services.api_token_create(
        name="rt", user=roles.OPERATOR, expires_in=timedelta(days=90)
    )
    assert abs(token.expires_at - (timezone.now() + timedelta(days=90))) < timedelta(minutes=1)
    assert _fetch("s", raw) == 200
    APIToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert _fetch("s", raw) == 401
    assert not APIToken.objects.get(pk=token.pk).active
    with pytest.raises(services.Invalid):
        services.api_token_create(name="x", user=roles.OPERATOR, expires_in=timedelta(days=0))


@pytest.mark.parametrize("role", [roles.VIEWER, roles.AUTHOR])
def test_only_a_teams_admins_and_reviewers_manage_its_tokens(role):
    payments = factories.team("payments")
    someone = factories.user("someone", role=role, team=payments)
    with pytest.raises(services.NotAllowed):
        services.api_token_create(name="rt", user=someone, team=payments)
    assert _client(someone).get(reverse("token-list")).status_code == 403
    assert not APIToken.objects.exists()


def test_the_tokens_page_shows_and_revokes_the_chosen_teams_tokens_only():
    payments, support = factories.team("payments"), factories.team("support")
    boss = factories.admin("boss", team=payments)
    services.member_set(team=support, username="boss", role="reviewer", user=roles.OPERATOR)
    outsider_token, _ = services.api_token_create(name="default-rt", user=roles.OPERATOR)
    services.api_token_create(name="support-rt", user=roles.OPERATOR, team=support)
    client = _client(boss)
    page = client.get(reverse("token-list"), {"team": "payments"}).content.decode()
    assert "support-rt" not in page and "default-rt" not in page
    made = client.post(
        reverse("token-list"),
        {"name": "runtime", "team": "payments", "expires": "90", **token_form(client)},
    )
    assert made.status_code == 200 and "copy it now" in made.content.decode()
    token = APIToken.objects.get(name="runtime")
    assert token.team == payments and token.expires_at is not None
    assert "support-rt" in client.get(reverse("token-list"), {"team": "support"}).content.decode()
    # a token of a team the page was not opened for, or of another team, is not there
    refused = client.post(reverse("token-list"), {"team": "payments", "revoke": outsider_token.pk})
    assert refused.status_code == 404
    assert client.get(reverse("token-list"), {"team": "default"}).status_code == 404
    assert APIToken.objects.get(pk=outsider_token.pk).revoked_at is None
    client.post(reverse("token-list"), {"team": "payments", "revoke": token.pk})
    assert APIToken.objects.get(pk=token.pk).revoked_at is not None


def test_the_tokens_page_shows_when_a_token_was_last_used_and_when_it_expires():
    _approved("s")
    boss = factories.admin("boss")
    _, raw = services.api_token_create(name="rt", user=boss, expires_in=timedelta(days=30))
    assert _fetch("s", raw) == 200
    page = _client(boss).get(reverse("token-list")).content.decode()
    row = page.split("<td>rt</td>")[1].split("</tr>")[0]
    used = APIToken.objects.get(name="rt").last_used_at
    assert f"{timezone.localtime(used):%Y-%m-%d %H:%M}" in row and "never" not in row


def test_the_token_command_makes_lists_and_revokes_per_team(tmp_path):
    _approved("refunds", factories.team("payments"))
    factories.admin("boss", team=services.team_named("payments", user=roles.OPERATOR))
    code, out, _ = run_cli(
        "token", "--name", "rt", "--team", "payments", "--expires", "90d", "--by", "boss", "--json"
    )
    made = json.loads(out)
    assert code == 0 and made["team"] == "payments" and made["token"].startswith("dct_")
    assert made["expires_at"] and made["last_used_at"] is None
    assert _fetch("refunds", made["token"]) == 200
    code, out, _ = run_cli("token", "--list", "--team", "payments", "--json")
    listed = json.loads(out)
    assert [(t["name"], t["active"]) for t in listed] == [("rt", True)]
    assert listed[0]["last_used_at"] is not None
    code, _, err = run_cli("token", "--name", "x", "--expires", "ninety")
    assert code == 2 and "90d" in err
    code, out, _ = run_cli("token", "--revoke", "rt", "--team", "payments", "--json")
    assert code == 0 and json.loads(out)["revoked"] == 1
    assert _fetch("refunds", made["token"]) == 401
