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


def migrate() -> None:
    """Migrate the bench's database (after `start_django`). A PostgreSQL database that
    DATABASE_URL names but that does not exist yet is made first, as the test runner makes
    its own; any other failure to connect says what DATABASE_URL names, in one line."""
    import sys

    from django.core.management import call_command
    from django.db import OperationalError, connection

    try:
        connection.ensure_connection()
    except OperationalError as exc:
        name = connection.settings_dict["NAME"]
        if connection.vendor != "postgresql" or "does not exist" not in str(exc):
            sys.exit(f"bench: cannot connect to the database DATABASE_URL names ({name}): {exc}")
        with connection._nodb_cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {connection.ops.quote_name(name)}")
        print(f"bench: made the PostgreSQL database {name}", file=sys.stderr)
    call_command("migrate", verbosity=0)
