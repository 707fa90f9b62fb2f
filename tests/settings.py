"""Settings for the test suite: the console's own, read from the same environment, with a
throwaway secret key when none is set. DATABASE_URL passes through (CI sets it to PostgreSQL)."""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "tests-only-not-secret")

from console.settings import *  # noqa: F403

# Password hashing is deliberately slow; the tests sign in hundreds of users.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
