"""The audit log: every state-changing action is one row — who, when, what, the object, from
which address —, written by the service in the change's transaction; a team's admins read its
rows (and its members' sign-ins) on a page, filtered, and export them (CSV, JSONL, the command
line); the application never changes nor deletes a row."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta

import jevkit_core
import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client
from django.urls import reverse

from questions import roles, services
from questions.core import audit_files, ingest
from questions.models import AppendOnly, AuditEntry
from questions.services import records as record_services
from questions.services.audit import ACTIONS
from tests import factories
from tests.helpers import make_world
from tests.providers import run_cli

pytestmark = [pytest.mark.django_db, pytest.mark.both_databases]


def _client(user, address: str = "127.0.0.1") -> Client:
    client = Client(REMOTE_ADDR=address)
    client.force_login(user)
    return client


def _actions() -> set[str]:
    return set(AuditEntry.objects.values_list("action", flat=True))


# --- append only -------------------------------------------------------------------------------


def test_a_row_is_never_changed_nor_deleted_by_the_application():
    factories.question_set("s")
    row = AuditEntry.objects.get(action="set.created")
    attempts = [
        lambda: AuditEntry.objects.filter(pk=row.pk).update(action="x"),
        lambda: AuditEntry.objects.all().delete(),
        row.delete,
        lambda: AuditEntry.objects.bulk_update([row], ["actor_name"]),
        row.save,
    ]
    row.actor_name = "someone else"
    for attempt in attempts:
        with pytest.raises(AppendOnly), transaction.atomic():
            attempt()
    assert AuditEntry.objects.get(pk=row.pk).actor_name != "someone else"


def test_a_deleted_user_leaves_their_rows_as_they_were():
    kim = factories.user("kim")
    kim.set_password("pw-kim")
    kim.save()
    Client().post(reverse("login"), {"username": "kim", "password": "pw-kim"})
    row = AuditEntry.objects.get(action="sign_in")
    kim.delete()
    after = AuditEntry.objects.get(pk=row.pk)
    assert (after.actor_name, after.actor_id, after.at) == ("kim", row.actor_id, row.at)


def test_a_change_refused_or_rolled_back_leaves_no_row():
    qs = factories.question_set("s")
    viewer = factories.user()
    before = AuditEntry.objects.count()
    with pytest.raises(services.StaleRevision):
        services.version_save(
            version=factories.draft(qs), document={}, base_revision=99, author=qs.owner
        )
    with pytest.raises(services.NotAllowed):
        services.sample_state_create(question_set=qs, name="x", state=1, author=viewer)
    assert AuditEntry.objects.count() == before


# --- every action ------------------------------------------------------------------------------


def test_every_action_of_the_log_is_written_by_the_step_that_does_it(tmp_path, settings):
    """A journey through every state-changing step: each action the log names is written."""
    world = make_world()  # sets, versions, submit, approve, a label, a state, a run, a webhook
    writer = get_user_model().objects.get(username="writer")
    checker = get_user_model().objects.get(username="checker")
    Client().post(reverse("login"), {"username": "writer", "password": "pw"})  # sign_in
    payments = services.team_create(slug="payments", user=roles.OPERATOR)
    factories.admin("boss", team=payments)
    services.member_set(team=payments, username="writer", role="admin", user=roles.OPERATOR)
    services.member_set(team=payments, username="writer", role="author", user=roles.OPERATOR)
    services.member_remove(team=payments, username="writer", user=roles.OPERATOR)
    qs = services.team_default().question_sets.get(slug="s")
    draft = factories.draft(qs)
    services.version_save(
        version=draft, document=factories.document(3), base_revision=draft.revision, author=writer
    )
    services.version_comment(version=draft, actor=checker, note="seen")
    kept = services.version_keep(version=draft, author=writer)
    services.version_discard(version=kept, author=writer)
    v2 = qs.versions.get(number=2)
    services.version_request_changes(version=v2, reviewer=checker, note="more")
    services.label_move(
        question_set=qs, name="staging", version=qs.versions.get(number=1), actor=checker
    )
    state = qs.sample_states.get(pk=world["state"])
    services.sample_state_update(
        sample=state, name="n", state={"n": 2}, author=writer, base_revision=1
    )
    spare = services.sample_state_create(question_set=qs, name="gone", state=9, author=writer)
    services.sample_state_delete(sample=spare, author=writer)
    services.sample_states_import(question_set=qs, items=[{"name": "i", "state": 5}], author=writer)
    services.state_label(sample=state, question_id="q0", answer="o0", labeller=writer)
    services.state_label_undo(question_set=qs, labeller=writer)
    services.labelling_configure(question_set=qs, user=checker, needed=2)
    services.state_label(sample=state, question_id="q0", answer="o0", labeller=writer)
    services.state_label(
        sample=state, question_id="q0", answer="o1", labeller=factories.author("second")
    )
    services.dispute_settle(sample=state, question_id="q0", answer="o0", reviewer=checker)
    answer = {"type": "choice", "choice": "o0", "confidence": 0.7}
    answer["probabilities"] = {"o0": 0.8, "o1": 0.1, "other": 0.1}
    record = jevkit_core.Record(
        model="m",
        state={"r": 1},
        questions=qs.versions.get(number=1).document,
        answers={"q0": answer},
    )
    record_services.records_import(
        question_set=qs, lines=[json.dumps(record.to_dict())], user=writer
    )
    run = services.batch_create(
        version=qs.versions.get(number=1), backend="recorded", user=writer, enqueue=False
    )
    services.batch_cancel(run=run, user=writer)
    token, _ = services.api_token_create(name="rt", user=checker)
    services.api_token_revoke(token=token, user=checker)
    hook = qs.webhooks.get()
    services.webhook_delete(webhook=hook, user=checker)
    services.ingest_configure(question_set=qs, user=checker, keep_one_in=1)
    services.states_ingest(
        slug="s", body=b'{"state": {"t": "x"}}', media_type=ingest.NDJSON, by=roles.OPERATOR
    )
    services.production_purge(
        question_set=qs,
        user=checker,
        older_than=timedelta(0),
        now=datetime.now(UTC) + timedelta(seconds=1),
    )
    services.set_move(question_set=qs, to=payments, user=roles.OPERATOR)
    done = {"version.approved", "version.submitted", "webhook.created", "run.started"}
    missing = set(ACTIONS) - _actions() - {"lint.accepted"}  # its own test, below
    assert missing == set(), missing
    assert done <= _actions()


def test_an_accepted_lint_is_an_action(tmp_path):
    writer = factories.author("writer")
    doc = factories.document(1)
    doc["q0"]["instructions"] = "Which one is 1k?"  # numeric_representation
    qs = factories.question_set("s", owner=writer, doc=doc)
    services.lint_accept(
        version=factories.draft(qs),
        question="q0",
        code="numeric_representation",
        reason="a band",
        actor=writer,
    )
    row = AuditEntry.objects.get(action="lint.accepted")
    assert (row.actor_name, row.set_slug, row.detail["code"]) == (
        "writer",
        "s",
        "numeric_representation",
    )


# --- who, when, what, from where ---------------------------------------------------------------


def test_a_row_says_who_what_and_from_which_address():
    team = factories.team("payments")
    boss = factories.admin("boss", team=team)
    get_user_model().objects.create_user("kim")
    _client(boss, "203.0.113.7").post(
        reverse("member-save", args=["payments"]), {"username": "kim", "role": "reviewer"}
    )
    row = AuditEntry.objects.get(action="member.added", actor_name="boss")
    assert (row.actor_name, row.team, row.address, row.via) == (
        "boss",
        team,
        "203.0.113.7",
        "web",
    )
    assert row.detail == {"user": "kim", "role": "reviewer"}
    assert abs(row.at - datetime.now(UTC)) < timedelta(minutes=1)


def test_the_command_line_is_recorded_as_such_without_an_address():
    run_cli("team", "--create", "payments")
    row = AuditEntry.objects.get(action="team.created")
    assert (row.actor_name, row.via, row.address) == ("the operator", "cli", None)


def test_a_sign_in_is_recorded_with_its_address_and_shown_to_the_members_teams():
    payments = factories.team("payments")
    factories.admin("boss", team=payments)
    kim = factories.user("kim", role="viewer", team=payments)
    kim.set_password("pw-kim")
    kim.save()
    Client(REMOTE_ADDR="198.51.100.4").post(
        reverse("login"), {"username": "kim", "password": "pw-kim"}
    )
    row = AuditEntry.objects.get(action="sign_in")
    assert (row.actor_name, row.team, row.address) == ("kim", None, "198.51.100.4")
    assert row in AuditEntry.objects.of_team(payments)
    assert row not in AuditEntry.objects.of_team(factories.team("support"))


def test_a_proxys_address_that_is_no_address_is_kept_as_none(settings):
    settings.BEHIND_PROXY = True
    boss = factories.admin("boss")
    client = Client(HTTP_X_FORWARDED_FOR="not-an-address")
    client.force_login(boss)
    client.post(reverse("set-create"), {"name": "S", "slug": "s"})
    assert AuditEntry.objects.get(action="set.created").address is None


# --- the page, its filters and exports ---------------------------------------------------------


def test_a_team_admin_adds_a_member_as_reviewer_and_the_log_shows_it(tmp_path):
    team = factories.team("payments")
    boss = factories.admin("boss", team=team)
    get_user_model().objects.create_user("kim")
    client = _client(boss)
    client.post(reverse("member-save", args=["payments"]), {"username": "kim", "role": "reviewer"})
    page = client.get(reverse("team-audit", args=["payments"])).content.decode()
    assert "member.added" in page and "kim" in page and "reviewer" in page
    lines = client.get(reverse("team-audit-jsonl", args=["payments"])).getvalue().decode()
    added = [json.loads(x) for x in lines.splitlines() if '"member.added"' in x]
    newest = added[0]
    assert (newest["user"], newest["detail"]) == ("boss", {"user": "kim", "role": "reviewer"})
    code, out, _ = run_cli("audit", "--team", "payments", "--action", "member.added", "--json")
    # newest first: kim, added by boss; boss, made admin by the operator
    assert code == 0 and [r["detail"]["user"] for r in json.loads(out)] == ["kim", "boss"]


def test_each_team_sees_only_its_own_rows():
    payments, support = factories.team("payments"), factories.team("support")
    boss = factories.admin("boss", team=payments)
    other = factories.admin("other", team=support)
    factories.question_set("refunds", team=payments)
    factories.question_set("tickets", team=support)
    page = _client(boss).get(reverse("team-audit", args=["payments"])).content.decode()
    ours = page.split('id="audit-rows"')[1]
    assert "refunds" in ours and "tickets" not in ours and "other" not in ours
    assert _client(boss).get(reverse("team-audit", args=["support"])).status_code == 404
    assert _client(other).get(reverse("team-audit-csv", args=["payments"])).status_code == 404
    reviewer = factories.reviewer("rev", team=payments)
    assert _client(reviewer).get(reverse("team-audit", args=["payments"])).status_code == 403


def test_the_page_filters_by_user_action_set_and_time():
    team = factories.team("payments")
    boss = factories.admin("boss", team=team)
    writer = factories.author("writer", team=team)
    factories.question_set("refunds", owner=writer, team=team)
    factories.question_set("tickets", owner=boss, team=team)
    client = _client(boss)
    url = reverse("team-audit", args=["payments"])
    by_writer = client.get(url, {"user": "writer"}).content.decode().split('id="audit-rows"')[1]
    assert "refunds" in by_writer and "tickets" not in by_writer
    one_set = client.get(url, {"set": "tickets", "action": "set.created"}).content.decode()
    assert one_set.count("<code>set.created</code>") == 1 and "tickets" in one_set
    later = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    assert "No entry matches" in client.get(url, {"since": later}).content.decode()
    assert "refunds" in client.get(url, {"since": "1h", "until": later}).content.decode()
    bad = client.get(url, {"since": "last tuesday"})
    assert bad.status_code == 400 and "is no moment" in bad.content.decode()
    assert client.get(url, {"action": "nothing.happened"}).status_code == 400


def test_the_csv_export_runs_no_cell_as_a_formula():
    team = factories.team("payments")
    boss = factories.admin("boss", team=team)
    services.question_set_create(slug="s", name="=HYPERLINK(1)", owner=boss, team=team)
    body = _client(boss).get(reverse("team-audit-csv", args=["payments"])).getvalue().decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert list(rows[0]) == list(audit_files.COLUMNS)
    created = next(r for r in rows if r["action"] == "set.created")
    assert created["object"] == "'=HYPERLINK(1)"


def test_the_audit_command_filters_by_time_and_refuses_a_moment_that_is_none(tmp_path):
    factories.question_set("s")
    code, out, _ = run_cli("audit", "--team", "default", "--since", "7d", "--json")
    assert code == 0 and {r["action"] for r in json.loads(out)} >= {"set.created"}
    code, out, _ = run_cli("audit", "--team", "default", "--until", "2000-01-01", "--json")
    assert (code, json.loads(out)) == (0, [])
    code, _, err = run_cli("audit", "--team", "default", "--since", "yesterday")
    assert code == 2 and "is no moment" in err
    code, out, _ = run_cli("audit", "--team", "nowhere", "--json")
    assert (code, json.loads(out)["status"]) == (1, 404)


def test_moments():
    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    assert audit_files.moment("7d", now) == now - timedelta(days=7)
    assert audit_files.moment("24h", now) == now - timedelta(hours=24)
    assert audit_files.moment("2026-12-01", now) == datetime(2026, 12, 1, tzinfo=UTC)
    assert audit_files.moment("2026-12-01T10:00:00+02:00", now).hour == 10
    with pytest.raises(ValueError, match="is no moment"):
        audit_files.moment("soon", now)


def test_no_row_holds_a_state_or_a_document(tmp_path):
    make_world()
    text = json.dumps(list(AuditEntry.objects.values("detail", "object_repr")))
    assert '"n": 1' not in text and "Question 0?" not in text
