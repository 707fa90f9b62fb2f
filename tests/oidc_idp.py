"""A real OpenID Connect provider on loopback for the suite's sign-ins: django-oauth-toolkit's,
in a process of its own (its own settings and SQLite database), serving one confidential client
with the authorization code flow and RS256-signed ID tokens. Nothing of it is the console's.

    python -m tests.oidc_idp SPEC_FILE

SPEC_FILE is JSON: {"client_id", "client_secret", "redirect_uris": [...], "users": [{"username",
"password", "email", "groups": [...]}]}. It prints `port N` on its first line once it listens on
127.0.0.1, then serves until killed. A user's `groups` claim lists their groups; two users are
made to misbehave, so the suite can see refused sign-ins: `wrong-audience` gets an ID token for
another client, `expired` one that expired an hour ago.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

WRONG_AUDIENCE, EXPIRED = "wrong-audience", "expired"

LOGIN_PAGE = """<!doctype html><title>Loopback identity provider</title>
<form method="post">{% csrf_token %}
<input name="username"><input name="password" type="password">
<input type="hidden" name="next" value="{{ next }}"><button>Sign in</button></form>"""


def _private_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _configure(folder: Path) -> None:
    from django.conf import settings

    settings.configure(
        DEBUG=False,
        SECRET_KEY="loopback-identity-provider",
        ALLOWED_HOSTS=["127.0.0.1", "localhost"],
        ROOT_URLCONF=__name__,
        INSTALLED_APPS=[
            "django.contrib.contenttypes",
            "django.contrib.auth",
            "django.contrib.sessions",
            "oauth2_provider",
        ],
        MIDDLEWARE=[
            "django.contrib.sessions.middleware.SessionMiddleware",
            "django.middleware.csrf.CsrfViewMiddleware",
            "django.contrib.auth.middleware.AuthenticationMiddleware",
        ],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": folder / "idp.db"}},
        TEMPLATES=[
            {
                "BACKEND": "django.template.backends.django.DjangoTemplates",
                "OPTIONS": {
                    "loaders": [
                        ("django.template.loaders.locmem.Loader", {"login.html": LOGIN_PAGE})
                    ],
                    "context_processors": ["django.template.context_processors.request"],
                },
            }
        ],
        LOGIN_URL="/accounts/login/",
        USE_TZ=True,
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],  # a test's own
        OAUTH2_PROVIDER={
            "OIDC_ENABLED": True,
            "OIDC_RSA_PRIVATE_KEY": _private_key(),
            "PKCE_REQUIRED": False,
            "SCOPES": {
                "openid": "OpenID Connect",
                "profile": "profile",
                "email": "email",
                "groups": "groups",
            },
            "OAUTH2_VALIDATOR_CLASS": f"{__name__}.Validator",
        },
    )


def _validator():
    from datetime import timedelta

    from django.utils import timezone
    from oauth2_provider.oauth2_validators import OAuth2Validator

    class Validator(OAuth2Validator):
        oidc_claim_scope = None  # every claim, whatever the scopes

        def get_additional_claims(self, request):
            user = request.user
            return {
                "preferred_username": user.username,
                "email": user.email,
                "groups": sorted(user.groups.values_list("name", flat=True)),
            }

        def get_id_token_dictionary(self, token, token_handler, request):
            claims, expires = super().get_id_token_dictionary(token, token_handler, request)
            if request.user.username == WRONG_AUDIENCE:
                claims["aud"] = "another-client"
            if request.user.username == EXPIRED:
                claims["exp"] = int((timezone.now() - timedelta(hours=1)).timestamp())
            return claims, expires

    return Validator


def __getattr__(name: str):
    if name == "Validator":  # django-oauth-toolkit imports it once settings are made
        return _validator()
    if name == "urlpatterns":
        from django.contrib.auth.views import LoginView
        from django.urls import include, path

        return [
            path("accounts/login/", LoginView.as_view(template_name="login.html")),
            path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
        ]
    raise AttributeError(name)


def _populate(spec: dict) -> None:
    from django.contrib.auth.models import Group, User
    from oauth2_provider.models import Application

    for given in spec["users"]:
        user = User.objects.create_user(
            given["username"], email=given.get("email", ""), password=given["password"]
        )
        for name in given.get("groups", []):
            user.groups.add(Group.objects.get_or_create(name=name)[0])
    Application.objects.create(
        name="decision console",
        client_id=spec["client_id"],
        client_secret=spec["client_secret"],
        hash_client_secret=False,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=" ".join(spec["redirect_uris"]),
        algorithm=Application.RS256_ALGORITHM,
        skip_authorization=True,
    )


def main(spec_file: str) -> None:
    import django
    from django.core.management import call_command
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    spec = json.loads(Path(spec_file).read_text())
    folder = Path(tempfile.mkdtemp(prefix="oidc-idp-"))
    _configure(folder)
    django.setup()
    call_command("migrate", verbosity=0)
    _populate(spec)

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), Quiet)
    server.set_app(get_wsgi_application())
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1])
