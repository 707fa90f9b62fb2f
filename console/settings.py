"""Settings for the Decision Console, read from the environment once (12-factor).

Every variable the console reads is named here and in docs/operating.md; nothing else reads
os.environ.
"""

import os
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from questions import editor_fields
from questions.core.answers import DEFAULT_PRICE_PER_MILLION_INPUT_TOKENS
from questions.core.spec import Limits
from questions.core.sso import parse_group_roles

BASE_DIR = Path(__file__).resolve().parent.parent


def _env(name: str, default: str = "") -> str:
    """One variable, stripped. The environment itself is never held in a setting: DEBUG error
    pages list every upper-case setting, and the environment holds the keys."""
    return os.environ.get(name, default).strip()


def _origin(url: str) -> str:
    """A URL's scheme, host and port (a CSP source)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _flag(name: str, default: bool = False) -> bool:
    raw = _env(name).lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be 1/0, true/false, yes/no or on/off; not {raw!r}")


def _number(name: str, default: float, *, allow_zero: bool = False) -> float:
    raw = _env(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1
    if not (0 <= value < float("inf")) or (value == 0 and not allow_zero):
        kind = "a number from 0" if allow_zero else "a positive number"
        raise ImproperlyConfigured(f"{name} must be {kind}, not {raw!r}")
    return value


def _count(name: str, default: int, *, allow_zero: bool = False) -> int:
    """A whole number from 1 (from 0 with `allow_zero`; `_number`'s, without a fraction)."""
    value = _number(name, default, allow_zero=allow_zero)
    if value != int(value):
        raise ImproperlyConfigured(f"{name} must be a whole number, not {_env(name)!r}")
    return int(value)


DEBUG = _flag("DJANGO_DEBUG")

SECRET_KEY = _env("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "Set DJANGO_SECRET_KEY (or DJANGO_DEBUG=1 for local development)."
        )
    SECRET_KEY = "django-insecure-local-development-only"

ALLOWED_HOSTS = [
    host.strip()
    for host in _env("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
    if host.strip()
]

INSTALLED_APPS = [
    "console.apps.ConsoleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "csp",
    "axes",
    "console.apps.ConsoleConfig",  # after axes: its admin replaces axes' lockout page
    "django_htmx",
    "template_partials",
    # single sign-on through OpenID Connect (console/sso.py); no local sign-up, no mail
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    # before django_tasks_db: its `db_worker` command is questions' own (which also takes over
    # batch runs whose worker died), and Django uses the first app that has a command
    "questions",
    "django_tasks",
    "django_tasks_db",
]

MIDDLEWARE = [
    "console.logs.RequestLogMiddleware",
    "console.origin.AuditOriginMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "console.limits.UploadLimitMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "questions.middleware.ServiceErrorMiddleware",
    # last: it answers a locked-out sign-in with the lockout page
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "console.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "questions.context_processors.console",
            ],
        },
    },
]

WSGI_APPLICATION = "console.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        _env("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=60,
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # batch workers write from several threads: wait for the lock instead of failing, and take
    # it at the start of a transaction so two writers never deadlock upgrading a read lock;
    # write-ahead logging lets readers go on while one writes, and commits without an fsync each
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
#: local user names and passwords (off: the identity provider is the only way in)
LOCAL_PASSWORDS = _flag("DJANGO_LOCAL_PASSWORDS", default=True)
AUTHENTICATION_BACKENDS = [
    # first: it refuses a locked-out sign-in before a password is checked
    *(
        ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
        if LOCAL_PASSWORDS
        else []
    ),
    # loads a signed-in session's user, checks no password (a sign-in through the identity
    # provider, console/sso.py)
    "console.sso.SignInBackend",
]

# Single sign-on (console/sso.py, docs/operating.md "Sign in with your identity provider"):
# django-allauth's OpenID Connect provider, configured by OIDC_ISSUER and the client's id and
# secret; the group claim's groups map to team roles by OIDC_GROUP_ROLES.
OIDC_ISSUER = _env("OIDC_ISSUER").rstrip("/")
OIDC_CLIENT_ID = _env("OIDC_CLIENT_ID")
OIDC_CLIENT_SECRET = _env("OIDC_CLIENT_SECRET")
OIDC_SCOPES = (_env("OIDC_SCOPES") or "openid profile email groups").split()
OIDC_PROVIDER_NAME = _env("OIDC_PROVIDER_NAME") or "your identity provider"
OIDC_GROUPS_CLAIM = _env("OIDC_GROUPS_CLAIM") or "groups"
try:
    OIDC_GROUP_ROLES = parse_group_roles(_env("OIDC_GROUP_ROLES"))
except ValueError as exc:
    raise ImproperlyConfigured(f"OIDC_GROUP_ROLES: {exc}") from None
if OIDC_ISSUER and not (OIDC_CLIENT_ID and OIDC_CLIENT_SECRET):
    raise ImproperlyConfigured("OIDC_ISSUER needs OIDC_CLIENT_ID and OIDC_CLIENT_SECRET")
SOCIALACCOUNT_PROVIDERS = (
    {
        "openid_connect": {
            "OAUTH_PKCE_ENABLED": True,
            "SCOPE": OIDC_SCOPES,
            "APPS": [
                {
                    "provider_id": "idp",
                    "name": OIDC_PROVIDER_NAME,
                    "client_id": OIDC_CLIENT_ID,
                    "secret": OIDC_CLIENT_SECRET,
                    "settings": {"server_url": OIDC_ISSUER, "fetch_userinfo": True},
                }
            ],
        }
    }
    if OIDC_ISSUER
    else {}
)
SOCIALACCOUNT_ADAPTER = "console.sso.TeamsSocialAccountAdapter"
ACCOUNT_ADAPTER = "console.sso.AccountAdapter"
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_LOGIN_ON_GET = False  # a POST starts a sign-in: no sign-in by a link alone
SOCIALACCOUNT_STORE_TOKENS = False
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_SIGNUP_FIELDS = ["username*"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "set-list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# Production serves what `collectstatic` wrote, compressed and under hashed names that are cached
# for ever (whitenoise); DEBUG (`make run`) serves the files as they are, no collectstatic needed.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# --- production posture: HTTPS, proxy, cookies, CSP, sign-in throttling ---------------------------
#: behind a TLS-terminating proxy that sets X-Forwarded-Proto (and X-Forwarded-For)
BEHIND_PROXY = _flag("DJANGO_BEHIND_PROXY")
if BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
CSRF_TRUSTED_ORIGINS = [
    origin.strip() for origin in _env("DJANGO_CSRF_TRUSTED_ORIGINS").split(",") if origin.strip()
]
for _origin in CSRF_TRUSTED_ORIGINS:
    if "://" not in _origin:
        raise ImproperlyConfigured(
            f"DJANGO_CSRF_TRUSTED_ORIGINS holds {_origin!r}; each origin starts with its scheme "
            "(https://console.example.com)."
        )
# On by default outside DEBUG; each can be turned off for a plain-HTTP trial.
SESSION_COOKIE_SECURE = _flag("DJANGO_SECURE_COOKIES", default=not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = _flag("DJANGO_SSL_REDIRECT", default=not DEBUG)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # a load balancer's health check may speak plain HTTP
SECURE_HSTS_SECONDS = int(
    _number("DJANGO_HSTS_SECONDS", 0 if DEBUG else 31_536_000, allow_zero=True)
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"

# No inline script or style and no eval anywhere (htmx is configured for it in base.html).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        # the sign-in button's POST is answered with a redirect to the identity provider
        "form-action": [SELF, *([_origin(OIDC_ISSUER)] if OIDC_ISSUER else [])],
        "frame-ancestors": [NONE],
    }
}

# Five failed sign-ins for one user name from one address lock that pair out for a while.
AXES_FAILURE_LIMIT = 5
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_COOLOFF_TIME = timedelta(minutes=_number("DJANGO_LOGIN_LOCKOUT_MINUTES", 15))
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_CLIENT_IP_CALLABLE = "console.limits.client_address"

# error reports (DEBUG pages above all) hide any value holding a key, not only names like one
DEFAULT_EXCEPTION_REPORTER_FILTER = "console.reporting.SecretsFilter"

# JSON lines on stdout: one per request (console.logs), every 500 with its traceback; values that
# hold a secret are replaced before a line is written.
LOG_LEVEL = _env("DJANGO_LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
    raise ImproperlyConfigured(
        f"DJANGO_LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, not {LOG_LEVEL!r}"
    )
# Servers (gunicorn, runserver, db_worker) log to stdout; any other command keeps stdout for its
# output (`questions export`, `questions token`, `--json`) and logs to stderr.
_SERVING = "gunicorn" in Path(sys.argv[0]).name or sys.argv[1:2] in (["runserver"], ["db_worker"])
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "console.logs.JSONFormatter"}},
    "handlers": {
        "stdout": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stdout" if _SERVING else "ext://sys.stderr",
            "formatter": "json",
        }
    },
    "root": {"handlers": ["stdout"], "level": "WARNING"},
    "loggers": {
        "django": {"level": "INFO"},
        # runserver's own access line: console.request says more
        "django.server": {"level": "WARNING"},
        "questions": {"level": LOG_LEVEL},
        "console": {"level": LOG_LEVEL},
        "django_tasks": {"level": LOG_LEVEL},
        "django_tasks_db": {"level": LOG_LEVEL},
    },
}

# --- decisions --------------------------------------------------------------
try:
    DECISIONS_LIMITS = Limits.from_env(os.environ)
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from exc
# The editor posts every field of the largest set the limits allow, every card open
# (`questions.editor_fields` counts them from the names the editor's form reads).
DATA_UPLOAD_MAX_NUMBER_FIELDS = editor_fields.most_fields(DECISIONS_LIMITS)
#: the largest document the console takes in one form field (editor, JSON view, check page)
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
# A form body holds at most a document and a sample state; URL-encoding can triple JSON's bytes
# (`"` becomes %22), plus 1 MiB for the rest. A larger body gets the 413 page. Anonymous requests
# (the sign-in form) get 64 KiB (console.limits).
DATA_UPLOAD_MAX_MEMORY_SIZE = 3 * (MAX_DOCUMENT_BYTES + DECISIONS_LIMITS.max_state_bytes) + 2**20
ANONYMOUS_UPLOAD_MAX_BYTES = 64 * 1024
#: the most records one file of sample states may hold (the set page's upload, the CLI's
#: states-import): a larger file is refused before anything is read past the limit
DECISIONS_UPLOAD_MAX_ROWS = _count("DECISIONS__UPLOAD_MAX_ROWS", 20_000)
#: production states (`POST /api/sets/<slug>/states`, `questions ingest`): one request holds at
#: most this many lines and bytes; a set receives at most the daily quota of states a day (UTC)
#: unless its own ingest settings name another
DECISIONS_INGEST_MAX_LINES = _count("DECISIONS__INGEST_MAX_LINES", 1000)
DECISIONS_INGEST_MAX_BYTES = _count("DECISIONS__INGEST_MAX_BYTES", 2**20)
DECISIONS_INGEST_DAILY_QUOTA = _count("DECISIONS__INGEST_DAILY_QUOTA", 100_000)
#: provider calls a team may make a day (UTC), those in flight counted: work that would pass it
#: is refused before it starts (`services.budget`); 0, the default: no budget
DECISIONS_TEAM_DAILY_CALLS = _count("DECISIONS__TEAM_DAILY_CALLS", 0, allow_zero=True)
DECISIONS_TIMEOUT_SECONDS = _number("DECISIONS__TIMEOUT_SECONDS", 10.0)
#: the most bytes of a provider's answer read, decoded; a larger one is refused as it arrives
DECISIONS_ANSWER_MAX_BYTES = _count("DECISIONS__ANSWER_MAX_BYTES", 4 * 1024 * 1024)
DECISIONS_MODEL = _env("DECISIONS__MODEL") or "jev-latest"
DECISIONS_API_KEY_ENV = _env("DECISIONS__API_KEY_ENV") or "TYPESAFE_API_KEY"
DECISIONS_PRICE_PER_MILLION_INPUT_TOKENS = _number(
    "DECISIONS__PRICE_PER_MILLION_INPUT_TOKENS",
    DEFAULT_PRICE_PER_MILLION_INPUT_TOKENS,
    allow_zero=True,
)

# --- backends; keys stay here and in the backends, never in a page or a log ----
TYPESAFE_API_KEY = _env(DECISIONS_API_KEY_ENV)
TYPESAFE_BASE_URL = (_env("TYPESAFE_BASE_URL") or "https://api.typesafe.ai").rstrip("/")
RUNTIME_URL = _env("RUNTIME_URL").rstrip("/")
RUNTIME_TOKEN = _env("RUNTIME_TOKEN")
OPENROUTER_API_KEY = _env("OPENROUTER_API_KEY")
OPENROUTER_BASE_URL = (_env("OPENROUTER_BASE_URL") or "https://openrouter.ai/api").rstrip("/")
OPENROUTER_MODEL = _env("OPENROUTER_MODEL") or "~typesafe/jev-latest"
#: the `llm` wire: any OpenAI-compatible chat completions endpoint (OpenRouter's by default)
LLM_API_KEY = _env("LLM_API_KEY")
LLM_BASE_URL = (_env("LLM_BASE_URL") or "https://openrouter.ai/api/v1").rstrip("/")
LLM_MODEL = _env("LLM_MODEL") or "openai/gpt-4o-mini"
#: the chat model's input price; unset, a cost the endpoint does not report stays unknown
LLM_PRICE_PER_MILLION_INPUT_TOKENS = (
    _number("LLM_PRICE_PER_MILLION_INPUT_TOKENS", 0.0, allow_zero=True)
    if _env("LLM_PRICE_PER_MILLION_INPUT_TOKENS")
    else None
)
#: `custom`: your own function as a backend, package.module:function
#: (questions/engine/backends/custom.py)
DECISIONS_CUSTOM_BACKEND = _env("DECISIONS__CUSTOM_BACKEND")
#: set by `make run` when it started the local stand-in and pointed TYPESAFE_BASE_URL at it
DECISIONS_STANDIN = _flag("DECISIONS__STANDIN")
#: single-person teams: let the author of a version approve it too (off by default)
DECISIONS_ALLOW_SELF_APPROVAL = _flag("DECISIONS__ALLOW_SELF_APPROVAL")

# --- batch runs: Django's tasks API with the database backend -------------------
#: webhook deliveries have a queue of their own, with its own worker (`db_worker --queue-name
#: webhooks`), so a slow receiver never holds a worker that batch runs wait for
WEBHOOK_QUEUE = "webhooks"
TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend",
        "QUEUES": ["default", WEBHOOK_QUEUE],
    }
}
DECISIONS_BATCH_ATTEMPTS = _count("DECISIONS__BATCH_ATTEMPTS", 4)
DECISIONS_BATCH_BACKOFF_SECONDS = _number("DECISIONS__BATCH_BACKOFF_SECONDS", 0.5)
DECISIONS_BATCH_BACKOFF_CAP_SECONDS = _number("DECISIONS__BATCH_BACKOFF_CAP_SECONDS", 8.0)
#: a running batch whose worker has not been heard from for this long is resumed
DECISIONS_BATCH_STALE_SECONDS = _number("DECISIONS__BATCH_STALE_SECONDS", 60.0)

# --- change webhooks: signed POSTs on approval and label moves, sent by the task worker --------
#: where the console is reached, for the export URL in an event (no trailing slash)
CONSOLE_PUBLIC_URL = (_env("CONSOLE_PUBLIC_URL") or "http://127.0.0.1:8000").rstrip("/")
DECISIONS_WEBHOOK_ATTEMPTS = _count("DECISIONS__WEBHOOK_ATTEMPTS", 5)
DECISIONS_WEBHOOK_BACKOFF_SECONDS = _number("DECISIONS__WEBHOOK_BACKOFF_SECONDS", 2.0)
DECISIONS_WEBHOOK_BACKOFF_CAP_SECONDS = _number("DECISIONS__WEBHOOK_BACKOFF_CAP_SECONDS", 300.0)
#: one attempt's total deadline: resolving, connecting, TLS, sending and the answer's status
DECISIONS_WEBHOOK_TIMEOUT_SECONDS = _number("DECISIONS__WEBHOOK_TIMEOUT_SECONDS", 5.0)
#: let webhooks reach loopback and private networks (questions/core/addresses.py says which), for a
#: runtime on the console's own network; never the cloud metadata or link-local addresses
DECISIONS_WEBHOOK_ALLOW_PRIVATE = _flag("DECISIONS__WEBHOOK_ALLOW_PRIVATE")
