"""The export API's cost: a read does not write on every request (the token's last use is noted
at most once a minute), the body is made once per version (no document read after that), and
a client that accepts gzip gets it gzipped with the same ETag meaning. What an export pins: the
concrete model that answered the approval's evidence (`answered_by`), the review page's warnings
when that is not the model production asks, and the author's order kept byte for byte."""

import gzip
import hashlib
import json
from datetime import timedelta

import jsonschema
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from questions import exports, roles, services
from questions.core import check, spec
from questions.dev import standin
from questions.models import APIToken
from tests import factories
from tests.helpers import make_world
from tests.providers import KEY, Provider, run_cli

pytestmark = [pytest.mark.django_db, pytest.mark.both_databases]


@pytest.fixture
def token():
    make_world()
    _, raw = services.api_token_create(name="runtime", user=roles.OPERATOR)
    return raw


def fetch(client, token, **headers):
    return client.get(
        reverse("api-export", args=["s"]),
        {"label": "production"},
        headers={"Authorization": f"Bearer {token}", **headers},
    )


def test_the_last_use_is_written_at_most_once_a_minute(client, token):
    with CaptureQueriesContext(connection) as first:
        assert fetch(client, token).status_code == 200
    with CaptureQueriesContext(connection) as second:
        assert fetch(client, token).status_code == 200
    writes = [q["sql"] for q in first.captured_queries if q["sql"].startswith("UPDATE")]
    assert len(writes) == 1
    assert not [q for q in second.captured_queries if not q["sql"].startswith("SELECT")]
    used = APIToken.objects.get().last_used_at
    APIToken.objects.update(last_used_at=used - timedelta(seconds=61))
    fetch(client, token)
    assert APIToken.objects.get().last_used_at >= timezone.now() - timedelta(seconds=5)


def test_a_served_export_is_not_made_again(client, token, django_assert_num_queries):
    etag = fetch(client, token)["ETag"]
    for headers in ({}, {"If-None-Match": etag}):
        # the token; the version with its approval, without its document; no write
        with django_assert_num_queries(2) as queries:
            response = fetch(client, token, **headers)
        assert response.status_code in (200, 304)
        assert not any("document_text" in q["sql"] for q in queries.captured_queries)


def test_gzip_when_asked_with_the_same_etag_meaning(client, token):
    plain = fetch(client, token)
    zipped = fetch(client, token, **{"Accept-Encoding": "gzip, deflate"})
    assert "Content-Encoding" not in plain
    assert zipped["Content-Encoding"] == "gzip"
    assert gzip.decompress(zipped.content) == plain.content
    assert len(zipped.content) < len(plain.content)
    digest = hashlib.sha256(plain.content).hexdigest()
    assert plain["ETag"] == f'"{digest}"'
    assert zipped["ETag"] == f'W/"{digest}"'
    assert "Accept-Encoding" in zipped["Vary"] and "Accept-Encoding" in plain["Vary"]
    for tag in (plain["ETag"], zipped["ETag"]):
        for encoding in ("gzip", "identity"):
            again = fetch(client, token, **{"If-None-Match": tag, "Accept-Encoding": encoding})
            assert (again.status_code, again.content) == (304, b"")


@pytest.mark.django_db(transaction=True)  # served by a real server on its own thread
def test_a_304_names_no_html_and_repeats_the_200s_validators(live_server):
    """Over HTTP, as the runtime fetches it: the 304 carries no `Content-Type` (it has no body,
    and a bare response's `text/html` would misname the JSON it stands for), and the same
    validators and caching headers as the 200 (RFC 9110, 15.4.5)."""
    import httpx

    make_world()
    _, raw = services.api_token_create(name="runtime", user=roles.OPERATOR)
    url = f"{live_server.url}{reverse('api-export', args=['s'])}?label=production"
    for encoding in ("gzip", "identity"):
        headers = {"Authorization": f"Bearer {raw}", "Accept-Encoding": encoding}
        first = httpx.get(url, headers=headers)
        again = httpx.get(url, headers={**headers, "If-None-Match": first.headers["ETag"]})
        assert first.status_code == 200
        assert first.headers["Content-Type"] == "application/json; charset=utf-8"
        assert (again.status_code, again.content) == (304, b"")
        assert "Content-Type" not in again.headers
        for name in ("ETag", "Vary", "Cache-Control", "Link"):
            assert again.headers[name] == first.headers[name], name


# --- pin what was approved, and every byte the author wrote -------------------------------------

#: the author's order: question keys, noul cases, entry fields and options not in the usual order
AUTHOR_ORDER = {
    "urgent": {
        "criteria": {"false": "it can wait", "true": {"examples": ["down"], "what": "blocked"}},
        "type": "noul",
        "instructions": "Is it urgent?",
    },
    "desk": {
        "instructions": "Which desk?",
        "criteria": {"tech": {"examples": ["crash"], "what": "bugs"}, "billing": "money"},
        "type": "choice",
    },
}
SCHEMA = json.loads(exports.EXPORT_SCHEMA_PATH.read_text())


@pytest.fixture
def answering(settings):
    """A loopback provider answering as the stand-in would, under the model names queued in
    `models` (one per call, the last one from then on)."""
    models = ["jev-1.13.0"]

    def reply(body):
        answer = standin.respond(body)[1]
        answer["model"] = models.pop(0) if len(models) > 1 else models[0]
        return answer

    provider = Provider(default=reply)
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = KEY, provider.url
    provider.models = models
    yield provider
    provider.stop()


def approved_on_a_run(states: int = 2, *, run: bool = True, slug: str = "pinned"):
    writer, checker = factories.author(f"writer-{slug}"), factories.reviewer(f"checker-{slug}")
    qs = factories.question_set(slug, owner=writer, doc=AUTHOR_ORDER)
    for i in range(states):
        services.sample_state_create(question_set=qs, name=f"s{i}", state={"n": i}, author=writer)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    if run:
        batch = services.batch_create(
            version=version, backend="typesafe", user=writer, enqueue=False
        )
        services.batch_execute(batch.pk)
    return services.version_approve(
        version=version, reviewer=checker, label="production", confirm_weak_evidence=True
    )


def exported(client, raw_token: str, slug: str = "pinned"):
    return client.get(
        reverse("api-export", args=[slug]),
        {"label": "production"},
        headers={"Authorization": f"Bearer {raw_token}"},
    )


def test_the_export_names_the_model_that_answered_the_evidence(client, answering):
    version = approved_on_a_run()
    assert version.approved_model == "jev-latest"
    assert version.approved_model_answered == "jev-1.13.0"
    _, raw = services.api_token_create(name="runtime", user=roles.OPERATOR)
    response = exported(client, raw)
    body = response.content
    document = json.loads(body)
    assert (document["model"], document["answered_by"]) == ("jev-latest", "jev-1.13.0")
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    assert response["ETag"] == f'"{hashlib.sha256(body).hexdigest()}"'  # over this very body
    # the export keeps the author's order, byte for byte in its questions
    assert spec.wire_json(spec.loads(body)["questions"]) == spec.wire_json(AUTHOR_ORDER)
    # the command line writes the same document
    code, out, _ = run_cli("export", "--set", "pinned", "--label", "production")
    assert code == 0 and out.encode() == body
    # and the console reads its own export back without a word about the new field
    result = check.validate(document, limits=spec.DEFAULT_LIMITS)
    assert result.valid and not [w for w in result.warnings if w.code == "unknown_field"]


def test_several_models_answering_are_all_named_and_no_run_names_none(client, answering):
    answering.models[:] = ["jev-1.12.0", "jev-1.13.0"]
    version = approved_on_a_run(2)
    assert version.approved_model_answered == ["jev-1.12.0", "jev-1.13.0"]
    document = exports.export_document(version)
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    bare = approved_on_a_run(run=False, slug="bare")
    document = exports.export_document(bare)
    assert document["answered_by"] is None and bare.approved_evidence_run is None
    jsonschema.Draft202012Validator(SCHEMA).validate(document)


def test_answered_by_is_frozen_at_approval(answering):
    version = approved_on_a_run()
    answering.models[:] = ["jev-1.14.0"]
    later = services.batch_create(
        version=version, backend="typesafe", user=version.author, enqueue=False
    )
    services.batch_execute(later.pk)  # a later run answered by another model changes nothing
    version.refresh_from_db()
    assert exports.export_document(version)["answered_by"] == "jev-1.13.0"


def in_review_on_a_run(model: str | None = None):
    writer = factories.author("writer")
    qs = factories.question_set("pinned", owner=writer, doc=AUTHOR_ORDER)
    services.sample_state_create(question_set=qs, name="s0", state={"n": 0}, author=writer)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    batch = services.batch_create(
        version=version, backend="typesafe", user=writer, enqueue=False, model=model
    )
    services.batch_execute(batch.pk)
    return version


def review_page(version) -> str:
    client = Client()
    client.force_login(factories.reviewer())
    response = client.get(reverse("version-review", args=[version.question_set.slug, 1]))
    assert response.status_code == 200
    return response.content.decode()


def pin_of(html: str) -> str:
    return html.split('id="pin"', 1)[1].split("</div>", 1)[0]


def test_the_review_shows_an_alias_resolved_without_a_warning(answering):
    pin = pin_of(review_page(in_review_on_a_run()))
    assert "jev-latest answered by jev-1.13.0" in pin
    assert "model-warning" not in pin


def test_the_review_warns_when_the_stand_in_answered(answering):
    answering.models[:] = [standin.MODEL]
    pin = pin_of(review_page(in_review_on_a_run()))
    assert "model-warning" in pin and "the local stand-in" in pin


def test_the_review_warns_when_the_run_asked_another_model(answering):
    pin = pin_of(review_page(in_review_on_a_run(model="jev-1.12.0")))
    assert "asked jev-1.12.0; production asks jev-latest" in pin


def test_the_review_warns_when_the_alias_has_moved_on_since_the_evidence(answering):
    version = in_review_on_a_run()
    answering.models[:] = ["jev-1.14.0"]
    outcome = services.decision_ask(
        backend="typesafe", document=AUTHOR_ORDER, state={"n": 9}, user=version.author
    )
    assert outcome.error is None
    pin = pin_of(review_page(version))
    assert "was answered by jev-1.14.0, not by jev-1.13.0" in pin
    assert "jev-latest now resolves elsewhere" in pin
    # approved, the page says what was pinned, and still warns
    services.version_approve(
        version=version, reviewer=factories.reviewer("checker"), confirm_weak_evidence=True
    )
    pin = pin_of(review_page(version))
    assert "pinned at approval on" in pin and "jev-latest answered by jev-1.13.0" in pin
    assert "now resolves elsewhere" in pin


STRUCTURED = {
    "desk": {
        "criteria": {
            "tech": {"owns": ["the app", "the API"], "what": "bugs"},
            "billing": ["money owed", {"not": "refunds"}],
        },
        "type": "choice",
        "instructions": "Which desk?",
    },
    "urgent": {"type": "noul", "criteria": {"false": ["it can wait"], "true": "blocked"}},
}


def test_a_structured_description_is_exported_as_written_and_fits_the_schema(answering):
    writer, checker = factories.author("writer"), factories.reviewer("checker")
    qs = factories.question_set("structured", owner=writer, doc=STRUCTURED)
    version = services.version_submit(version=factories.draft(qs), author=writer)
    version = services.version_approve(
        version=version, reviewer=checker, confirm_weak_evidence=True
    )
    text = exports.export_text(exports.export_document(version))
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(text))
    assert spec.wire_json(spec.loads(text)["questions"]) == spec.wire_json(STRUCTURED)


def test_the_command_line_approval_says_what_it_pinned(answering):
    in_review_on_a_run()
    factories.reviewer("checker")
    code, out, _ = run_cli(
        "approve", "--set", "pinned", "--version", "1", "--user", "checker", "--json"
    )
    assert code == 0
    shown = json.loads(out)
    assert (shown["model"], shown["answered_by"]) == ("jev-latest", "jev-1.13.0")
