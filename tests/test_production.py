"""Running the console for a team: the production settings and `check --deploy`, `make serve`'s
refusal, the content security policy, sign-in lockout and unlocking, upload limits, /healthz and
the workers' heartbeat, and hidden password reset."""

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.core.exceptions import RequestDataTooBig
from django.db import connection
from django.test import Client, RequestFactory
from django.urls import reverse
from django_tasks import task
from django_tasks_db.compat import task_finished, task_started

from console import limits
from questions.engine import workers
from questions.models import WorkerHeartbeat
from tests import factories

pytestmark = pytest.mark.both_databases

ROOT = Path(__file__).resolve().parents[1]
PRODUCTION_ENV = {
    "PATH": "/usr/bin:/bin",
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    "DJANGO_ALLOWED_HOSTS": "console.example.com",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://console.example.com",
    "DJANGO_BEHIND_PROXY": "1",
}


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**PRODUCTION_ENV, **env},
    )


def python(code: str, **env: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter with the console's settings, in the production
    environment (plus `env`)."""
    setup = "import json, django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'console.settings'; "
    return subprocess.run(
        [sys.executable, "-c", setup + code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**PRODUCTION_ENV, **env},
    )


def production_settings(*names: str, **env: str) -> dict:
    proc = python(
        "from django.conf import settings as s; "
        f"print(json.dumps({{n: getattr(s, n, None) for n in {list(names)!r}}}, default=str))",
        **env,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# --- settings -------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("behind_proxy", [False, True], ids=["direct", "behind a proxy"])
def test_check_deploy_passes_under_the_documented_production_environment(behind_proxy):
    env = {} if behind_proxy else {"DJANGO_BEHIND_PROXY": "", "DJANGO_CSRF_TRUSTED_ORIGINS": ""}
    proc = manage("check", "--deploy", "--fail-level", "WARNING", **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no issues" in proc.stdout


@pytest.mark.slow
def test_check_deploy_fails_on_a_plain_http_trial():
    """The switches for a plain-HTTP trial are what the deployment check warns about."""
    proc = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_SSL_REDIRECT="0",
        DJANGO_SECURE_COOKIES="0",
        DJANGO_HSTS_SECONDS="0",
    )
    assert proc.returncode != 0
    for check in ("W004", "W008", "W012", "W016"):
        assert check in proc.stderr


@pytest.mark.slow
def test_production_defaults_and_their_switches():
    names = (
        "SECURE_SSL_REDIRECT",
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_HSTS_SECONDS",
        "SECURE_PROXY_SSL_HEADER",
        "CSRF_TRUSTED_ORIGINS",
        "STORAGES",
    )
    on = production_settings(*names)
    assert on["SECURE_SSL_REDIRECT"] and on["SESSION_COOKIE_SECURE"] and on["CSRF_COOKIE_SECURE"]
    assert on["SECURE_HSTS_SECONDS"] == 31_536_000
    assert on["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert on["CSRF_TRUSTED_ORIGINS"] == ["https://console.example.com"]
    assert "whitenoise" in on["STORAGES"]["staticfiles"]["BACKEND"]
    off = production_settings(
        *names,
        DJANGO_SSL_REDIRECT="0",
        DJANGO_SECURE_COOKIES="0",
        DJANGO_HSTS_SECONDS="0",
        DJANGO_BEHIND_PROXY="0",
    )
    assert not (off["SECURE_SSL_REDIRECT"] or off["SESSION_COOKIE_SECURE"])
    assert off["SECURE_HSTS_SECONDS"] == 0 and off["SECURE_PROXY_SSL_HEADER"] is None
    local = production_settings(*names, DJANGO_DEBUG="1")
    assert not (local["SECURE_SSL_REDIRECT"] or local["SESSION_COOKIE_SECURE"])
    assert "whitenoise" not in local["STORAGES"]["staticfiles"]["BACKEND"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DJANGO_CSRF_TRUSTED_ORIGINS", "console.example.com"),
        ("DJANGO_LOG_LEVEL", "loud"),
        ("DJANGO_HSTS_SECONDS", "-1"),
        ("DJANGO_LOGIN_LOCKOUT_MINUTES", "0"),
        ("DJANGO_BEHIND_PROXY", "maybe"),
    ],
)
def test_a_bad_production_value_names_its_variable(variable, value):
    proc = manage("check", **{variable: value})
    assert proc.returncode != 0
    assert variable in proc.stderr.splitlines()[-1]


@pytest.mark.slow
def test_make_serve_refuses_to_start_without_its_variables():
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")}
    for missing in ("DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS"):
        given = {k: v for k, v in PRODUCTION_ENV.items() if k != missing and k != "PATH"}
        proc = subprocess.run(
            ["make", "--no-print-directory", "serve", "PORT=1"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={**env, **given},
        )
        assert proc.returncode != 0
        assert f"set {missing}" in proc.stderr


@pytest.mark.django_db
def test_behind_the_proxy_a_post_from_the_trusted_https_origin_is_accepted(settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.CSRF_TRUSTED_ORIGINS = ["https://console.example.com"]
    settings.ALLOWED_HOSTS = ["console.example.com"]
    factories.user("ann", password="pw")
    client = Client(enforce_csrf_checks=True)
    headers = {"X-Forwarded-Proto": "https", "Host": "console.example.com"}
    client.get(reverse("login"), headers=headers)
    form = {
        "username": "ann",
        "password": "pw",
        "csrfmiddlewaretoken": client.cookies["csrftoken"].value,
    }
    ok = client.post(
        reverse("login"), form, headers={**headers, "Origin": "https://console.example.com"}
    )
    assert ok.status_code == 302
    foreign = client.post(
        reverse("login"), form, headers={**headers, "Origin": "https://evil.example"}
    )
    assert foreign.status_code == 403


# --- content security policy ---------------------------------------------------------------------


@pytest.mark.django_db
def test_every_page_carries_a_policy_without_inline_script_or_eval(client):
    client.force_login(factories.author())
    policy = client.get(reverse("set-list"))["Content-Security-Policy"]
    directives = dict(
        (part.split()[0], part.split()[1:]) for part in policy.split(";") if part.strip()
    )
    assert directives["script-src"] == ["'self'"]
    assert directives["style-src"] == ["'self'"]
    assert directives["frame-ancestors"] == ["'none'"]
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy


INLINE = [
    (re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I), "an inline <script>"),
    (re.compile(r"<style\b", re.I), "a <style> element"),
    (re.compile(r"\sstyle=", re.I), "a style attribute"),
    (re.compile(r"\son[a-z]+=", re.I), "an on… handler attribute"),
    (re.compile(r"\shx-on[:-]", re.I), "an hx-on attribute (needs eval)"),
    (re.compile(r"""hx-(vals|headers)=['"]\s*(js|javascript):""", re.I), "hx-vals with js:"),
    (re.compile(r"hx-trigger=\"[^\"]*\[", re.I), "an hx-trigger filter (needs eval)"),
]


@pytest.mark.parametrize("template", sorted((ROOT / "templates").rglob("*.html")), ids=str)
def test_templates_hold_nothing_the_policy_blocks(template):
    text = template.read_text()
    found = [what for pattern, what in INLINE if pattern.search(text)]
    assert found == []


def test_htmx_is_configured_for_the_policy():
    base = (ROOT / "templates" / "base.html").read_text()
    config = re.search(r'<meta name="htmx-config" content=\'([^\']*)\'', base)
    assert config is not None
    assert json.loads(config.group(1)) == {
        "allowEval": False,
        "allowScriptTags": False,
        "includeIndicatorStyles": False,
    }


# --- sign-in lockout ----------------------------------------------------------------------------


def sign_in(client: Client, username: str, password: str):
    return client.post(reverse("login"), {"username": username, "password": password})


@pytest.mark.django_db
def test_five_failed_sign_ins_lock_the_user_name_at_that_address_with_a_clear_page(client):
    factories.user("ann", password="right")
    for _ in range(4):
        assert sign_in(client, "ann", "wrong").status_code == 200
    locked = sign_in(client, "ann", "wrong")
    assert locked.status_code == 429
    assert "Sign-in locked" in locked.content.decode()
    assert "15 minutes" in locked.content.decode()
    # the right password does not get through while locked
    again = sign_in(client, "ann", "right")
    assert again.status_code == 429
    assert "_auth_user_id" not in client.session
    # another user name from the same address, or ann from another address, is not locked
    factories.user("bob", password="right")
    assert sign_in(client, "bob", "right").status_code == 302
    elsewhere = Client(REMOTE_ADDR="10.1.2.3")
    assert sign_in(elsewhere, "ann", "right").status_code == 302


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["reviewer", "superuser"])
def test_a_reviewer_or_a_superuser_unlocks_in_the_admin(client, who):
    factories.user("ann", password="right")
    for _ in range(5):
        sign_in(client, "ann", "wrong")
    assert sign_in(client, "ann", "right").status_code == 429
    attempt = AccessAttempt.objects.get(username="ann")
    unlocker = (
        factories.reviewer("rita")
        if who == "reviewer"
        else get_user_model().objects.create_superuser("boss", password="pw")
    )
    admin = Client()
    admin.force_login(unlocker)
    listing = admin.get(reverse("admin:axes_accessattempt_changelist"))
    assert listing.status_code == 200 and "ann" in listing.content.decode()
    deleted = admin.post(
        reverse("admin:axes_accessattempt_delete", args=[attempt.pk]), {"post": "yes"}
    )
    assert deleted.status_code == 302
    assert sign_in(client, "ann", "right").status_code == 302


@pytest.mark.django_db
def test_an_author_cannot_unlock_and_a_reviewer_sees_no_other_admin_page():
    attempt = AccessAttempt.objects.create(
        username="ann", ip_address="127.0.0.1", failures_since_start=5, user_agent="t"
    )
    author = Client()
    author.force_login(factories.author())
    url = reverse("admin:axes_accessattempt_delete", args=[attempt.pk])
    assert author.post(url, {"post": "yes"}).status_code == 302  # to the admin's sign-in
    assert AccessAttempt.objects.filter(pk=attempt.pk).exists()
    reviewer = Client()
    reviewer.force_login(factories.reviewer())
    assert reviewer.get(reverse("admin:questions_version_changelist")).status_code == 403
    assert reviewer.get(reverse("admin:auth_user_changelist")).status_code == 403


@pytest.mark.django_db
def test_there_is_no_password_reset_page(client):
    assert client.get("/accounts/password_reset/").status_code == 404
    assert "reset" not in client.get(reverse("login")).content.decode().lower()


# --- upload limits ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_anonymous_post_above_64_kib_gets_the_413_page(client):
    response = client.post(reverse("login"), {"username": "ann", "password": "x" * (65 * 1024)})
    assert response.status_code == 413
    assert "too large" in response.content.decode()
    assert not AccessAttempt.objects.exists()  # nothing was read, not even as a failed sign-in


@pytest.mark.django_db
def test_a_signed_in_post_above_the_document_limit_gets_the_413_page(client, settings):
    from django.conf import settings as live

    assert live.DATA_UPLOAD_MAX_MEMORY_SIZE < 32 * 2**20  # no longer Django's 2.5 MiB × 13
    client.force_login(factories.author())
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = client.post(reverse("document-check"), {"document": "x" * 2000})
    assert response.status_code == 413
    ok = client.post(reverse("document-check"), {"document": "{}"})
    assert ok.status_code == 200


@pytest.mark.django_db
def test_a_body_found_too_large_while_read_is_a_413_not_a_400():
    request = RequestFactory().post("/check/")
    request.user = factories.author()
    assert limits.bad_request(request, RequestDataTooBig("big")).status_code == 413
    assert limits.bad_request(request, ValueError("other")).status_code == 400


# --- /healthz and the workers' heartbeat ------------------------------------------------------


@task()
def nothing_to_do() -> None:
    """A task for the heartbeat test to send a worker's signals about."""


@pytest.mark.django_db(transaction=True)
def test_healthz_reports_the_database_migrations_and_workers_without_sign_in(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": "ok",
        "migrations": "ok",
        "worker": "none",
    }
    result = nothing_to_do.enqueue()
    with workers.heartbeat("w-1"):
        assert client.get("/healthz").json()["worker"] == "idle"
        task_started.send(sender=type(result.backend), task_result=result)
        assert client.get("/healthz").json()["worker"] == "ok"
        task_finished.send(sender=type(result.backend), task_result=result)
        assert client.get("/healthz").json()["worker"] == "idle"
    assert not WorkerHeartbeat.objects.exists()  # a worker that stopped removes its beat
    assert client.get("/healthz").json()["worker"] == "none"


@pytest.mark.django_db
def test_a_worker_not_heard_from_for_a_while_counts_as_gone(client):
    from datetime import timedelta

    from django.utils import timezone

    WorkerHeartbeat.objects.create(
        worker_id="old",
        host="h",
        pid=1,
        busy=True,
        beat_at=timezone.now() - timedelta(seconds=workers.GONE_AFTER_SECONDS + 1),
    )
    assert client.get("/healthz").json()["worker"] == "none"


@pytest.mark.django_db
def test_healthz_is_503_when_a_migration_is_missing(client):
    from django.db.migrations.loader import MigrationLoader

    [(_, newest)] = MigrationLoader(connection).graph.leaf_nodes("questions")
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM django_migrations WHERE app = 'questions' AND name = %s", [newest]
        )
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["migrations"] == "pending"
    assert response.json()["status"] == "failing"


@pytest.mark.slow
def test_healthz_is_503_when_the_database_is_unreachable():
    proc = python(
        "django.setup(); from django.test import Client; "
        "r = Client().get('/healthz', HTTP_HOST='console.example.com', secure=True); "
        "print(r.status_code, r.content.decode())",
        DATABASE_URL="postgres://nobody:pw@127.0.0.1:9/nothing",
    )
    status, _, body = proc.stdout.partition(" ")
    assert status == "503", proc.stderr
    assert json.loads(body)["database"] == "unreachable"
    assert "pw" not in proc.stdout


@pytest.mark.slow
def test_make_serve_serves_and_stops_every_process_on_term(tmp_path):
    """gunicorn and a task worker come up in production mode (static files hashed, the worker
    heard from), and TERM to make stops every process it started."""
    import signal
    import socket
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **PRODUCTION_ENV,
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SSL_REDIRECT": "0",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'serve.sqlite3'}",
    }
    server = subprocess.Popen(
        ["make", "--no-print-directory", "serve", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        health = None
        for _ in range(120):
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz").json()
                if health["worker"] != "none":
                    break
            except (httpx.HTTPError, ValueError):  # not up yet, or not JSON yet
                pass
            time.sleep(0.5)
        assert health == {"status": "ok", "database": "ok", "migrations": "ok", "worker": "idle"}
        page = httpx.get(f"http://127.0.0.1:{port}/accounts/login/")
        assert re.search(r'/static/console\.[0-9a-f]{12}\.css"', page.text)
        assert "Content-Security-Policy" in page.headers
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    for _ in range(60):  # every process in make's group has ended
        try:
            os.killpg(server.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.5)
    else:
        os.killpg(server.pid, signal.SIGKILL)
        pytest.fail("make serve left processes running after TERM")
    lines = [json.loads(line) for line in server.stdout.read().decode().splitlines()]
    assert any(line["logger"] == "console.request" for line in lines)  # stdout: JSON lines only
