"""Single sign-on through OpenID Connect, with django-allauth's `openid_connect` provider: the
settings come from the environment (`console/settings.py`: OIDC_*), allauth does the protocol
(discovery, the authorization code flow, the ID token's signature, issuer, audience and expiry);
this module only decides who may come in and with which roles.

- `TeamsSocialAccountAdapter`: the identity provider's group claim (`OIDC_GROUPS_CLAIM`) is
  mapped to roles in teams (`OIDC_GROUP_ROLES`, `questions.core.sso`); a user none of whose
  groups the mapping names is refused (403, nothing is stored); at every sign-in the roles in
  the teams the mapping names follow the groups (`services.teams.member_sync`).
- `AccountAdapter` signs a user in through `SignInBackend`, which loads a session's user and
  checks no password: with local passwords turned off (`DJANGO_LOCAL_PASSWORDS=0`) it is the
  only backend, so the identity provider is the only way in.
"""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.shortcuts import render

from questions.core import sso
from questions.services.teams import member_sync

#: the allauth provider id of the one configured identity provider (in its URLs)
PROVIDER_ID = "idp"


class SignInBackend(ModelBackend):
    """Loads the user of a signed-in session; checks no password."""

    def authenticate(self, request: Any, **credentials: Any) -> None:
        return None


class AccountAdapter(DefaultAccountAdapter):
    def login(self, request: Any, user: Any) -> Any:
        user.backend = f"{SignInBackend.__module__}.{SignInBackend.__name__}"
        return super().login(request, user)

    def is_open_for_signup(self, request: Any) -> bool:
        return False  # no local sign-up page: people come from the identity provider


def claims_of(sociallogin: Any) -> dict[str, Any]:
    """The ID token's claims with the user info's over them."""
    data = sociallogin.account.extra_data or {}
    return {**(data.get("id_token") or {}), **(data.get("userinfo") or {})}


def groups_of(claims: dict[str, Any]) -> list[str]:
    value = claims.get(settings.OIDC_GROUPS_CLAIM) or []
    return [value] if isinstance(value, str) else [str(g) for g in value]


class TeamsSocialAccountAdapter(DefaultSocialAccountAdapter):
    def is_open_for_signup(self, request: Any, sociallogin: Any) -> bool:
        return True  # a user the mapping gives a role is made at their first sign-in

    def _wanted(self, request: Any, sociallogin: Any) -> dict[str, str]:
        claims = claims_of(sociallogin)
        wanted = sso.roles_for(groups_of(claims), settings.OIDC_GROUP_ROLES)
        if not wanted:
            raise ImmediateHttpResponse(
                render(
                    request,
                    "registration/sso_refused.html",
                    {"username": claims.get("preferred_username") or claims.get("sub", "")},
                    status=403,
                )
            )
        return wanted

    def pre_social_login(self, request: Any, sociallogin: Any) -> None:
        wanted = self._wanted(request, sociallogin)
        if sociallogin.is_existing:
            _sync(sociallogin.user, wanted)

    def save_user(self, request: Any, sociallogin: Any, form: Any = None) -> Any:
        wanted = self._wanted(request, sociallogin)
        user = super().save_user(request, sociallogin, form)
        _sync(user, wanted)
        return user


def _sync(user: Any, wanted: dict[str, str]) -> None:
    mapping = settings.OIDC_GROUP_ROLES
    member_sync(user=user, wanted=wanted, managed=sso.managed_teams(mapping))


def providers(issuer: str, client_id: str, secret: str, scopes: list[str], name: str) -> dict:
    """allauth's SOCIALACCOUNT_PROVIDERS for one OpenID Connect identity provider (none without
    an issuer)."""
    if not issuer:
        return {}
    return {
        "openid_connect": {
            "OAUTH_PKCE_ENABLED": True,
            "SCOPE": scopes,
            "APPS": [
                {
                    "provider_id": PROVIDER_ID,
                    "name": name,
                    "client_id": client_id,
                    "secret": secret,
                    "settings": {"server_url": issuer, "fetch_userinfo": True},
                }
            ],
        }
    }
