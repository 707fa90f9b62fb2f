"""Bad input gets a clear refusal naming what is wrong, never a 500, and changes nothing
(issue 9; review F7, F15, F16)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from questions import services
from questions.core import check, spec
from questions.models import (
    APIToken,
    BatchRun,
    QuestionSet,
    ReviewEvent,
    SampleState,
    Version,
)
from tests import factories
from tests.helpers import AU, R, V, client_for, token_form

pytestmark = pytest.mark.django_db

OVERFLOW = "1e400"
ESCAPED_SURROGATE = '"\\ud800"'
#: A raw lone surrogate as a browser-like client may send it: the bytes UTF-8 would give it.
RAW_SURROGATE_BODY = "%ED%A0%80"


def snapshot():
    """Everything a refused request could have changed."""
    return (
        list(QuestionSet.objects.order_by("pk").values_list("slug", "name", "description")),
        list(Version.objects.order_by("pk").values_list("document_text", "revision", "status")),
        list(SampleState.objects.order_by("pk").values_list("name", "state_text", "tags")),
        ReviewEvent.objects.count(),
        APIToken.objects.count(),
        BatchRun.objects.count(),
    )


def raw_post(client: Client, url: str, body: str):
    return client.post(url, body, content_type="application/x-www-form-urlencoded")


# --- spec.loads --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("1e400", "1e400 is too large"),
        ("[-1e400]", "-1e400 is too large"),
        ('{"a": 1' + "0" * 400 + ".5}", "too large"),
        ('"\\ud800"', "\\ud800 alone"),
        ('{"\\udfff": 1}', "\\udfff alone"),
        ('["ok", {"k": "x\\udc00y"}]', "\\udc00 alone"),
        ('"\ud800"', "lone surrogate (U+D800)"),
        (b'"\xed\xa0\x80"', "not valid Unicode"),
    ],
)
def test_loads_refuses_overflow_and_lone_surrogates(text, words):
    with pytest.raises(spec.JSONTextError, match=None) as caught:
        spec.loads(text)
    assert words in str(caught.value)


def test_loads_keeps_a_surrogate_pair_and_big_finite_numbers():
    assert spec.loads('"\\ud83d\\ude00"') == "😀"
    assert spec.loads("1e308") == 1e308
    assert spec.loads("[" * 50 + '"\\ud83d\\ude00"' + "]" * 50)


def test_validate_reports_values_json_text_cannot_hold_instead_of_raising():
    doc = {"x": {"type": "choice", "instructions": {"k": "\ud800"}, "criteria": {"a": "", "b": ""}}}
    result = check.validate(doc, limits=spec.DEFAULT_LIMITS)
    assert not result.valid and result.errors[0].code == "invalid_value"
    assert spec.validate_state(float("inf"), limits=spec.DEFAULT_LIMITS)[0].code == "invalid_state"
    assert spec.validate_state(["\udfff"], limits=spec.DEFAULT_LIMITS)[0].code == "invalid_state"


def test_a_state_with_a_repeated_key_is_refused_like_a_document():
    errors = spec.validate_state(
        spec.loads('{"b": [{"a": 1, "a": 2}]}'), limits=spec.DEFAULT_LIMITS
    )
    assert [(e.code, e.path) for e in errors] == [("duplicate_state_key", "state.b.0.a")]
    assert "key `a` is repeated" in errors[0].message
    body = check.validate(
        spec.loads('{"state": {"a": 1, "a": 2}, "questions": {}}'), limits=spec.DEFAULT_LIMITS
    )
    assert "duplicate_state_key" in {e.code for e in body.errors}


# --- states ------------------------------------------------------------------------------------


@pytest.mark.parametrize("state", [OVERFLOW, ESCAPED_SURROGATE, '{"a":1,"a":2}'])
def test_a_bad_state_is_refused_on_new_save_and_check(world, state):
    author = client_for(AU)
    before = snapshot()
    new = author.post("/sets/s/states/new/", {"name": "n2", "state": state})
    save = author.post(
        f"/sets/s/states/{world['state']}/", {"name": "n", "state": state, "base_revision": "1"}
    )
    check = client_for(V).post("/sets/s/states/check/", {"state": state})
    assert (new.status_code, save.status_code, check.status_code) == (422, 422, 200)
    for response in (new, save, check):
        text = response.content.decode()
        assert any(w in text for w in ("too large", "alone", "is repeated")), text[-2000:]
    assert snapshot() == before


def test_a_raw_lone_surrogate_in_a_post_never_arrives_as_one(world):
    """Sent raw, a lone surrogate is not UTF-8; Django reads its bytes as U+FFFD, so what is
    stored, if anything, is text every store holds."""
    author = client_for(AU)
    check = raw_post(author, "/sets/s/states/check/", f"state=%22{RAW_SURROGATE_BODY}%22")
    assert check.status_code == 200
    new = raw_post(author, "/sets/s/states/new/", f"name=n2&state=%22{RAW_SURROGATE_BODY}%22")
    assert new.status_code == 302
    assert SampleState.objects.get(name="n2").state == "\ufffd" * 3
    doc = raw_post(client_for(V), "/check/", f"document=%7B%22{RAW_SURROGATE_BODY}%22%3A1%7D")
    assert doc.status_code == 200


def test_states_import_refuses_a_repeated_key(tmp_path, capsys):
    from django.core.management import call_command

    factories.question_set("imp", owner=factories.author("importer"))
    path = tmp_path / "states.json"
    path.write_text('[{"name": "x", "state": {"a": 1, "a": 2}}]')
    with pytest.raises(SystemExit) as exited:
        call_command("questions", "states-import", str(path), "--set", "imp", "--user", "importer")
    assert exited.value.code not in (0, None)
    assert "key `a` is repeated" in capsys.readouterr().err
    assert not SampleState.objects.filter(name="x").exists()


# --- documents and the editor -----------------------------------------------------------------


@pytest.mark.parametrize("bad", [OVERFLOW, ESCAPED_SURROGATE])
def test_a_pasted_document_with_bad_values_is_refused(world, bad):
    doc = f'{{"x": {{"type": "choice", "instructions": {bad}, "criteria": {{"a": "", "b": ""}}}}}}'
    author = client_for(AU)
    before = snapshot()
    check = client_for(V).post("/check/", {"document": doc})
    json_check = author.post("/sets/s/v3/json/", {"document": doc, "action": "check"})
    json_save = author.post("/sets/s/v3/json/", {"document": doc, "base_revision": "1"})
    assert (check.status_code, json_check.status_code, json_save.status_code) == (200, 200, 422)
    for response in (check, json_check, json_save):
        assert "This is not JSON" in response.content.decode()
    assert snapshot() == before


def editor_post(**fields):
    data = {
        "q": "k",
        "card": "k",
        "q-k-id": "x",
        "q-k-type": "choice",
        "q-k-instructions_mode": "json",
        "q-k-instructions": "{}",
        "q-k-r": "r1",
        "q-k-r-r1-name": "a",
        "base_revision": "1",
        "preview_backend": "recorded",
        "preview_state_json": "1",
    }
    data.update(fields)
    return data


@pytest.mark.parametrize("bad", [OVERFLOW, ESCAPED_SURROGATE])
def test_structured_instructions_with_bad_values_are_refused(world, bad):
    author = client_for(AU)
    before = snapshot()
    data = editor_post(**{"q-k-instructions": f'{{"k": {bad}}}'})
    save = author.post("/sets/s/v3/save/", data)
    validate = author.post("/sets/s/v3/validate/", data)
    preview = author.post("/sets/s/v3/preview/", data)
    assert save.status_code == 422
    assert validate.status_code == 200 and preview.status_code == 200
    for response in (save, validate):
        assert "structured instructions are not JSON" in response.content.decode()
    assert "Nothing was sent" in preview.content.decode()
    assert snapshot() == before


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("q-k-r-r1-orig", "not json"),
        ("q-k-r-r1-orig", "[" * 100_000 + "]" * 100_000),
        ("q-k-instructions_orig", "{bad"),
        ("q-k-instructions_orig", "1e400"),
    ],
)
@pytest.mark.parametrize("endpoint", ["save", "validate", "card", "preview"])
def test_a_tampered_hidden_editor_field_is_a_400_naming_it(world, field, value, endpoint):
    before = snapshot()
    response = client_for(AU).post(f"/sets/s/v3/{endpoint}/", editor_post(**{field: value}))
    assert response.status_code == 400
    assert field in response.content.decode()
    assert snapshot() == before


# --- names, ids and numbers in forms and queries ---------------------------------------------


def test_unknown_backends_and_non_numeric_ids_are_refused(world):
    author = client_for(AU)
    reviewer = client_for(R)
    before = snapshot()
    preview = author.post("/sets/s/v3/preview/", editor_post(preview_backend="zzz"))
    assert preview.status_code == 200 and "Unknown backend" in preview.content.decode()
    state = author.post("/sets/s/v3/preview/", editor_post(preview_state="abc"))
    assert "preview_state" in state.content.decode()
    huge = author.post("/sets/s/v3/preview/", editor_post(preview_state="9" * 5000))
    assert huge.status_code == 200 and "preview_state" in huge.content.decode()
    compare = client_for(V).get(f"/sets/s/compare/?col=v1:zzz&state={world['state']}")
    assert compare.status_code == 200 and "v1:zzz" in compare.content.decode()
    run = author.post("/sets/s/v1/runs/", {"backend": "zzz"}, follow=True)
    assert "Unknown backend" in run.content.decode()
    assert reviewer.post("/tokens/", {"revoke": "abc"}).status_code == 404
    assert reviewer.post("/tokens/", {"revoke": "١"}).status_code == 404
    assert snapshot() == before


def test_a_run_tag_over_64_characters_is_refused(world):
    before = snapshot()
    response = client_for(AU).post(
        "/sets/s/v1/runs/", {"backend": "recorded", "tag": "t" * 65}, follow=True
    )
    assert "tag has 65 characters; at most 64" in response.content.decode()
    assert snapshot() == before


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"slug": "s" * 65, "name": "ok"}, "slug"),
        ({"slug": "ok", "name": "n" * 201}, "name"),
        ({"slug": "ok", "name": "a\x00b"}, "name holds a NUL"),
        ({"slug": "ok", "name": "ok", "description": "a\x00b"}, "description holds a NUL"),
    ],
)
def test_the_new_set_form_refuses_what_the_columns_cannot_hold(world, values, words):
    before = snapshot()
    response = client_for(AU).post("/sets/new/", values)
    assert response.status_code == 422 and words in response.content.decode()
    assert snapshot() == before


def api_get(query: str):
    _, raw = services.api_token_create(name="rt", user=factories.reviewer())
    return Client().get(f"/api/sets/s/export.json?{query}", HTTP_AUTHORIZATION=f"Bearer {raw}")


@pytest.mark.parametrize("version", ["²", "١", "𝟙", "1" * 30, "9" * 5000])
def test_the_export_api_takes_ascii_digits_only(world, version):
    response = api_get(f"version={version}")
    assert response.status_code == 400 and "version" in response.json()["detail"]


def test_the_export_api_refuses_a_nul_in_a_label(world):
    response = api_get("label=production%00")
    assert response.status_code == 400 and "label" in response.json()["detail"]
    assert api_get("version=1").status_code == 200


# --- NUL characters ----------------------------------------------------------------------------


def test_a_search_with_a_nul_finds_nothing(world):
    response = client_for(V).get("/?q=%00")
    assert response.status_code == 200
    assert "/sets/s/" not in response.content.decode()


@pytest.mark.parametrize(
    ("url", "data", "words"),
    [
        ("/sets/s/states/new/", {"name": "a\x00", "state": "1"}, "name holds a NUL"),
        ("/sets/s/states/new/", {"name": "ok", "state": "1", "tags": "a\x00"}, "tag"),
        ("/sets/s/states/new/", {"name": "ok", "state": "1", "expected-q0": "o\x00"}, "q0"),
        ("/sets/s/v2/review/", {"action": "comment", "note": "a\x00"}, "comment holds a NUL"),
    ],
)
def test_a_nul_in_a_text_field_is_refused_naming_it(world, url, data, words):
    before = snapshot()
    response = client_for(AU).post(url, data)
    assert response.status_code == 422 and words in response.content.decode()
    assert snapshot() == before


def test_a_nul_in_reviewer_fields_is_refused(world):
    reviewer = client_for(R)
    before = snapshot()
    token = reviewer.post("/tokens/", {"name": "a\x00", **token_form(reviewer)})
    assert token.status_code == 422 and "name holds a NUL" in token.content.decode()
    label = reviewer.post(
        "/sets/s/labels/", {"name": "production\x00", "version": "1"}, follow=True
    )
    assert "label name" in label.content.decode()
    changes = reviewer.post("/sets/s/v2/review/", {"action": "request_changes", "note": "a\x00"})
    assert changes.status_code == 422 and "note holds a NUL" in changes.content.decode()
    assert snapshot() == before


def test_the_database_under_test(world):
    """Which store ran these (the suite runs on SQLite and on PostgreSQL)."""
    assert connection.vendor in ("sqlite", "postgresql")


# --- digits: read through `whole_number` only (ASCII, bounded) ---------------------------------

NOT_ASCII_DIGITS = ["²", "١", "５", "𝟙"]


@pytest.mark.parametrize("digits", NOT_ASCII_DIGITS)
@pytest.mark.parametrize("field", ["try_against", "try_against_number"])
@pytest.mark.parametrize("endpoint", ["try/plan", "try"])
def test_a_try_against_a_version_named_in_other_digits_is_refused(world, digits, field, endpoint):
    before = snapshot()
    value = f"v{digits}" if field == "try_against" else digits
    response = client_for(AU).post(
        f"/sets/s/v3/{endpoint}/", {field: value, "try_backend": "recorded"}
    )
    assert response.status_code == 200  # the editor's try area says what is wrong
    assert "has no version" in response.content.decode()
    assert snapshot() == before


@pytest.fixture
def scored(world):
    """The world's set, its draft holding a score question `level`."""
    version = Version.objects.get(question_set__slug="s", number=3)
    writer = version.question_set.owner
    document = {"level": {"type": "score", "criteria": ["low", "mid", "high"]}}
    services.version_save(
        version=version, document=document, base_revision=version.revision, author=writer
    )
    return version


@pytest.mark.parametrize("digits", NOT_ASCII_DIGITS)
@pytest.mark.parametrize("path", ["new", "{state}"])
def test_a_scores_expected_answer_in_other_digits_is_refused(world, scored, digits, path):
    before = snapshot()
    url = f"/sets/s/states/{path.format(**world)}/"
    data = {"name": "n2", "state": "1", "base_revision": "1", "expected-level": digits}
    response = client_for(AU).post(url, data)
    assert response.status_code == 422 and "level" in response.content.decode()
    assert snapshot() == before


def test_a_scores_expected_answer_in_ascii_digits_is_kept(world, scored):
    response = client_for(AU).post(
        "/sets/s/states/new/", {"name": "n2", "state": "1", "expected-level": "2"}
    )
    assert response.status_code == 302
    assert SampleState.objects.get(name="n2").expected == {"level": 2}


@pytest.mark.parametrize("digits", ["١", "５"])
def test_numbers_in_other_digits_are_not_read_as_numbers(world, digits):
    """`int()` reads "١" as 1; a request's numbers are ASCII digits or nothing."""
    before = snapshot()
    author = client_for(AU)
    diff = client_for(V).get(f"/sets/s/diff/?a={digits}")
    assert diff.status_code == 404 and "has no version" in diff.content.decode()
    run = author.post(
        "/sets/s/v1/runs/", {"backend": "recorded", "concurrency": digits}, follow=True
    )
    assert "Concurrency is a whole number" in run.content.decode()
    assert snapshot() == before


@pytest.mark.parametrize("role", [AU, R])
def test_a_nul_in_the_drift_label_is_refused_naming_it(world, role):
    before = snapshot()
    response = client_for(role).post(
        "/sets/s/drift/start/", {"label": "production\x00", "model": "m-new"}
    )
    assert response.status_code == 422 and "label holds a NUL" in response.content.decode()
    assert snapshot() == before


def test_a_nul_in_the_tokens_pages_set_is_refused_naming_it(world):
    reviewer = client_for(R)
    response = reviewer.get("/tokens/?set=s%00")
    assert response.status_code == 400 and "set holds a NUL" in response.content.decode()
    assert reviewer.get("/tokens/?set=s").status_code == 200
