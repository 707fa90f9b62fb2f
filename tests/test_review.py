"""The review workflow, labels, the export (document, schema, HTTP API, CLI) and the round trip."""

from __future__ import annotations

import hashlib
import importlib
import json
from datetime import timedelta
from pathlib import Path

import jsonschema
import pytest
from django.apps import apps as django_apps
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, given, settings

from questions import exports, roles, services
from questions.core import check, spec
from questions.models import APIToken, Label, LabelMove, ReviewEvent, Version
from tests import factories
from tests.helpers import SCHEMA, token_form, validate_export, write
from tests.providers import run_cli as run
from tests.strategies import question_maps

pytestmark = pytest.mark.django_db
EXAMPLES = Path(__file__).resolve().parent / "examples"


@pytest.fixture
def team():
    writer = factories.author("writer")
    checker = factories.reviewer("checker")
    qs = factories.question_set("routing", owner=writer)
    return writer, checker, qs


def submitted(qs, writer) -> Version:
    return services.version_submit(version=factories.draft(qs), author=writer)


# --- workflow ------------------------------------------------------------------------------------


def test_submit_approve_with_a_label_and_every_step_on_the_record(team):
    writer, checker, qs = team
    version = submitted(qs, writer)
    version = services.version_approve(
        confirm_weak_evidence=True,
        version=version,
        reviewer=checker,
        note="looks right",
        label="production",
    )
    assert version.status == "approved"
    events = [(e.kind, e.actor.username, e.note) for e in version.events.all()]
    assert events == [
        ("created", "writer", ""),
        ("submitted", "writer", ""),
        (
            "approved",
            "checker",
            "Approved although this version has no finished batch run over the sample states "
            "(confirmed). looks right",
        ),
    ]
    label = Label.objects.get(question_set=qs, name="production")
    assert label.version == version
    move = LabelMove.objects.get()
    assert (move.from_version, move.to_version, move.actor) == (None, version, checker)


def test_changes_requested_then_the_author_continues_in_a_new_draft(team):
    writer, checker, qs = team
    version = submitted(qs, writer)
    with pytest.raises(services.ServiceError, match="Say what should change"):
        services.version_request_changes(version=version, reviewer=checker, note=" ")
    version = services.version_request_changes(
        version=version, reviewer=checker, note="describe `other`"
    )
    assert version.status == "changes_requested"
    draft = services.version_draft_from(version=version, author=writer)
    assert (draft.number, draft.parent, draft.status) == (2, version, "draft")
    with pytest.raises(services.NotADraft):
        services.version_save(version=version, document={}, base_revision=1, author=writer)


def test_nobody_approves_their_own_version(team, settings):
    writer, _, qs = team
    services.member_set(  # the writer reviews too: an admin of the team
        team=qs.team, username=writer.username, role=roles.ADMIN, user=roles.OPERATOR
    )
    writer = type(writer).objects.get(pk=writer.pk)  # a fresh user: roles cache the roles
    version = submitted(qs, writer)
    with pytest.raises(services.NotAllowed, match="a second person approves it"):
        services.version_approve(confirm_weak_evidence=True, version=version, reviewer=writer)
    version.refresh_from_db()
    assert version.status == "in_review"
    settings.DECISIONS_ALLOW_SELF_APPROVAL = True
    assert (
        services.version_approve(
            confirm_weak_evidence=True, version=version, reviewer=writer
        ).status
        == "approved"
    )


def test_the_approval_service_refuses_weak_evidence_without_a_confirmation(team):
    writer, checker, qs = team
    version = submitted(qs, writer)
    with pytest.raises(services.WeakEvidence) as refused:
        services.version_approve(version=version, reviewer=checker, note="fine", label="production")
    assert (refused.value.status, refused.value.code) == (422, "weak_evidence")
    assert refused.value.reason == "has no finished batch run over the sample states"
    version.refresh_from_db()
    assert version.status == "in_review" and not qs.labels.exists()
    assert not version.events.filter(kind=ReviewEvent.Kind.APPROVED).exists()
    services.version_approve(
        version=version, reviewer=checker, note="fine", confirm_weak_evidence=True
    )
    assert version.events.get(kind=ReviewEvent.Kind.APPROVED).note == (
        "Approved although this version has no finished batch run over the sample states "
        "(confirmed). fine"
    )


@pytest.mark.parametrize("status", ["draft", "approved", "changes_requested"])
def test_only_a_submitted_version_is_approved_or_sent_back(team, status):
    _, checker, qs = team
    version = factories.draft(qs)
    Version.objects.filter(pk=version.pk).update(status=status)
    version.refresh_from_db()
    with pytest.raises(services.ServiceError, match="not in review"):
        services.version_approve(confirm_weak_evidence=True, version=version, reviewer=checker)
    with pytest.raises(services.ServiceError, match="not in review"):
        services.version_request_changes(version=version, reviewer=checker, note="x")
    version.refresh_from_db()
    assert version.status == status


def test_only_reviewers_approve_and_only_authors_submit(team):
    writer, checker, qs = team
    with pytest.raises(services.NotAllowed):
        services.version_submit(version=factories.draft(qs), author=checker)
    version = submitted(qs, writer)
    other_author = factories.author()
    with pytest.raises(services.NotAllowed):
        services.version_approve(confirm_weak_evidence=True, version=version, reviewer=other_author)
    with pytest.raises(services.NotAllowed):
        services.version_request_changes(version=version, reviewer=other_author, note="x")


# --- labels --------------------------------------------------------------------------------------


def approved(qs, writer, checker, doc=None) -> Version:
    draft = factories.draft(qs) or services.version_draft_from(
        version=qs.versions.order_by("-number").first(), author=writer
    )
    if doc is not None:
        draft = services.version_save(
            version=draft, document=doc, base_revision=draft.revision, author=writer
        )
    services.version_submit(version=draft, author=writer)
    return services.version_approve(confirm_weak_evidence=True, version=draft, reviewer=checker)


def test_label_history_and_rollback(team):
    writer, checker, qs = team
    v1 = approved(qs, writer, checker)
    v2 = approved(qs, writer, checker, factories.document(2))
    services.label_move(question_set=qs, name="production", version=v1, actor=checker)
    services.label_move(question_set=qs, name="production", version=v2, actor=checker)
    services.label_move(
        question_set=qs, name="production", version=v1, actor=checker, note="rollback"
    )
    moves = [
        (m.from_version and m.from_version.number, m.to_version.number, m.note)
        for m in LabelMove.objects.order_by("id")
    ]
    assert moves == [(None, 1, ""), (1, 2, ""), (2, 1, "rollback")]
    assert Label.objects.get(name="production").version == v1


@pytest.mark.parametrize("name", ["", "Production", "with space", "x" * 37, "ünï"])
def test_label_names(team, name):
    writer, checker, qs = team
    v1 = approved(qs, writer, checker)
    with pytest.raises(services.ServiceError, match="1 to 36"):
        services.label_move(question_set=qs, name=name, version=v1, actor=checker)


def test_labels_point_at_approved_versions_and_move_by_reviewers_only(team):
    writer, checker, qs = team
    version = submitted(qs, writer)
    with pytest.raises(services.ServiceError, match="approved versions only"):
        services.label_move(question_set=qs, name="staging", version=version, actor=checker)
    version = services.version_approve(
        confirm_weak_evidence=True, version=version, reviewer=checker
    )
    with pytest.raises(services.NotAllowed):
        services.label_move(question_set=qs, name="staging", version=version, actor=writer)
    assert not Label.objects.exists()
    for name in ("staging", "canary.eu-1", "a"):
        services.label_move(question_set=qs, name=name, version=version, actor=checker)


# --- export --------------------------------------------------------------------------------------


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("status", Version.Status.values)
def test_the_validator_the_schema_and_the_model_agree_on_the_status_an_export_carries(team, status):
    writer, checker, qs = team
    version = services.version_approve(
        version=submitted(qs, writer), reviewer=checker, confirm_weak_evidence=True
    )
    exported = exports.export_document(version)
    assert exported["status"] == spec.EXPORT_STATUS == Version.Status.APPROVED
    assert SCHEMA["properties"]["status"] == {"const": spec.EXPORT_STATUS}
    document = {**exported, "status": status}
    by_spec = check.validate(document, limits=spec.DEFAULT_LIMITS).valid
    by_schema = jsonschema.Draft202012Validator(SCHEMA).is_valid(document)
    assert by_spec == by_schema == (status == Version.Status.APPROVED)


def test_the_export_document_is_the_approved_map_exactly_and_validates(team):
    writer, checker, qs = team
    doc = json.loads((EXAMPLES / "runtime-request.json").read_text())["questions"]
    version = approved(qs, writer, checker, doc)
    export = exports.export_document(version)
    validate_export(export)
    assert export["questions"] == doc
    assert list(export["questions"]["intent"]["criteria"]) == ["explicit", "incidental", "none"]
    assert export["sha256"] == spec.questions_sha256(doc)
    assert (export["approved_by"], export["status"], export["version"]) == (
        "checker",
        "approved",
        1,
    )
    assert check.validate(
        export, limits=spec.DEFAULT_LIMITS
    ).valid  # an export document is also a valid input form


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(question_maps)
def test_export_import_approve_export_keeps_the_hash(team, tmp_path, doc):
    writer, checker, qs = team
    first = approved(qs, writer, checker, doc)
    exported = exports.export_document(first)
    validate_export(exported)
    slug = f"copy-{first.pk}-{Version.objects.count()}"
    code, _, _ = run("import", write(tmp_path, exported), "--set", slug, "--user", "writer")
    assert code == 0
    copy = Version.objects.get(question_set__slug=slug)
    services.version_submit(version=copy, author=writer)
    copy = services.version_approve(confirm_weak_evidence=True, version=copy, reviewer=checker)
    again = exports.export_document(copy)
    assert again["sha256"] == exported["sha256"]
    assert again["questions"] == exported["questions"]


# --- the HTTP export for the runtime -------------------------------------------------------------


@pytest.fixture
def published(team):
    writer, checker, qs = team
    v1 = approved(qs, writer, checker)
    services.label_move(question_set=qs, name="production", version=v1, actor=checker)
    v2 = services.version_draft_from(version=v1, author=writer)
    services.version_save(
        version=v2, document=factories.document(2), base_revision=1, author=writer
    )
    services.version_submit(version=v2, author=writer)  # in review: not exportable
    token, raw = services.api_token_create(name="runtime", user=roles.OPERATOR)
    return v1, v2, token, raw


def api(client, raw=None, **params):
    headers = {"Authorization": f"Bearer {raw}"} if raw else {}
    return client.get(reverse("api-export", args=["routing"]), params, headers=headers)


def test_api_export_by_label_and_version_with_etag_and_link(client, published):
    v1, _, token, raw = published
    response = api(client, raw, label="production")
    assert response.status_code == 200
    body = json.loads(response.content)
    validate_export(body)
    assert body["questions"] == v1.document and body["version"] == 1
    assert response["ETag"] == f'"{hashlib.sha256(response.content).hexdigest()}"'
    assert response["Link"] == '<http://testserver/schemas/question-set-1.json>; rel="describedby"'
    assert api(client, raw, version="1").content == response.content
    token.refresh_from_db()
    assert token.last_used_at is not None
    schema = client.get("/schemas/question-set-1.json")
    assert schema.status_code == 200 and json.loads(b"".join(schema.streaming_content)) == SCHEMA


@pytest.mark.parametrize("header", ['"{sha}"', 'W/"{sha}"', '"other", "{sha}"', "*"])
def test_if_none_match_gives_304(client, published, header):
    _, _, _, raw = published
    etag = hashlib.sha256(api(client, raw, label="production").content).hexdigest()
    response = client.get(
        reverse("api-export", args=["routing"]),
        {"label": "production"},
        headers={"Authorization": f"Bearer {raw}", "If-None-Match": header.format(sha=etag)},
    )
    assert response.status_code == 304
    assert response.content == b""
    assert response["ETag"] == f'"{etag}"'
    assert response["Cache-Control"] == "no-cache"  # the 304 carries what its 200 carries
    assert response["Link"].endswith('/schemas/question-set-1.json>; rel="describedby"')


def test_a_stale_etag_gets_the_document(client, published):
    _, _, _, raw = published
    response = client.get(
        reverse("api-export", args=["routing"]),
        {"label": "production"},
        headers={"Authorization": f"Bearer {raw}", "If-None-Match": '"0"'},
    )
    assert response.status_code == 200
    assert json.loads(response.content)["version"] == 1


def test_the_export_model_is_frozen_at_approval(client, published, settings):
    _, _, _, raw = published
    before = api(client, raw, label="production")
    settings.DECISIONS_MODEL = "jev-2.0"
    after = api(client, raw, label="production")
    assert json.loads(before.content)["model"] == "jev-latest"
    assert (after.content, after["ETag"]) == (before.content, before["ETag"])
    conditional = client.get(
        reverse("api-export", args=["routing"]),
        {"label": "production"},
        headers={"Authorization": f"Bearer {raw}", "If-None-Match": before["ETag"]},
    )
    assert conditional.status_code == 304


def test_any_change_of_the_export_body_changes_its_etag(client, published):
    v1, _, _, raw = published
    before = api(client, raw, label="production")
    ReviewEvent.objects.filter(version=v1, kind="approved").update(
        created_at=timezone.now() - timedelta(days=1)
    )
    after = api(client, raw, label="production")
    assert json.loads(after.content)["approved_at"] != json.loads(before.content)["approved_at"]
    assert after["ETag"] != before["ETag"]
    assert after["ETag"] == f'"{hashlib.sha256(after.content).hexdigest()}"'
    stale = client.get(
        reverse("api-export", args=["routing"]),
        {"label": "production"},
        headers={"Authorization": f"Bearer {raw}", "If-None-Match": before["ETag"]},
    )
    assert stale.status_code == 200 and stale.content == after.content


def test_approval_records_the_model_and_the_migration_fills_old_approvals(team, settings):
    writer, checker, qs = team
    settings.DECISIONS_MODEL = "jev-9"
    version = approved(qs, writer, checker)
    assert Version.objects.get(pk=version.pk).approved_model == "jev-9"
    Version.objects.filter(pk=version.pk).update(approved_model="")
    fill = importlib.import_module("questions.migrations.0006_approved_model").fill_approved_model
    fill(django_apps, None)
    assert Version.objects.get(pk=version.pk).approved_model == "jev-9"


@pytest.mark.parametrize(
    "params",
    [{"label": "staging"}, {"version": "2"}, {"version": "99"}, {"label": "Production"}],
)
def test_unknown_or_unapproved_gives_404_never_a_fallback(client, published, params):
    _, _, _, raw = published
    response = api(client, raw, **params)
    assert response.status_code == 404
    assert "no approved" in json.loads(response.content)["detail"]


def test_unknown_set_and_bad_queries(client, published):
    _, _, _, raw = published
    response = client.get(
        reverse("api-export", args=["nope"]),
        {"label": "production"},
        headers={"Authorization": f"Bearer {raw}"},
    )
    assert response.status_code == 404
    assert api(client, raw).status_code == 400
    assert api(client, raw, label="production", version="1").status_code == 400
    assert api(client, raw, version="one").status_code == 400


def test_no_token_a_bad_one_or_a_revoked_one_gives_401(client, published):
    _, _, token, raw = published
    assert api(client, label="production").status_code == 401
    assert api(client, "dct_not-a-token", label="production").status_code == 401
    response = client.get(
        reverse("api-export", args=["routing"]),
        {"label": "production"},
        headers={"Authorization": f"Basic {raw}"},
    )
    assert response.status_code == 401 and "Bearer" in response["WWW-Authenticate"]
    services.api_token_revoke(token=token, user=roles.OPERATOR)
    assert api(client, raw, label="production").status_code == 401
    # a 401 comes before any 404: nothing is said about what exists
    assert api(client, label="nope").status_code == 401


def test_tokens_are_stored_hashed():
    token, raw = services.api_token_create(name="x", user=roles.OPERATOR)
    stored = APIToken.objects.get(pk=token.pk)
    assert raw not in (stored.token_sha256, stored.prefix, stored.name)
    assert stored.prefix == raw[:10] and len(raw) > 40


def test_the_page_showing_a_new_token_is_never_cached(client):
    client.force_login(factories.reviewer())
    response = client.post(reverse("token-list"), {"name": "ci runtime", **token_form(client)})
    token = APIToken.objects.get(name="ci runtime")
    assert response.status_code == 200 and token.prefix in response.content.decode()
    directives = {d.strip() for d in response["Cache-Control"].split(",")}
    assert {"no-store", "private"} <= directives


# --- the command line ----------------------------------------------------------------------------


def test_cli_approve_refuses_weak_evidence_naming_the_flag_and_records_the_confirmation(team):
    submitted(team[2], team[0])
    approve = ("approve", "--set", "routing", "--version", "1", "--user", "checker")
    code, _, err = run(*approve, "--note", "fine")
    assert code == 1 and "has no finished batch run" in err and "--confirm-weak-evidence" in err
    code, out, _ = run(*approve, "--json")
    assert code == 1 and json.loads(out)["status"] == 422
    assert "--confirm-weak-evidence" in json.loads(out)["detail"]
    version = Version.objects.get(question_set__slug="routing", number=1)
    assert version.status == "in_review"
    code, _, _ = run(*approve, "--note", "fine", "--confirm-weak-evidence")
    assert code == 0
    assert version.events.get(kind=ReviewEvent.Kind.APPROVED).note == (
        "Approved although this version has no finished batch run over the sample states "
        "(confirmed). fine"
    )


def test_the_review_page_refuses_weak_evidence_and_records_the_confirmation(team, client):
    writer, checker, qs = team
    version = submitted(qs, writer)
    client.force_login(checker)
    url = reverse("version-review", args=["routing", 1])
    refused = client.post(url, {"action": "approve", "note": "fine"})
    assert refused.status_code == 422 and "Approve anyway" in refused.content.decode()
    version.refresh_from_db()
    assert version.status == "in_review"
    done = client.post(url, {"action": "approve", "note": "fine", "confirm_weak": "yes"})
    assert done.status_code == 302
    assert version.events.get(kind=ReviewEvent.Kind.APPROVED).note == (
        "Approved although this version has no finished batch run over the sample states "
        "(confirmed). fine"
    )


def test_cli_submit_approve_export_with_the_uis_rules(team, tmp_path):
    assert run("approve", "--set", "routing", "--version", "1", "--user", "checker")[0] == 1
    assert run("submit", "--set", "routing", "--version", "1", "--user", "writer")[0] == 0
    code, _, err = run("approve", "--set", "routing", "--version", "1", "--user", "writer")
    assert code == 1 and "Only reviewers" in err
    factories.reviewer("writer-who-reviews")
    services.member_set(  # the writer reviews too: an admin of the team
        team=services.team_default(), username="writer", role=roles.ADMIN, user=roles.OPERATOR
    )
    code, _, err = run("approve", "--set", "routing", "--version", "1", "--user", "writer")
    assert code == 1 and "a second person approves it" in err
    code, out, _ = run(
        "approve",
        "--set",
        "routing",
        "--version",
        "1",
        "--user",
        "checker",
        "--label",
        "production",
        "--confirm-weak-evidence",
    )
    assert code == 0 and "production points at it" in out
    code, _, err = run("approve", "--set", "routing", "--version", "1", "--user", "checker")
    assert code == 1 and "not in review" in err
    code, out, _ = run("export", "--set", "routing", "--label", "production")
    assert code == 0
    validate_export(json.loads(out))
    target = tmp_path / "out.json"
    assert run("export", "--set", "routing", "--version", "1", "-o", str(target))[0] == 0
    assert json.loads(target.read_text()) == json.loads(out)
    code, out, _ = run("export", "--set", "routing", "--label", "staging", "--json")
    assert code == 1 and json.loads(out)["status"] == 404


def test_cli_token_prints_the_token_alone(client, published):
    code, out, err = run("token", "--name", "ci runtime")
    assert code == 0 and err == ""
    raw = out.strip()
    assert out == raw + "\n" and raw.startswith("dct_")
    assert api(client, raw, label="production").status_code == 200


def test_ask_by_label(team, settings, tmp_path):
    writer, checker, qs = team
    approved(qs, writer, checker)
    code, out, _ = run(
        "ask",
        "--set",
        "routing",
        "--label",
        "production",
        "--state-file",
        write(tmp_path, "1", "s.json"),
        "--backend",
        "recorded",
        "--json",
    )
    assert code == 1 and json.loads(out)["status"] == 404  # no such label yet
    services.label_move(
        question_set=qs, name="production", version=qs.versions.get(number=1), actor=checker
    )
    code, out, _ = run(
        "ask",
        "--set",
        "routing",
        "--label",
        "production",
        "--state-file",
        write(tmp_path, "1", "s.json"),
        "--backend",
        "recorded",
        "--json",
    )
    assert json.loads(out)["status"] == 404 and "Nothing recorded" in json.loads(out)["detail"]


def test_review_events_are_kinds_of_the_record():
    assert {k for k, _ in ReviewEvent.Kind.choices} == {
        "created",
        "edited",
        "kept",
        "submitted",
        "approved",
        "changes_requested",
        "commented",
    }
