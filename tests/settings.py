"""Settings for the test suite: the console's own, read from the same environment, with a
throwaway secret key when none is set. DATABASE_URL passes through (CI sets it to PostgreSQL)."""

import os

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
    import tempfile

    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": os.path.join(tempfile.gettempdir(), f"decision-console-test-{os.getpid()}.sqlite3")
    }

# On PostgreSQL a flush between transactional tests deletes rows instead of truncating every
# table (tests/postgresql/base.py: the same emptiness, a hundredth of the time).
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    DATABASES["default"]["ENGINE"] = "tests.postgresql"  # noqa: F405
    # A test database is thrown away: a commit need not wait for its WAL to reach the disk
    # (what a crash could lose is a test's last rows, never a consistent state).
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = "-c synchronous_commit=off"  # noqa: F405

# No collectstatic before the suite: templates name the files as they are.
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
