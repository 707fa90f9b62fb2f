"""Single sign-on, for real: the console signs people in through an OpenID Connect provider the
suite starts on loopback (django-oauth-toolkit's, in its own process: tests/oidc_idp.py) —
discovery, the authorization code flow with PKCE, the ID token checked by django-allauth — and
gives them the roles their groups map to. Refused: an ID token for another client, an expired
one, a user none of whose groups has a role here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from questions import roles, services
from questions.core import sso
from questions.models import AuditEntry, Membership
from questions.services.teams import member_sync
from tests import factories
from tests.oidc_idp import EXPIRED, WRONG_AUDIENCE

pytestmark = [pytest.mark.django_db, pytest.mark.xdist_group("sso")]

ROOT = Path(__file__).resolve().parent.parent
CALLBACK = "http://testserver/accounts/oidc/idp/login/callback/"
MAPPING = (
    "payments-admins=payments:admin,support-authors=support:author,"
    "support-reviewers=support:reviewer"
)
PEOPLE = [
    ("pia", ["payments-admins"]),
    ("sam", ["support-authors"]),
    ("rex", ["support-authors", "support-reviewers"]),
    (WRONG_AUDIENCE, ["payments-admins"]),
    (EXPIRED, ["payments-admins"]),
    ("ned", ["marketing"]),  # no group of the mapping
]


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    """The loopback identity provider, for the module: its issuer, client id and secret."""
    folder = tmp_path_factory.mktemp("idp")
    spec = {
        "client_id": "decision-console",
        "client_secret": "idp-secret-for-tests",
        "redirect_uris": [CALLBACK],
        "users": [
            {"username": u, "password": f"pw-{u}", "email": f"{u}@example.com", "groups": g}
            for u, g in PEOPLE
        ],
    }
    (folder / "spec.json").write_text(json.dumps(spec))
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.oidc_idp", str(folder / "spec.json")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        first = process.stdout.readline()
        assert first.startswith("port "), first
        yield {**spec, "issuer": f"http://127.0.0.1:{int(first.split()[1])}/o"}
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture
def console(idp, settings):
    """The console aimed at the identity provider, its groups mapped to two teams' roles."""
    settings.SOCIALACCOUNT_PROVIDERS = {
        "openid_connect": {
            "OAUTH_PKCE_ENABLED": True,
            "SCOPE": ["openid", "profile", "email", "groups"],
            "APPS": [
                {
                    "provider_id": "idp",
                    "name": "Loopback IdP",
                    "client_id": idp["client_id"],
                    "secret": idp["client_secret"],
                    "settings": {"server_url": idp["issuer"], "fetch_userinfo": True},
                }
            ],
        }
    }
    settings.OIDC_PROVIDER_NAME = "Loopback IdP"
    settings.OIDC_GROUP_ROLES = sso.parse_group_roles(MAPPING)
    return idp


def sign_in(client: Client, idp: dict, username: str):
    """Press "Sign in with …", sign in at the identity provider, come back: the console's
    answer to the callback."""
    started = client.post(reverse("openid_connect_login", args=["idp"]))
    assert started.status_code == 302 and started.url.startswith(idp["issuer"]), started
    with httpx.Client(follow_redirects=False, timeout=10) as browser:
        at = browser.get(started.url)  # not signed in there: its sign-in page
        login_url = httpx.URL(started.url).join(at.headers["location"])
        page = browser.get(login_url)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        done = browser.post(
            login_url,
            data={
                "csrfmiddlewaretoken": token,
                "username": username,
                "password": f"pw-{username}",
                "next": login_url.params["next"],
            },
        )
        back = browser.get(login_url.join(done.headers["location"]))  # authorize, consented
        assert back.status_code == 302 and back.headers["location"].startswith(CALLBACK), back
        callback = back.headers["location"].removeprefix("http://testserver")
    return client.get(callback)


def test_two_teams_sign_in_through_the_identity_provider_and_see_only_their_own(console):
    payments, support = factories.team("payments"), factories.team("support")
    factories.question_set("refunds", team=payments)
    factories.question_set("tickets", team=support)
    services.api_token_create(name="payments-runtime", user=roles.OPERATOR, team=payments)
    pia, sam = Client(), Client()
    assert sign_in(pia, console, "pia").status_code == 302
    assert sign_in(sam, console, "sam").status_code == 302
    listed = pia.get(reverse("set-list")).content.decode()
    assert "/sets/refunds/" in listed and "/sets/tickets/" not in listed
    assert "/sets/tickets/" in sam.get(reverse("set-list")).content.decode()
    assert pia.get("/sets/tickets/").status_code == sam.get("/sets/refunds/").status_code == 404
    assert "payments-runtime" in pia.get(reverse("token-list")).content.decode()
    assert sam.get(reverse("token-list")).status_code == 403  # an author of support
    audit = pia.get(reverse("team-audit", args=["payments"])).content.decode()
    assert "refunds" in audit and "tickets" not in audit and "sam" not in audit
    assert sam.get(reverse("team-audit", args=["payments"])).status_code == 404
    made = {m.user.username: (m.team.slug, m.role) for m in Membership.objects.select_related()}
    assert made["pia"] == ("payments", "admin") and made["sam"] == ("support", "author")
    signed = AuditEntry.objects.filter(action="sign_in").values_list("actor_name", "detail")
    assert {(n, d["how"]) for n, d in signed} == {
        ("pia", "identity provider"),
        ("sam", "identity provider"),
    }


def test_an_author_and_a_reviewer_group_of_one_team_make_an_admin(console):
    factories.team("support")
    assert sign_in(Client(), console, "rex").status_code == 302
    assert Membership.objects.get(user__username="rex").role == "admin"


@pytest.mark.parametrize("who", [WRONG_AUDIENCE, EXPIRED])
def test_an_id_token_for_another_client_or_expired_is_refused(console, who):
    client = Client()
    answer = sign_in(client, console, who)
    assert b"Sign-in refused" in answer.content
    assert "_auth_user_id" not in client.session
    assert not get_user_model().objects.filter(username=who).exists()
    assert client.get(reverse("set-list")).status_code == 302  # to sign in


def test_a_user_whose_groups_have_no_role_here_is_refused(console):
    client = Client()
    answer = sign_in(client, console, "ned")
    assert answer.status_code == 403 and b"none of your groups" in answer.content
    assert not get_user_model().objects.filter(username="ned").exists()
    assert not AuditEntry.objects.filter(action="sign_in").exists()


def test_with_local_passwords_off_only_the_identity_provider_signs_in(console, settings):
    settings.LOCAL_PASSWORDS = False
    settings.AUTHENTICATION_BACKENDS = ["console.sso.SignInBackend"]
    factories.user("local", role="admin", password="local-pw")
    client = Client()
    page = client.get(reverse("login")).content.decode()
    assert "Sign in with Loopback IdP" in page and 'name="password"' not in page
    client.post(reverse("login"), {"username": "local", "password": "local-pw"})
    assert "_auth_user_id" not in client.session
    assert sign_in(client, console, "pia").status_code == 302
    assert client.get(reverse("set-list")).status_code == 200


def test_the_login_page_offers_both_by_default(console):
    page = Client().get(reverse("login")).content.decode()
    assert "Sign in with Loopback IdP" in page and 'name="password"' in page


# --- the roles the groups give -----------------------------------------------------------------


def test_the_mapping_reads_and_refuses():
    mapping = sso.parse_group_roles("a=payments:admin, b = support:author ,b=payments:viewer")
    assert mapping == {
        "a": [("payments", "admin")],
        "b": [("support", "author"), ("payments", "viewer")],
    }
    for bad in ("a=payments", "a=Payments:admin", "=x:admin", "a=x:boss"):
        with pytest.raises(ValueError, match="is not group=team:role"):
            sso.parse_group_roles(bad)
    assert sso.roles_for(["b", "a"], mapping) == {"payments": "admin", "support": "author"}
    assert sso.roles_for(["zzz"], mapping) == {}


def test_the_roles_follow_the_groups_at_every_sign_in():
    payments = factories.team("payments")
    factories.admin("boss", team=payments)
    kim = get_user_model().objects.create_user("kim")
    managed = {"payments", "support"}
    member_sync(user=kim, wanted={"payments": "author", "support": "viewer"}, managed=managed)
    member_sync(user=kim, wanted={"payments": "reviewer"}, managed=managed)
    now = dict(Membership.objects.filter(user=kim).values_list("team__slug", "role"))
    assert now == {"payments": "reviewer"}
    actions = list(
        AuditEntry.objects.filter(actor_name="the identity provider")
        .order_by("at", "id")
        .values_list("action", flat=True)
    )
    assert actions == [
        "member.added",
        "team.created",
        "member.added",
        "member.role_changed",
        "member.removed",
    ]
