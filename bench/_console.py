"""What every bench sets before Django starts, so that it runs from a plain shell: a throwaway
secret key, and plain HTTP (the test client and the loopback servers speak no TLS, so no HTTPS
redirect, no Secure-only cookies, no HSTS). What the shell sets already is kept."""

from __future__ import annotations

import os

PLAIN_HTTP = {
    "DJANGO_SECRET_KEY": "bench-only-not-secret",
    "DJANGO_SSL_REDIRECT": "0",
    "DJANGO_SECURE_COOKIES": "0",
    "DJANGO_HSTS_SECONDS": "0",
    "DJANGO_SETTINGS_MODULE": "console.settings",
}


def bench_environment(database_url: str | None = None) -> None:
    """Set the bench's environment (and its database, when given) before `django.setup()`."""
    for name, value in PLAIN_HTTP.items():
        os.environ.setdefault(name, value)
    if database_url is not None:
        os.environ["DATABASE_URL"] = database_url


def start_django() -> None:
    """`django.setup()` with the bench's environment, its pages naming their static files as
    they are (`make serve` collects them into a manifest; a bench has none)."""
    bench_environment()
    import django

    django.setup()
    from django.conf import settings

    settings.STORAGES["staticfiles"]["BACKEND"] = (
        "django.contrib.staticfiles.storage.StaticFilesStorage"
    )
