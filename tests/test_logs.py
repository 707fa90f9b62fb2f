"""Logs are JSON lines with the request's fields; a 500 is logged with its traceback; the
provider key, API tokens, the secret key, passwords and sample-state contents never appear.

The run below goes through every path that logs: sign-in (failed and good), a sample state
saved and checked, a preview the provider refuses while echoing the key, a batch run, a token
made and used on the export API (good, bad, conditional), and an unexpected exception."""

import io
import json
import logging
import re

import pytest
from django.conf import settings as live_settings
from django.contrib.auth.decorators import login_not_required
from django.test import Client
from django.urls import include, path, reverse

from console.logs import JSONFormatter
from questions import roles, services
from questions.models import SampleState
from tests import factories
from tests.helpers import token_form
from tests.providers import KEY, Provider

pytestmark = pytest.mark.django_db(transaction=True)

STATE_CANARY = "state-canary-8c1f0e77"
PASSWORD = "password-canary-51d2"


@login_not_required
def boom(request):
    raise RuntimeError(f"went wrong holding {live_settings.TYPESAFE_API_KEY}")


# this module is the URLconf of the test below: the console's own plus a view that fails
urlpatterns = [path("boom/", boom), path("", include("console.urls"))]


@pytest.fixture
def captured():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JSONFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    yield stream
    root.removeHandler(handler)


@pytest.fixture
def provider(provider_factory):
    return provider_factory(Provider(), every_wire=True)


def test_a_run_through_every_path_logs_json_lines_without_secrets(captured, provider, settings):
    settings.ROOT_URLCONF = __name__
    writer = factories.user("writer", groups=(roles.AUTHORS,), password=PASSWORD)
    checker = factories.user("checker", groups=(roles.REVIEWERS,), password=PASSWORD)
    qs = factories.question_set("logged", owner=writer)
    client = Client(raise_request_exception=False)

    # sign-in: a wrong password, then the right one
    client.post(reverse("login"), {"username": "writer", "password": PASSWORD + "x"})
    assert (
        client.post(reverse("login"), {"username": "writer", "password": PASSWORD}).status_code
        == 302
    )
    # a sample state, checked and saved
    state = json.dumps({"message": STATE_CANARY})
    client.post(reverse("state-check", args=[qs.slug]), {"state": state})
    client.post(
        reverse("state-create", args=[qs.slug]),
        {"name": "canary", "state": state, "base_revision": "0"},
    )
    sample = SampleState.objects.get(name="canary")
    # a preview the provider refuses, echoing the key and the state back
    provider.reply(401, {"detail": f"bad key {KEY} for {STATE_CANARY}"})
    client.post(
        reverse("version-preview", args=[qs.slug, 1]),
        {"preview_state": str(sample.pk), "preview_backend": "typesafe"},
    )
    # a batch run against the provider, one state failing with the key and state echoed
    provider.reply(500, {"detail": f"{KEY} {STATE_CANARY}"})
    version = services.version_submit(version=qs.versions.get(number=1), author=writer)
    services.version_approve(
        confirm_weak_evidence=True, version=version, reviewer=checker, label="production"
    )
    run = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    services.batch_execute(run.pk, sleep=lambda s: None)
    # a token made by a reviewer and used on the export API
    client.force_login(checker)
    page = client.post(reverse("token-list"), {"name": "runtime", **token_form(client)})
    page = page.content.decode()
    token = re.search(r"dct_[A-Za-z0-9_-]{20,}", page).group(0)
    api = reverse("api-export", args=[qs.slug])
    export = client.get(api, {"label": "production"}, headers={"Authorization": f"Bearer {token}"})
    assert export.status_code == 200
    client.get(
        api,
        {"label": "production"},
        headers={"Authorization": f"Bearer {token}", "If-None-Match": export["ETag"]},
    )
    client.get(api, {"label": "production"}, headers={"Authorization": f"Bearer {token}x"})
    # and an unexpected exception
    assert client.get("/boom/").status_code == 500

    text = captured.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]
    for line in lines:
        assert {"time", "level", "logger", "message", "request_id"} <= line.keys()
    requests = [line for line in lines if line["logger"] == "console.request"]
    assert {(r["method"], r["path"], r["status"]) for r in requests} >= {
        ("POST", "/accounts/login/", 200),
        ("POST", "/accounts/login/", 302),
        ("GET", api, 200),
        ("GET", api, 304),
        ("GET", api, 401),
        ("GET", "/boom/", 500),
    }
    assert all(isinstance(r["duration_ms"], float) for r in requests)
    users = [r["user_id"] for r in requests]
    assert users[0] is None and writer.pk in users and checker.pk in users
    failure = next(
        line for line in lines if line["logger"] == "django.request" and "traceback" in line
    )
    assert "RuntimeError: went wrong holding [redacted]" in failure["traceback"]
    boom_line = next(r for r in requests if r["path"] == "/boom/")
    assert failure["request_id"] == boom_line["request_id"]
    # the batch run: one line for the run, and one for each call that failed, none per answer
    [summary] = [
        line
        for line in lines
        if line["logger"] == "questions.batches" and line["message"].startswith(f"run {run.pk} ")
    ]
    assert " calls (" in summary["message"] and " answered, " in summary["message"]
    calls = [line for line in lines if line["logger"] == "questions.decisions"]
    assert calls and all(" status=200 " not in line["message"] for line in calls)
    assert "redacted" in text  # the provider's echo was logged, scrubbed
    for secret in (KEY, token, live_settings.SECRET_KEY, PASSWORD, STATE_CANARY):
        assert secret not in text


def test_a_batch_run_logs_one_line_for_the_run_and_none_per_answered_state(captured, settings):
    from questions.dev import standin
    from tests.providers import DOC

    server = standin.serve_in_thread()
    settings.TYPESAFE_API_KEY = standin.KEY
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        writer = factories.author("writer")
        qs = factories.question_set("logged", owner=writer, doc=DOC)
        for i in range(5):
            services.sample_state_create(
                question_set=qs, name=f"s{i}", state={"n": i}, author=writer
            )
        version = services.open_draft(qs)
        run = services.batch_create(
            version=version, backend="typesafe", user=writer, concurrency=128, enqueue=False
        )
        services.batch_execute(run.pk)
    finally:
        server.shutdown()
        server.server_close()
    lines = [json.loads(line) for line in captured.getvalue().splitlines()]
    assert not [line for line in lines if line["logger"] == "questions.decisions"]
    [summary] = [line for line in lines if line["logger"] == "questions.batches"]
    assert summary["message"] == (
        f"run {run.pk} done: 5 answered, 0 failed, 0 cancelled; 5 calls (0 failed) in "
        + summary["message"].rsplit(" in ", 1)[1]
    )
