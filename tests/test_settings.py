"""Settings read the environment once, and a bad value names its variable."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_settings(**env: str) -> subprocess.CompletedProcess:
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'console.settings'; "
        "from django.conf import settings as s; "
        "print(s.DECISIONS_LIMITS.max_questions, s.DECISIONS_LIMITS.max_state_bytes, "
        "s.DECISIONS_TIMEOUT_SECONDS, s.DECISIONS_MODEL, s.DEBUG, "
        "s.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1], ','.join(s.ALLOWED_HOSTS))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **env},
    )


def test_defaults():
    proc = load_settings(DJANGO_SECRET_KEY="k")
    assert proc.stdout.split() == [
        "32",
        "262144",
        "10.0",
        "jev-latest",
        "False",
        "sqlite3",
        "127.0.0.1,localhost",
    ]


def test_values_from_the_environment():
    proc = load_settings(
        DJANGO_SECRET_KEY="k",
        DJANGO_DEBUG="1",
        DECISIONS__MAX_QUESTIONS="8",
        DECISIONS__MAX_STATE_BYTES="1000",
        DECISIONS__TIMEOUT_SECONDS="2.5",
        DECISIONS__MODEL="jev-1.13",
        DJANGO_ALLOWED_HOSTS="a.example, b.example",
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres",
    )
    assert proc.stdout.split() == [
        "8",
        "1000",
        "2.5",
        "jev-1.13",
        "True",
        "postgresql",
        "a.example,b.example",
    ]


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"DECISIONS__MAX_QUESTIONS": "lots"}, "DECISIONS__MAX_QUESTIONS"),
        ({"DECISIONS__MAX_STATE_BYTES": "0"}, "DECISIONS__MAX_STATE_BYTES"),
        ({"DECISIONS__TIMEOUT_SECONDS": "-1"}, "DECISIONS__TIMEOUT_SECONDS"),
        ({"DJANGO_DEBUG": "maybe"}, "DJANGO_DEBUG"),
    ],
)
def test_a_bad_value_names_its_variable(env, named):
    proc = load_settings(DJANGO_SECRET_KEY="k", **env)
    assert proc.returncode != 0
    assert named in proc.stderr
    assert "ImproperlyConfigured" in proc.stderr


def test_a_secret_key_is_required_unless_debugging():
    assert "DJANGO_SECRET_KEY" in load_settings().stderr
    assert load_settings(DJANGO_DEBUG="true").returncode == 0
