"""Settings read the environment once, and a bad value names its variable; DEBUG error pages
show none of the secrets the environment holds."""

import http.client
import socket
import subprocess
import sys
import time
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


# --- DEBUG error pages (`make run` serves with DJANGO_DEBUG=1) ----------------------------------

CANARIES = {
    "TYPESAFE_API_KEY": "tsKEYcanary-5e6f7a8b",
    "DJANGO_SECRET_KEY": "djSECRETcanary-1a2b3c4d",
    "RUNTIME_TOKEN": "rtTOKENcanary-9d8c7b6a",
    "OPENROUTER_API_KEY": "orKEYcanary-2f3e4d5c",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_with_foreign_host(port: int, path: str, within: float = 60) -> tuple[int, str]:
    deadline = time.monotonic() + within
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", path, headers={"Host": "evil.example"})
            response = conn.getresponse()
            return response.status, response.read().decode()
        except ConnectionRefusedError:
            assert time.monotonic() < deadline, "runserver did not start"
            time.sleep(0.2)


def test_runserver_in_debug_shows_no_secret_to_a_foreign_host(tmp_path):
    """The review's reproduction, as it was: `make run`'s server and one anonymous request."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "runserver",
            "--noreload",
            "--skip-checks",
            f"127.0.0.1:{port}",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_DEBUG": "1",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            **CANARIES,
        },
    )
    try:
        status, page = get_with_foreign_host(port, "/accounts/login/")
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert status == 400 and "DisallowedHost" in page
    assert [s for s in CANARIES.values() if s in page] == []
