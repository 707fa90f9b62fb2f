"""Who may do what, owned by the services: every state-changing service and every live ask
checks its actor, whatever calls it (a view, the command line, the admin)."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from questions import roles, services
from questions.core import spec
from questions.dev import standin
from questions.models import BatchRun, Decision, QuestionSet, ReviewEvent, Version
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def counting_provider(settings):
    """A live backend that must never be reached: it counts the calls that reach it."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    calls = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            calls.append(self.path)
            self.send_response(500)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    standin.serve_in_background(server)
    settings.TYPESAFE_API_KEY = "k-live"
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
    yield calls
    server.shutdown()
    server.server_close()


def test_a_user_in_no_group_makes_no_live_call_from_the_compare_page(counting_provider):
    qs = factories.question_set("s")
    state = services.sample_state_create(question_set=qs, name="n", state=1, author=qs.owner)
    client = Client()
    client.force_login(factories.user("viewer"))
    query = "&".join(["col=v1:typesafe"] * 30) + f"&state={state.pk}"
    page = client.get(f"{reverse('set-compare', args=['s'])}?{query}")
    assert page.status_code == 200
    assert services.LIVE_ASKERS_ONLY in page.content.decode()
    assert (counting_provider, Decision.objects.count()) == ([], 0)


def test_the_compare_page_asks_at_most_three_live_columns(counting_provider):
    qs = factories.question_set("s")
    state = services.sample_state_create(question_set=qs, name="n", state=1, author=qs.owner)
    client = Client()
    client.force_login(qs.owner)
    query = "&".join(f"col=v1:typesafe&col=v1:{b}" for b in ("recorded",) * 10)
    page = client.get(
        f"{reverse('set-compare', args=['s'])}?{query}&col=v1:typesafe&state={state.pk}"
    )
    assert page.status_code == 200
    assert len(counting_provider) <= 3


def test_a_live_ask_needs_an_author_or_a_reviewer(counting_provider):
    with pytest.raises(services.NotAllowed):
        services.decision_ask(
            backend="typesafe", document=factories.document(), state=1, user=factories.user()
        )
    assert counting_provider == []


def test_a_replay_is_a_read_for_everyone():
    outcome = services.decision_ask(
        backend="recorded", document=factories.document(), state=1, user=factories.user()
    )
    assert outcome.status == 404  # nothing recorded: reported, never made up


@pytest.mark.parametrize(
    "write",
    [
        lambda qs, u: services.version_create(
            question_set=qs, document=factories.document(), author=u
        ),
        lambda qs, u: services.version_save(
            version=factories.draft(qs), document={}, base_revision=1, author=u
        ),
        lambda qs, u: services.version_discard(version=factories.draft(qs), author=u),
        lambda qs, u: services.sample_state_create(question_set=qs, name="x", state=1, author=u),
        lambda qs, u: services.batch_create(
            version=factories.draft(qs), backend="recorded", user=u, enqueue=False
        ),
        lambda qs, u: services.api_token_create(name="t", user=u),
        lambda qs, u: services.version_import(slug="new", value=factories.document(), author=u),
    ],
    ids=["create", "save", "discard", "state", "batch", "token", "import"],
)
def test_a_user_in_no_group_changes_nothing(write):
    qs = factories.question_set("s")
    before = (Version.objects.count(), factories.draft(qs).revision)
    with pytest.raises(services.NotAllowed):
        write(qs, factories.user())
    assert (Version.objects.count(), factories.draft(qs).revision) == before


def test_the_import_command_needs_an_author(tmp_path, capsys):
    factories.user("viewer")
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(factories.document()))
    with pytest.raises(SystemExit) as exited:
        call_command("questions", "import", str(path), "--set", "new", "--user", "viewer", "--json")
    assert exited.value.code == 1
    out = json.loads(capsys.readouterr().out)
    assert (out["status"], out["detail"]) == (403, "Only authors change question sets.")
    assert not QuestionSet.objects.filter(slug="new").exists()


def test_nobody_approves_a_version_they_edited():
    writer = factories.author("writer")
    boss = factories.user("boss", groups=(roles.AUTHORS, roles.REVIEWERS))
    qs = factories.question_set("s", owner=writer)
    services.version_save(
        version=factories.draft(qs), document=factories.document(2), base_revision=1, author=boss
    )
    version = services.version_submit(version=factories.draft(qs), author=writer)
    with pytest.raises(services.NotAllowed, match="wrote or edited version 1"):
        services.version_approve(confirm_weak_evidence=True, version=version, reviewer=boss)
    version.refresh_from_db()
    assert version.status == "in_review"
    assert not ReviewEvent.objects.filter(kind="approved").exists()


def test_only_authors_and_reviewers_comment():
    qs = factories.question_set("s")
    with pytest.raises(services.NotAllowed):
        services.version_comment(version=factories.draft(qs), actor=factories.user(), note="hi")
    assert not ReviewEvent.objects.filter(kind="commented").exists()


def test_a_refusal_carries_its_status_to_the_command_line(settings, tmp_path, capsys):
    settings.TYPESAFE_API_KEY = ""
    factories.question_set("s")
    with pytest.raises(SystemExit):
        call_command("questions", "batch", "--set", "s", "--backend", "typesafe", "--json")
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == 503 and "TYPESAFE_API_KEY" in out["detail"]


# --- the configured limits reach every caller ---------------------------------------------------


@pytest.mark.django_db(transaction=True)  # the run's workers use connections of their own
def test_a_set_within_raised_limits_runs_previews_and_compares(settings):
    settings.DECISIONS_LIMITS = spec.Limits(max_questions=40)
    document = {f"q{i}": {"type": "noul", "instructions": f"Is {i} true?"} for i in range(35)}
    writer, checker = factories.author(), factories.reviewer()
    qs = factories.question_set("big", owner=writer, doc=document)
    services.sample_state_create(question_set=qs, name="n", state=1, author=writer)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    services.version_approve(confirm_weak_evidence=True, version=version, reviewer=checker)
    run = services.batch_create(version=version, backend="recorded", user=writer, enqueue=False)
    run = services.batch_execute(run.pk)
    # asked, not refused as invalid: each state reached the backend (nothing recorded to replay)
    assert run.detail.startswith("Every state failed: 404")
    client = Client()
    client.force_login(writer)
    page = client.get(reverse("set-compare", args=["big"]), {"col": f"run:{run.pk}"})
    assert "q34" in page.content.decode()


def test_the_editor_offers_a_user_in_no_group_recordings_only(counting_provider):
    qs = factories.question_set("s")
    client = Client()
    client.force_login(factories.user("viewer"))
    page = client.get(factories.draft(qs).get_absolute_url()).content.decode()
    assert 'value="recorded"' in page and 'value="typesafe"' not in page


@pytest.mark.parametrize("model", ["m" * 201, "jev\x00latest"])
def test_a_model_name_no_record_can_hold_is_refused_before_anything_is_sent(
    counting_provider, model
):
    qs = factories.question_set("s")
    services.sample_state_create(question_set=qs, name="n", state=1, author=qs.owner)
    outcome = services.decision_ask(
        backend="typesafe", document=factories.document(), state=1, user=qs.owner, model=model
    )
    assert outcome.status == 422 and "model name" in outcome.error.detail
    assert (counting_provider, Decision.objects.count()) == ([], 0)
    with pytest.raises(services.Invalid, match="model name"):
        services.batch_create(
            version=factories.draft(qs), backend="recorded", user=qs.owner, model=model
        )
    assert not BatchRun.objects.exists()
