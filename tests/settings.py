"""Settings for the test suite: the console's own, read from the same environment, with a
throwaway secret key when none is set. DATABASE_URL passes through (CI sets it to PostgreSQL)."""

import os
import tempfile

os.environ.setdefault("DJANGO_SECRET_KEY", "tests-only-not-secret")
# The suite runs without DEBUG over plain HTTP (test client, live server): no HTTPS redirect,
# no Secure-only cookies. tests/test_production.py checks the production defaults themselves.
os.environ.setdefault("DJANGO_SSL_REDIRECT", "0")
os.environ.setdefault("DJANGO_SECURE_COOKIES", "0")
os.environ.setdefault("DJANGO_HSTS_SECONDS", "0")
# The suite's webhook receivers listen on 127.0.0.1; the tests of the default address policy
# turn this off for themselves (settings are read at call time).
os.environ.setdefault("DECISIONS__WEBHOOK_ALLOW_PRIVATE", "1")

from console.settings import *  # noqa: F403

# Password hashing is deliberately slow; the tests sign in hundreds of users.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Batch workers are threads with their own connections: on SQLite they need a database file
# (an in-memory database shared between connections locks tables instead of waiting).
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    DATABASES["default"]["ENGINE"] = "tests.db_backends.sqlite3"  # noqa: F405
    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": os.path.join(tempfile.gettempdir(), f"decision-console-test-{os.getpid()}.sqlite3")
    }

# A flush between transactional tests leaves the content types and permissions as they are,
# and on PostgreSQL deletes rows instead of truncating every table (tests/db_backends: the
# same emptiness, a fraction of the time).
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    DATABASES["default"]["ENGINE"] = "tests.db_backends.postgresql"  # noqa: F405
    # A test database is thrown away: a commit need not wait for its WAL to reach the disk
    # (what a crash could lose is a test's last rows, never a consistent state).
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = "-c synchronous_commit=off"  # noqa: F405

# No collectstatic before the suite: templates name the files as they are. The project's
# `staticfiles/` is what `make serve` collects (CI's smoke, the serve tests) while the suite
# runs: whitenoise must not scan it half-written, so the suite's static root is a folder that
# is never there.
STATIC_ROOT = os.path.join(tempfile.gettempdir(), f"decision-console-test-static-{os.getpid()}")
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
