"""Settings for the test suite: the console's own, read from the same environment, with a
throwaway secret key when none is set. DATABASE_URL passes through (CI sets it to PostgreSQL)."""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "tests-only-not-secret")

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
