"""Settings read the environment once, and a bad value names its variable; DEBUG error pages
show none of the secrets the environment holds."""

import http.client
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

# its module-scoped debug pages are made once: on one xdist worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("settings")

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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_the_answer_limit_is_4_mib_unless_set():
    def limit(**env: str) -> str:
        code = (
            "import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'console.settings'; "
            "from django.conf import settings; print(settings.DECISIONS_ANSWER_MAX_BYTES)"
        )
        run = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "DJANGO_SECRET_KEY": "k", **env},
        )
        return run.stdout.strip()

    assert limit() == str(4 * 1024 * 1024)
    assert limit(DECISIONS__ANSWER_MAX_BYTES="65536") == "65536"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"DECISIONS__MAX_QUESTIONS": "lots"}, "DECISIONS__MAX_QUESTIONS"),
        ({"DECISIONS__MAX_STATE_BYTES": "0"}, "DECISIONS__MAX_STATE_BYTES"),
        ({"DECISIONS__TIMEOUT_SECONDS": "-1"}, "DECISIONS__TIMEOUT_SECONDS"),
        ({"DECISIONS__BATCH_ATTEMPTS": "2.5"}, "DECISIONS__BATCH_ATTEMPTS"),
        ({"DECISIONS__ANSWER_MAX_BYTES": "4MB"}, "DECISIONS__ANSWER_MAX_BYTES"),
        ({"DJANGO_DEBUG": "maybe"}, "DJANGO_DEBUG"),
        ({"DECISIONS__WEBHOOK_ALLOW_PRIVATE": "maybe"}, "DECISIONS__WEBHOOK_ALLOW_PRIVATE"),
    ],
)
def test_a_bad_value_names_its_variable(env, named):
    proc = load_settings(DJANGO_SECRET_KEY="k", **env)
    assert proc.returncode != 0
    assert named in proc.stderr
    assert "ImproperlyConfigured" in proc.stderr


def test_webhooks_reach_private_addresses_only_when_allowed_and_have_their_own_queue():
    code = (
        "import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'console.settings'; "
        "from django.conf import settings as s; "
        "print(s.DECISIONS_WEBHOOK_ALLOW_PRIVATE, s.WEBHOOK_QUEUE, "
        "','.join(s.TASKS['default']['QUEUES']))"
    )

    def read(**env: str) -> list[str]:
        return subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "DJANGO_SECRET_KEY": "k", **env},
        ).stdout.split()

    assert read() == ["False", "webhooks", "default,webhooks"]
    assert read(DECISIONS__WEBHOOK_ALLOW_PRIVATE="1")[0] == "True"
    assert read(DECISIONS__WEBHOOK_ALLOW_PRIVATE="off")[0] == "False"


def test_the_demo_and_the_suite_let_webhooks_reach_loopback():
    run = (ROOT / "console" / "run").read_text()  # make run's processes
    assert "DECISIONS__WEBHOOK_ALLOW_PRIVATE=${DECISIONS__WEBHOOK_ALLOW_PRIVATE:-1}" in run
    assert "db_worker --no-reload --interval 0.5 --queue-name webhooks" in run
    assert "--queue-name webhooks" in (ROOT / "Procfile").read_text()
    assert "--queue-name webhooks" in (ROOT / "console" / "serve").read_text()
    from django.conf import settings

    assert settings.DECISIONS_WEBHOOK_ALLOW_PRIVATE is True  # tests/settings.py


@pytest.mark.slow
def test_a_secret_key_is_required_unless_debugging():
    assert "DJANGO_SECRET_KEY" in load_settings().stderr
    assert load_settings(DJANGO_DEBUG="true").returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ["questions", "standin", "--port", "0"],  # docs/operating.md starts it by hand
        ["questions", "validate", "tests/examples/typesafe-request.json"],
        ["migrate", "--noinput"],
        ["check"],
        ["db_worker", "--no-reload"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_a_command_without_a_secret_key_says_what_to_set_in_one_line(command):
    """Outside `make run` (which sets DJANGO_DEBUG=1) and without DJANGO_SECRET_KEY, a command
    says so in one line and exits 2: no traceback."""
    proc = subprocess.run(
        [sys.executable, "manage.py", *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "DJANGO_SECRET_KEY" in lines[0], proc.stderr[-2000:]
    assert proc.stdout == ""


# --- DEBUG error pages (`make run` serves with DJANGO_DEBUG=1) ----------------------------------

CANARIES = {
    "TYPESAFE_API_KEY": "tsKEYcanary-5e6f7a8b",
    "DJANGO_SECRET_KEY": "djSECRETcanary-1a2b3c4d",
    "RUNTIME_TOKEN": "rtTOKENcanary-9d8c7b6a",
    "OPENROUTER_API_KEY": "orKEYcanary-2f3e4d5c",
}
DB_PASSWORD = "dbPASScanary-7a6b5c4d"
SECRETS = [*CANARIES.values(), DB_PASSWORD]

#: A Django process started with the canaries: a request with a foreign Host (DisallowedHost,
#: a 400 page) and a request whose provider call fails inside Wire.call (a technical 500 whose
#: frames hold the Wire and the request headers).
DEBUG_PAGES = """
import json, os, sys, types
os.environ["DJANGO_SETTINGS_MODULE"] = "console.settings"
import django
django.setup()
import httpx
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.test import Client
from django.urls import include, path
from questions.engine.backends.base import Ask
from questions.engine.backends.http import TypeSafeBackend

def broken_transport(self, request):
    raise RuntimeError("the wire broke")

httpx.HTTPTransport.handle_request = broken_transport

@login_not_required
def ask_typesafe(request):
    TypeSafeBackend().ask(Ask(questions={}, state="a state", model="jev-latest"))

urls = types.ModuleType("debug_page_urls")
urls.urlpatterns = [path("ask/", ask_typesafe), path("", include("console.urls"))]
sys.modules[urls.__name__] = urls
settings.ROOT_URLCONF = urls.__name__
# runserver (wsgiref) copies the process environment into every request's META
client = Client(raise_request_exception=False, **os.environ)
pages = {
    "bad_host": client.get("/accounts/login/", HTTP_HOST="evil.example"),
    "wire_500": client.get("/ask/", HTTP_HOST="localhost"),
}
print(json.dumps({name: [r.status_code, r.content.decode()] for name, r in pages.items()}))
"""


@pytest.fixture(scope="module")
def debug_pages() -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", DEBUG_PAGES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_DEBUG": "1",
            "TYPESAFE_BASE_URL": "http://127.0.0.1:9",
            "DATABASE_URL": f"postgres://console:{DB_PASSWORD}@127.0.0.1:9/console",
            **CANARIES,
        },
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_a_debug_page_for_a_foreign_host_shows_no_secret(debug_pages):
    status, page = debug_pages["bad_host"]
    assert status == 400
    assert "DisallowedHost" in page and "DATABASE_URL" in page  # the settings and META, shown
    assert [s for s in SECRETS if s in page] == []


@pytest.mark.slow
def test_a_debug_500_inside_the_wire_shows_no_secret_in_its_frames(debug_pages):
    status, page = debug_pages["wire_500"]
    assert status == 500
    assert "the wire broke" in page and "questions/engine/backends/base.py" in page
    assert "headers" in page and "********************" in page  # the locals, cleansed
    assert [s for s in SECRETS if s in page] == []


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


@pytest.mark.slow
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
