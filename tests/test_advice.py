"""Advisory thresholds stored with a version: a noul's threshold and a choice's minimum
confidence, checked against the questions, carried into new drafts and imports, exported as an
`advice` object beside `questions` (the JSON Schema holds it), and never sent to a provider."""

from __future__ import annotations

import json

import jsonschema
import pytest
from django.test import Client

from questions import exports, roles, services
from questions.core import check, spec, thresholds
from questions.dev import standin
from questions.models import Version
from tests import factories
from tests.helpers import ADVICE_DOC as DOC
from tests.helpers import LABELLED, SCHEMA, labelled_run, validate_export
from tests.providers import Provider, run_cli

pytestmark = pytest.mark.django_db

QUESTIONS = spec.parse(DOC, limits=spec.DEFAULT_LIMITS).questions
ADVICE = {"urgent": {"threshold": 0.7}, "desk": {"min_confidence": 0.55}}


@pytest.fixture
def team():
    writer, checker = factories.author("writer"), factories.reviewer("checker")
    qs = factories.question_set("s", owner=writer, doc=DOC)
    return writer, checker, qs


def approve(version, writer, checker) -> Version:
    services.version_submit(version=version, author=writer)
    return services.version_approve(confirm_weak_evidence=True, version=version, reviewer=checker)


# --- the contract --------------------------------------------------------------------------------


def test_good_advice_has_no_errors():
    assert spec.validate_advice(ADVICE, QUESTIONS) == []
    assert spec.validate_advice({}, QUESTIONS) == []
    assert spec.validate_advice({"urgent": {"threshold": 0}}, QUESTIONS) == []


@pytest.mark.parametrize(
    ("advice", "code", "path"),
    [
        ([], "invalid_advice", "advice"),
        ({"ghost": {"threshold": 0.5}}, "advice_unknown_question", "advice.ghost"),
        ({"anger": {"threshold": 0.5}}, "advice_not_for_type", "advice.anger"),
        ({"urgent": {"min_confidence": 0.5}}, "invalid_advice_entry", "advice.urgent"),
        ({"urgent": {"threshold": 0.5, "x": 1}}, "invalid_advice_entry", "advice.urgent"),
        ({"urgent": 0.5}, "invalid_advice_entry", "advice.urgent"),
        ({"urgent": {"threshold": 1.5}}, "advice_out_of_range", "advice.urgent.threshold"),
        ({"desk": {"min_confidence": -0.1}}, "advice_out_of_range", "advice.desk.min_confidence"),
        ({"urgent": {"threshold": True}}, "advice_out_of_range", "advice.urgent.threshold"),
        ({"urgent": {"threshold": "0.5"}}, "advice_out_of_range", "advice.urgent.threshold"),
        ({"urgent": {"threshold": 10**400}}, "advice_out_of_range", "advice.urgent.threshold"),
    ],
)
def test_bad_advice_is_named_where_it_is(advice, code, path):
    errors = spec.validate_advice(advice, QUESTIONS)
    assert [(e.code, e.path) for e in errors] == [(code, path)]


# --- stored with the version ---------------------------------------------------------------------


def test_a_draft_takes_advice_and_a_frozen_version_does_not(team):
    writer, checker, qs = team
    draft = factories.draft(qs)
    services.version_set_advice(version=draft, advice=ADVICE, author=writer)
    assert Version.objects.get(pk=draft.pk).advice == ADVICE
    sha = Version.objects.get(pk=draft.pk).sha256
    assert sha == spec.questions_sha256(DOC)  # advice is not part of the questions' hash
    with pytest.raises(services.InvalidContent, match="no question of this set"):
        services.version_set_advice(
            version=draft, advice={"ghost": {"threshold": 0.1}}, author=writer
        )
    assert Version.objects.get(pk=draft.pk).advice == ADVICE  # nothing written
    with pytest.raises(services.NotAllowed):
        services.version_set_advice(version=draft, advice={}, author=checker)
    approved = approve(draft, writer, checker)
    with pytest.raises(services.NotADraft):
        services.version_set_advice(version=draft, advice={}, author=writer)
    follow = services.version_draft_from(version=approved, author=writer)
    assert follow.advice == ADVICE  # a new draft starts from the version's advice
    services.version_set_advice(version=follow, advice={}, author=writer)
    assert Version.objects.get(pk=follow.pk).advice == {}


def test_keep_as_vn_and_continue_carries_the_advice_into_the_continuing_draft(team):
    writer, _checker, qs = team
    draft = factories.draft(qs)
    services.version_set_advice(version=draft, advice=ADVICE, author=writer)
    follow = services.version_keep(version=draft, author=writer)
    kept = Version.objects.get(pk=draft.pk)
    assert (kept.status, kept.advice) == ("kept", ADVICE)
    assert (follow.parent_id, follow.status, follow.advice) == (kept.pk, "draft", ADVICE)
    assert follow.events.get().note == f"continues version {kept.number}"


def test_advice_that_no_longer_fits_its_questions_stops_a_submission(team):
    writer, _, qs = team
    draft = factories.draft(qs)
    services.version_set_advice(version=draft, advice=ADVICE, author=writer)
    trimmed = {k: v for k, v in DOC.items() if k != "urgent"}
    services.version_save(version=draft, document=trimmed, base_revision=1, author=writer)
    with pytest.raises(services.InvalidContent, match=r"advice.*urgent"):
        services.version_submit(version=draft, author=writer)
    assert Version.objects.get(pk=draft.pk).status == "draft"


# --- exported beside the questions ---------------------------------------------------------------


def test_the_export_carries_advice_beside_questions_and_validates(team):
    writer, checker, qs = team
    draft = factories.draft(qs)
    services.version_set_advice(version=draft, advice=ADVICE, author=writer)
    version = approve(draft, writer, checker)
    export = exports.export_document(version)
    validate_export(export)
    assert export["advice"] == ADVICE and export["questions"] == DOC
    assert list(export)[-2:] == ["questions", "advice"]
    assert check.validate(export, limits=spec.DEFAULT_LIMITS).valid  # an input form too
    # the runtime's fetch carries it too
    _, raw = services.api_token_create(name="runtime", user=checker)
    response = Client().get("/api/sets/s/export.json?version=1", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert json.loads(response.content)["advice"] == ADVICE
    # the CLI's export too
    code, out, _ = run_cli("export", "--set", "s", "--version", "1")
    assert code == 0 and json.loads(out)["advice"] == ADVICE


def test_an_export_without_advice_has_no_advice_key(team):
    writer, checker, qs = team
    export = exports.export_document(approve(factories.draft(qs), writer, checker))
    assert "advice" not in export


def test_the_schema_refuses_bad_advice():
    validator = jsonschema.Draft202012Validator(SCHEMA)
    base = {
        "format": spec.EXPORT_FORMAT,
        "question_set": "s",
        "version": 1,
        "status": "approved",
        "sha256": "0" * 64,
        "model": "jev-latest",
        "approved_by": "checker",
        "approved_at": "2026-01-01T00:00:00+00:00",
        "questions": DOC,
    }
    assert validator.is_valid({**base, "advice": ADVICE})
    assert not validator.is_valid({**base, "advice": {"urgent": {"threshold": 2}}})
    assert not validator.is_valid({**base, "advice": {"urgent": {"cutoff": 0.5}}})
    assert not validator.is_valid({**base, "advice": []})


def test_an_imported_export_keeps_its_advice_and_bad_advice_imports_nothing(team):
    writer, checker, qs = team
    draft = factories.draft(qs)
    services.version_set_advice(version=draft, advice=ADVICE, author=writer)
    export = exports.export_document(approve(draft, writer, checker))
    imported = services.version_import(slug="other", value=export, author=writer)
    assert imported.advice == ADVICE and imported.document == DOC
    bad = {**export, "advice": {"desk": {"min_confidence": 7}}}
    result = check.validate(bad, limits=spec.DEFAULT_LIMITS)
    assert [e.path for e in result.errors] == ["advice.desk.min_confidence"]
    with pytest.raises(services.InvalidContent):
        services.version_import(slug="third", value=bad, author=writer)
    assert not Version.objects.filter(question_set__slug="third").exists()


# --- never sent to a provider --------------------------------------------------------------------


def test_advice_never_reaches_a_provider(team, settings):
    writer, _, qs = team
    draft = factories.draft(qs)
    services.version_set_advice(version=draft, advice=ADVICE, author=writer)
    provider = Provider(default=lambda body: standin.respond(body)[1])
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "key-1234", provider.url
    try:
        outcome = services.decision_ask(
            backend="typesafe",
            document=Version.objects.get(pk=draft.pk).document,
            state={"t": 1},
            user=roles.OPERATOR,
            version=draft,
        )
    finally:
        provider.stop()
    assert outcome.status == 200
    raw = provider.requests[0]["raw"]
    assert b"advice" not in raw and b"min_confidence" not in raw and b"0.55" not in raw


# --- the designer: curves over a labelled run ----------------------------------------------------


def test_the_curve_counts_precision_recall_and_coverage():
    from questions.core import metrics

    cases = [
        metrics.Case(n, "urgent", "noul", {"noul": p}, urgent) for n, urgent, p, *_ in LABELLED
    ]
    at = {p.threshold: p for p in thresholds.threshold_curve("noul", cases)}
    assert len(at) == 21
    # t = 0.5: a, b, c read true; a and b are; both true ones found
    assert (at[0.5].precision, at[0.5].recall, at[0.5].coverage) == (2 / 3, 1.0, 0.75)
    # t = 0.7: only a; half the true ones
    assert (at[0.7].precision, at[0.7].recall, at[0.7].coverage) == (1.0, 0.5, 0.25)
    assert at[0.95].precision is None and at[0.95].coverage == 0
    desks = [
        metrics.Case(n, "desk", "choice", {"choice": c, "confidence": k}, d)
        for n, _, _, d, c, k in LABELLED
    ]
    point = thresholds.curve_point("choice", desks, 0.35)  # a, b, c kept; a and b right
    assert (point.precision, point.recall, point.coverage, point.kept) == (2 / 3, 0.5, 0.75, 3)
    assert thresholds.curve_point("choice", [], 0.5).recall is None


def test_the_designer_draws_the_curves_marks_the_advice_and_saves_it(team):
    writer, checker, qs = team
    draft = factories.draft(qs)
    run = labelled_run(qs, draft, writer)
    client = Client()
    client.force_login(writer)
    url = f"/sets/s/v{draft.number}/advice/"
    page = client.get(url).content.decode()
    assert page.count('class="chart threshold-curve"') == 2  # the noul and the choice
    assert f"over run {run.pk}" in page and "4 labelled answers" in page
    assert 'class="chosen"' not in page  # no advice yet: no point marked
    response = client.post(url, {"advice-0": "0.7", "advice-1": "0.35"})
    assert response.status_code == 302
    assert Version.objects.get(pk=draft.pk).advice == {
        "urgent": {"threshold": 0.7},
        "desk": {"min_confidence": 0.35},
    }
    page = client.get(url).content.decode()
    assert page.count('class="chosen"') == 2
    assert "At 0.7: precision 1.00, recall 0.50, coverage 0.25 (1 read true)" in page
    assert "At 0.35: precision 0.67, recall 0.50, coverage 0.75 (3 kept)" in page
    bad = client.post(url, {"advice-0": "1.5"})
    assert bad.status_code == 422 and "must be a number in 0..1" in bad.content.decode()
    bad = client.post(url, {"advice-0": "high"})
    assert bad.status_code == 422 and "not a number" in bad.content.decode()
    assert Version.objects.get(pk=draft.pk).advice["urgent"] == {"threshold": 0.7}
    # a reviewer reads but does not edit; the review page shows the curves once submitted
    reviewer = Client()
    reviewer.force_login(checker)
    assert reviewer.post(url, {"advice-0": "0.2"}).status_code == 403
    services.version_submit(version=draft, author=writer)
    review = reviewer.get(f"/sets/s/v{draft.number}/review/").content.decode()
    assert "Advisory thresholds" in review and review.count('class="chosen"') == 2
    frozen = client.get(url).content.decode()
    assert "its advice is frozen with it" in frozen and "Save advice" not in frozen
