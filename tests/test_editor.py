"""The version editor through its real pages: the fields a browser would send, as-you-type
validation partials, saving, conflicts, the JSON view and the query count."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings

from questions import services
from questions.core import spec
from questions.dev import standin
from questions.models import Decision, Version
from tests import factories
from tests.helpers import as_post, draft_with, editor_url, fields_of, opened
from tests.strategies import question_maps

pytestmark = pytest.mark.django_db


@pytest.fixture
def author_client(client):
    user = factories.author("writer")
    client.force_login(user)
    client.user = user
    return client


EVERY_SHAPE = {
    "intent": {
        "type": "choice",
        "instructions": "Line one\nline two",
        "criteria": {
            "explicit": {"what": "asks for a movement", "examples": ["can you wave", " spaced "]},
            "incidental": {"what": "mentions one"},
            "empty_obj": {},
            "with_empty": {"what": "x", "not_for": "", "examples": []},
            "none": None,
            "text": "",
        },
    },
    "start": {
        "type": "noul",
        "instructions": None,
        "criteria": {"true": {"examples": ["wave please"]}, "false": None},
    },
    "absent": {"type": "noul", "instructions": "It waves."},
    "nullc": {"type": "noul", "instructions": "It waves.", "criteria": None},
    "emptyc": {"type": "noul", "instructions": "It waves.", "criteria": {}},
    "onlytrue": {"type": "noul", "criteria": {"true": "yes"}},
    "energy": {
        "type": "score",
        "instructions": {"read": "`state.body`", "n": [1, 2.5]},
        "criteria": ["still", {"what": "calm"}, None, "\nplayful"],
    },
    "list_instr": {"type": "noul", "instructions": ["a", {"b": None}]},
}


def test_an_untouched_save_gives_back_the_same_document(author_client):
    version = draft_with(author_client, EVERY_SHAPE)
    page = author_client.get(editor_url(version))
    assert page.status_code == 200
    response = author_client.post(
        editor_url(version, "version-save"), as_post(fields_of(page.content.decode()))
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    version.refresh_from_db()
    assert version.document == EVERY_SHAPE
    assert version.revision == 2  # untouched: no new revision
    assert version.sha256 == spec.sha256_of(EVERY_SHAPE)


editor_documents = question_maps.filter(
    lambda qmap: (
        all("\r" not in k and "\n" not in k for k in qmap)
        and all(
            "\r" not in n and "\n" not in n
            for q in qmap.values()
            if q["type"] == "choice"
            for n in q.get("criteria", {})
        )
    )
)


@pytest.mark.slow
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(editor_documents)
def test_any_valid_document_survives_the_editor_unchanged(author_client, document):
    version = draft_with(author_client, document)
    page = author_client.get(editor_url(version))
    author_client.post(
        editor_url(version, "version-save"), as_post(fields_of(page.content.decode()))
    )
    assert stored_text(version) == services.document_text(document)  # byte for byte
    version.refresh_from_db()
    assert version.sha256 == spec.sha256_of(document)


def post_with(pairs, **changes):
    data = as_post(pairs)
    for name, value in changes.items():
        data[name] = [value] if isinstance(value, str) else value
    return data


def card_key(pairs, qid: str) -> str:
    return next(n.split("-")[1] for n, v in pairs if n.endswith("-id") and v == qid)


def test_edits_through_the_fields_become_the_document(author_client):
    version = draft_with(author_client, factories.document(1))
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    key = card_key(pairs, "q0")
    row = next(v for n, v in pairs if n == f"q-{key}-r")
    data = post_with(
        pairs,
        **{
            f"q-{key}-id": "renamed",
            f"q-{key}-instructions": "New words",
            f"q-{key}-r-{row}-what": "changed\r\nover lines",
        },
    )
    response = author_client.post(editor_url(version, "version-save"), data)
    assert response.status_code == 302
    version.refresh_from_db()
    q = version.document["renamed"]
    assert q["instructions"] == "New words"
    assert q["criteria"]["o0"] == "changed\nover lines"


def test_reordering_cards_and_rows_reorders_the_document(author_client):
    version = draft_with(author_client, factories.document(2))
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    k0, k1 = card_key(pairs, "q0"), card_key(pairs, "q1")
    rows = [v for n, v in pairs if n == f"q-{k0}-r"]
    data = post_with(pairs, q=[k1, k0], **{f"q-{k0}-r": list(reversed(rows))})
    author_client.post(editor_url(version, "version-save"), data)
    version.refresh_from_db()
    assert list(version.document) == ["q1", "q0"]
    assert list(version.document["q0"]["criteria"]) == ["other", "o1", "o0"]


def test_a_stale_save_is_refused_and_keeps_what_was_typed(author_client):
    version = draft_with(author_client, factories.document(1))
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    # a second tab saves first
    services.version_save(
        version=version,
        document=factories.document(2),
        base_revision=version.revision,
        author=author_client.user,
    )
    key = card_key(pairs, "q0")
    data = post_with(pairs, **{f"q-{key}-instructions": "typed in the first tab"})
    response = author_client.post(editor_url(version, "version-save"), data)
    assert response.status_code == 409
    body = response.content.decode()
    assert "Not saved" in body and "typed in the first tab" in body
    version.refresh_from_db()
    assert list(version.document) == ["q0", "q1"]  # the second tab's save stands
    # "save mine over" sends the revision it was shown
    data["overwrite_revision"] = [str(version.revision)]
    response = author_client.post(editor_url(version, "version-save"), data)
    assert response.status_code == 302
    version.refresh_from_db()
    assert version.document["q0"]["instructions"] == "typed in the first tab"


def test_content_json_cannot_hold_is_refused_with_the_text_kept(author_client):
    version = draft_with(author_client, factories.document(1))
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    key = card_key(pairs, "q0")
    data = post_with(
        pairs, **{f"q-{key}-instructions_mode": "json", f"q-{key}-instructions": "{not json"}
    )
    before = version.revision
    response = author_client.post(editor_url(version, "version-save"), data)
    assert response.status_code == 422
    assert "not JSON" in response.content.decode()
    assert "{not json" in response.content.decode()
    version.refresh_from_db()
    assert version.revision == before


def test_an_option_name_used_twice_is_refused_and_neither_row_is_lost(author_client):
    version = draft_with(author_client, factories.document(1))
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    key = card_key(pairs, "q0")
    first, second = [v for n, v in pairs if n == f"q-{key}-r"][:2]
    name = dict(pairs)[f"q-{key}-r-{first}-name"]
    described = dict(pairs)[f"q-{key}-r-{second}-what"]
    before = stored_text(version)
    data = post_with(pairs, **{f"q-{key}-r-{second}-name": name})
    response = author_client.post(editor_url(version, "version-save"), data)
    assert response.status_code == 422
    html = response.content.decode()
    assert "Nothing was saved" in html and "is used twice" in html
    assert described in html  # the second row, as typed, is still on the page
    assert stored_text(version) == before


def test_an_invalid_draft_is_saved_with_a_warning(author_client):
    version = draft_with(author_client, factories.document(1))
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    key = card_key(pairs, "q0")
    rows = [v for n, v in pairs if n == f"q-{key}-r"]
    response = author_client.post(
        editor_url(version, "version-save"),
        post_with(pairs, **{f"q-{key}-r": rows[:1]}),
        follow=True,
    )
    assert "a draft must be valid before it is submitted" in response.content.decode()
    version.refresh_from_db()
    assert len(version.document["q0"]["criteria"]) == 1


# --- as-you-type validation ---------------------------------------------------------------------


def validate(client, version, pairs, key, **changes):
    data = post_with(pairs, card=key, **changes)
    return client.post(
        editor_url(version, "version-validate"), data, headers={"HX-Request": "true"}
    )


def test_validation_swaps_in_errors_at_the_field_and_counters(author_client):
    version = draft_with(author_client, factories.document(1))
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    key = card_key(pairs, "q0")
    rows = [v for n, v in pairs if n == f"q-{key}-r"]
    response = validate(author_client, version, pairs, key, **{f"q-{key}-r": rows[:1]})
    body = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in body
    assert f'id="slot-{key}-criteria" class="slot" aria-live="polite" hx-swap-oob="true"' in body
    assert "choice <code>q0</code> has 1 option; at least 2 options" in body
    assert "1 / 255 options" in body
    assert "1 error" in body
    fixed = validate(author_client, version, pairs, key).content.decode()
    assert "at least 2 options" not in fixed
    assert "3 / 255 options" in fixed and "valid" in fixed


def test_validation_places_an_option_error_at_its_row(author_client):
    version = draft_with(author_client, factories.document(1))
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    key = card_key(pairs, "q0")
    row = next(v for n, v in pairs if n == f"q-{key}-r")
    body = validate(
        author_client, version, pairs, key, **{f"q-{key}-r-{row}-name": "x" * 129}
    ).content.decode()
    start = body.index(f'id="slot-{key}-row-{row}"')
    assert "has 129 characters; at most 128" in body[start : start + 400]


def test_validation_counts_questions_and_sees_duplicate_ids(author_client):
    version = draft_with(author_client, factories.document(2))
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    key = card_key(pairs, "q1")
    body = validate(author_client, version, pairs, key, **{f"q-{key}-id": "q0"}).content.decode()
    assert "2 / 32 questions" in body
    assert "Question id <code>q0</code> is used by another question." in body


def test_new_card_type_change_and_duplicate_partials(author_client):
    version = draft_with(author_client, factories.document(1))
    url = editor_url(version, "version-card")
    new = author_client.get(
        url,
        {"type": "score", "q": ["a", "b"], "q-a-id": "q0", "q-b-id": "question_3"},
        headers={"HX-Request": "true"},
    )
    body = new.content.decode()
    assert new.status_code == 200 and "<html" not in body
    assert 'value="question_4"' in body and "2 / 10 levels" in body
    assert "revalidate, load" in body
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    key = card_key(pairs, "q0")
    retyped = author_client.post(
        url, post_with(pairs, op="type", card=key, **{f"q-{key}-type": "score"})
    )
    assert "3 / 10 levels" in retyped.content.decode()
    dup = author_client.post(url, post_with(pairs, op="duplicate", card=key))
    assert 'value="q0_copy"' in dup.content.decode()


def test_the_editor_pins_its_query_count_for_32_questions(author_client, django_assert_num_queries):
    version = draft_with(author_client, factories.document(32, options=255))
    url = editor_url(version)
    author_client.get(url)  # the session and the user are loaded once per request anyway
    # session, user, version, groups, states, runs, the lints accepted on the set (it has warnings),
    # the report of the version's last run (which questions it failed: "Suggest rewordings")
    with django_assert_num_queries(8):
        response = author_client.get(url)
    assert response.status_code == 200
    assert response.content.decode().count('class="card ') == 32


@pytest.mark.slow
def test_the_largest_set_saves_through_the_editor(author_client):
    document = factories.document(32, options=255)
    version = draft_with(author_client, document)
    page = author_client.get(editor_url(version)).content.decode()
    assert len(page) < 3_000_000  # the cards of 255 options are closed until opened
    data = as_post(fields_of(page))
    key = data["q"][31]
    assert data[f"q-{key}-stored"] == ["q31"] and f"q-{key}-r" not in data
    data = opened(author_client, version, data, key)
    data[f"q-{key}-instructions"] = ["changed at the end"]
    last_row = data[f"q-{key}-r"][-1]
    data[f"q-{key}-r-{last_row}-what"] = ["none of these, edited"]
    response = author_client.post(editor_url(version, "version-save"), data)
    assert response.status_code == 302
    version.refresh_from_db()
    document["q31"]["instructions"] = "changed at the end"
    document["q31"]["criteria"]["other"] = "none of these, edited"
    assert version.document == document  # the 31 closed cards came back exactly


def test_a_closed_card_stands_for_its_stored_question(author_client):
    """Saved, validated or previewed, a card never opened is the stored question; one that
    disappeared from the stored draft meanwhile is refused, naming it."""
    document = factories.document(3, options=60) | {"small": factories.document(1)["q0"]}
    version = draft_with(author_client, document)
    data = as_post(fields_of(author_client.get(editor_url(version)).content.decode()))
    assert [k for k in data["q"] if f"q-{k}-stored" in data] == data["q"][:3]  # 60 > 40 rows
    keys = data["q"]
    data["q"] = [keys[2], keys[0], keys[1], keys[3]]  # reordered on the page, never opened
    assert author_client.post(editor_url(version, "version-save"), data).status_code == 302
    version.refresh_from_db()
    assert list(version.document) == ["q2", "q0", "q1", "small"]
    assert version.document == document
    check = author_client.post(
        editor_url(version, "version-validate"),
        {**data, "card": keys[0]},
        headers={"HX-Request": "true"},
    )
    assert check.status_code == 200 and "error" not in check.content.decode().split("status-")[1]
    assert f"slot-{keys[0]}-row-" not in check.content.decode()  # a closed card has no rows shown
    data["q-" + keys[1] + "-stored"] = ["gone"]
    data["q-" + keys[1] + "-id"] = ["gone"]
    data["base_revision"] = [str(version.revision)]
    refused = author_client.post(editor_url(version, "version-save"), data)
    assert refused.status_code == 422
    assert "Question <code>gone</code> was never opened on this page" in refused.content.decode()
    preview = author_client.post(
        editor_url(version, "version-preview"),
        {**data, "preview_backend": "recorded", "preview_state_json": "{}"},
    )
    assert "fix what is marked in the editor" in preview.content.decode()
    version.refresh_from_db()
    assert version.document == document


def test_opening_a_card_refuses_what_names_no_card(author_client):
    version = draft_with(author_client, factories.document(1, options=60))
    url = editor_url(version, "version-card-open")
    assert author_client.get(url, {"card": "k0", "id": "nope"}).status_code == 404
    assert author_client.get(url, {"card": "<script>", "id": "q0"}).status_code == 422


# --- the JSON view ------------------------------------------------------------------------------


def test_json_view_shows_the_document_and_replaces_it_only_when_valid(author_client):
    version = draft_with(author_client, factories.document(1))
    url = editor_url(version, "version-json")
    page = author_client.get(url)
    assert json.loads(page.context["text"]) == factories.document(1)
    bad = author_client.post(
        url, {"document": '{"q": {"type": "choice"}}', "base_revision": version.revision}
    )
    assert bad.status_code == 422
    assert "Nothing was replaced" in bad.content.decode()
    version.refresh_from_db()
    assert version.document == factories.document(1)
    body = {"state": None, "questions": factories.document(3)}
    good = author_client.post(
        url, {"document": json.dumps(body), "base_revision": version.revision}
    )
    assert good.status_code == 302
    version.refresh_from_db()
    assert version.document == factories.document(3)


def test_json_view_checks_as_you_type(author_client):
    version = draft_with(author_client, factories.document(1))
    response = author_client.post(
        editor_url(version, "version-json"),
        {"document": "{", "action": "check"},
        headers={"HX-Request": "true"},
    )
    assert "This is not JSON" in response.content.decode()
    assert "<html" not in response.content.decode()


# --- who may do what --------------------------------------------------------------------------


def test_a_viewer_reads_but_cannot_change(client):
    owner = factories.author()
    qs = factories.question_set(owner=owner)
    version = factories.draft(qs)
    viewer = factories.user()
    client.force_login(viewer)
    page = client.get(editor_url(version))
    assert page.status_code == 200
    assert "only authors edit it" in page.content.decode()
    assert client.post(editor_url(version, "version-save"), {}).status_code == 403
    assert client.post(editor_url(version, "version-json"), {"document": "{}"}).status_code == 403
    assert client.get(editor_url(version, "version-card")).status_code == 403


def test_a_version_in_review_is_read_only_everywhere(author_client):
    version = draft_with(author_client, factories.document(1))
    services.version_submit(version=version, author=author_client.user)
    page = author_client.get(editor_url(version)).content.decode()
    assert "cannot change" in page and "New draft from this version" in page
    assert 'fieldset class="card' in page and "disabled" in page
    response = author_client.post(
        editor_url(version, "version-save"), {"q": [], "base_revision": "2"}
    )
    assert response.status_code == 409
    version.refresh_from_db()
    assert version.document == factories.document(1)


def test_a_read_only_version_shows_large_cards_closed_and_posts_none(author_client):
    """Its preview asks what is stored: no card's field reaches the editor form."""
    version = draft_with(author_client, factories.document(2, options=60))
    services.version_submit(version=version, author=author_client.user)
    page = author_client.get(editor_url(version)).content.decode()
    assert page.count('class="card closed') == 2 and "Open</button>" in page
    assert 'form="editor"' not in page.split('id="cards"')[1].split('id="preview"')[0]
    opened = author_client.get(editor_url(version, "version-card-open"), {"card": "k1", "id": "q1"})
    assert opened.status_code == 200 and "disabled" in opened.content.decode()


def test_csrf_is_enforced_on_every_form_endpoint():
    user = factories.author()
    qs = factories.question_set(owner=user)
    version = factories.draft(qs)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    for name in (
        "version-save",
        "version-validate",
        "version-card",
        "version-json",
        "version-submit",
        "version-discard",
        "version-new-draft",
    ):
        assert client.post(editor_url(version, name), {}).status_code == 403, name
    assert client.post(reverse("set-create"), {}).status_code == 403
    assert client.post(reverse("state-create", args=[qs.slug]), {}).status_code == 403


# --- every byte the author wrote -------------------------------------------------------------

#: the author's order everywhere: question keys `criteria, type, instructions`, noul cases
#: `false, true`, entry fields `examples, what`, options and ids not in alphabetical order
AUTHOR_ORDER = {
    "urgent": {
        "criteria": {
            "false": "it can wait a day",
            "true": {"examples": ["down"], "what": "blocked"},
        },
        "type": "noul",
        "instructions": "Is it urgent?",
    },
    "desk": {
        "instructions": "Which desk handles it?",
        "criteria": {
            "tech": {"examples": ["the app crashes", "login fails"], "what": "bugs"},
            "billing": {"not_for": "refund policy questions", "what": "money owed"},
            "other": "anything else",
        },
        "type": "choice",
    },
    "energy": {
        "type": "score",
        "criteria": [{"examples": ["sits"], "what": "still"}, "calm", "lively"],
        "instructions": "How lively is it?",
    },
}


def stored_text(version: Version) -> str:
    return Version.objects.get(pk=version.pk).document_text


def test_a_save_with_no_edit_changes_no_byte_of_the_stored_document(author_client):
    version = draft_with(author_client, AUTHOR_ORDER)
    before, revision = stored_text(version), version.revision
    assert before == services.document_text(AUTHOR_ORDER)  # the author's order, stored
    page = author_client.get(editor_url(version)).content.decode()
    response = author_client.post(editor_url(version, "version-save"), as_post(fields_of(page)))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert stored_text(version) == before
    version.refresh_from_db()
    assert version.revision == revision  # no edit: no new revision, no `edited` event


def test_an_edit_keeps_the_order_of_everything_else(author_client):
    version = draft_with(author_client, AUTHOR_ORDER)
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    desk, urgent = card_key(pairs, "desk"), card_key(pairs, "urgent")
    tech = next(v for n, v in pairs if n == f"q-{desk}-r")
    data = post_with(
        pairs,
        **{
            f"q-{desk}-instructions": "Which desk takes it?",
            f"q-{desk}-r-{tech}-what": "software faults",
            f"q-{urgent}-r-t-examples": "down\r\noutage",
        },
    )
    assert author_client.post(editor_url(version, "version-save"), data).status_code == 302
    expected = json.loads(json.dumps(AUTHOR_ORDER))
    expected["desk"]["instructions"] = "Which desk takes it?"
    expected["desk"]["criteria"]["tech"]["what"] = "software faults"
    expected["urgent"]["criteria"]["true"]["examples"] = ["down", "outage"]
    assert stored_text(version) == services.document_text(expected)


def test_the_preview_sends_the_author_s_bytes(author_client, settings):
    from tests.providers import KEY, Provider

    provider = Provider(default=lambda body: standin.respond(body)[1])
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = KEY, provider.url
    try:
        version = draft_with(author_client, AUTHOR_ORDER)
        pairs = fields_of(author_client.get(editor_url(version)).content.decode())
        data = post_with(
            pairs,
            preview_state="",
            preview_state_json='{"b": 1, "a": 2}',
            preview_backend="typesafe",
        )
        response = author_client.post(editor_url(version, "version-preview"), data)
        assert response.status_code == 200, response.content.decode()[:2000]
    finally:
        provider.stop()
    [request] = provider.requests
    wire = spec.wire_json(
        {"state": {"b": 1, "a": 2}, "model": settings.DECISIONS_MODEL, "questions": AUTHOR_ORDER}
    )
    assert request["raw"] == wire
    assert Decision.objects.get().request_text.encode() == wire  # and as recorded


#: structured descriptions: an array, an object with other keys, nested values
STRUCTURED = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {
            "tech": {"owns": ["the app", "the API"], "what": "bugs"},
            "billing": ["money owed", {"not": "refunds"}],
            "other": "anything else",
        },
    },
    "urgent": {"type": "noul", "criteria": {"false": ["it can wait"], "true": "blocked"}},
    "level": {"type": "score", "criteria": [{"label": "low", "n": 1}, "high"]},
}


def _json_fields(html: str) -> dict[str, str]:
    return {n: v for n, v in fields_of(html) if n.endswith("-json")}


def test_a_structured_entry_is_edited_as_json_in_its_row(author_client):
    version = draft_with(author_client, STRUCTURED)
    html = author_client.get(editor_url(version)).content.decode()
    pairs = fields_of(html)
    desk, urgent = card_key(pairs, "desk"), card_key(pairs, "urgent")
    tech, billing, other = [v for n, v in pairs if n == f"q-{desk}-r"]
    shapes = dict(pairs)
    assert shapes[f"q-{desk}-r-{tech}-shape"] == "json"
    assert shapes[f"q-{desk}-r-{billing}-shape"] == "json"
    assert shapes[f"q-{desk}-r-{other}-shape"] == "text"
    assert shapes[f"q-{urgent}-noul_mode"] == "text/json"  # true a description, false JSON
    shown = _json_fields(html)[f"q-{desk}-r-{tech}-json"].replace("\r\n", "\n")
    assert spec.loads(shown) == STRUCTURED["desk"]["criteria"]["tech"]
    assert list(spec.loads(shown)) == ["owns", "what"]
    # another field edited: the structured entries stay byte for byte
    data = post_with(pairs, **{f"q-{desk}-r-{other}-what": "anything else at all"})
    assert author_client.post(editor_url(version, "version-save"), data).status_code == 302
    expected = json.loads(json.dumps(STRUCTURED))
    expected["desk"]["criteria"]["other"] = "anything else at all"
    assert stored_text(version) == services.document_text(expected)
    # the JSON edited: parsed as written, in its order
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    data = post_with(pairs, **{f"q-{desk}-r-{tech}-json": '{"what": "bugs", "owns": []}'})
    assert author_client.post(editor_url(version, "version-save"), data).status_code == 302
    expected["desk"]["criteria"]["tech"] = {"what": "bugs", "owns": []}
    assert stored_text(version) == services.document_text(expected)


def test_json_in_a_row_that_is_not_json_is_refused_at_the_row(author_client):
    version = draft_with(author_client, STRUCTURED)
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    desk = card_key(pairs, "desk")
    tech = next(v for n, v in pairs if n == f"q-{desk}-r")
    before = stored_text(version)
    data = post_with(pairs, **{f"q-{desk}-r-{tech}-json": '{"owns": [}'})
    response = author_client.post(editor_url(version, "version-save"), data)
    assert response.status_code == 422
    html = response.content.decode()
    row_slot = html.split(f'id="slot-{desk}-row-{tech}"', 1)[1].split("</div>", 1)[0]
    assert "This description is not JSON" in row_slot
    assert "{&quot;owns&quot;: [}" in html or '{"owns": [}' in html  # what was typed stays
    assert stored_text(version) == before
    # as the author types, the same message at the same row
    checked = author_client.post(
        editor_url(version, "version-validate"), {**data, "card": desk}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "This description is not JSON" in checked.split(f'id="slot-{desk}-row-{tech}"', 1)[1]


def test_a_plain_entry_can_be_turned_into_json_and_back(author_client):
    version = draft_with(author_client, AUTHOR_ORDER)
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    desk = card_key(pairs, "desk")
    tech = next(v for n, v in pairs if n == f"q-{desk}-r")
    shown = dict(pairs)[f"q-{desk}-r-{tech}-json"]  # the plain entry's JSON, ready to edit
    assert spec.loads(shown) == AUTHOR_ORDER["desk"]["criteria"]["tech"]
    data = post_with(
        pairs, **{f"q-{desk}-r-{tech}-shape": "json", f"q-{desk}-r-{tech}-json": '["a", "b"]'}
    )
    assert author_client.post(editor_url(version, "version-save"), data).status_code == 302
    assert Version.objects.get(pk=version.pk).document["desk"]["criteria"]["tech"] == ["a", "b"]


# --- a save from htmx (the Save button, Ctrl+S): the page stays, its answer is out of band ----


def test_a_save_from_htmx_answers_out_of_band_and_leaves_no_message_behind(author_client):
    version = draft_with(author_client, factories.document(1))
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    key = card_key(pairs, "q0")
    data = post_with(pairs, **{f"q-{key}-instructions": "saved in place"})
    response = author_client.post(editor_url(version, "version-save"), data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert response["HX-Trigger"] == "saved"  # the Try pane checks its plan again
    body = response.content.decode()
    version.refresh_from_db()
    assert version.document["q0"]["instructions"] == "saved in place"
    assert f'id="base-revision" name="base_revision" value="{version.revision}"' in body
    assert f'data-saved="{version.revision}"' in body
    assert f"Saved revision {version.revision}." in body
    assert 'id="save-problem" hx-swap-oob="true"' in body  # a refusal shown before goes
    assert 'id="cards"' not in body  # nothing else of the page
    # the words were said beside Save: no flash waits for the next page
    assert "Saved revision" not in author_client.get(editor_url(version)).content.decode()


def test_a_save_from_htmx_of_an_invalid_draft_says_so_beside_save(author_client):
    version = draft_with(author_client, factories.document(1))
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    key = card_key(pairs, "q0")
    data = post_with(pairs, **{f"q-{key}-instructions": "", f"q-{key}-instructions_mode": "absent"})
    data["q-" + key + "-r"] = data["q-" + key + "-r"][:1]  # one option left: an error
    before = version.revision
    response = author_client.post(editor_url(version, "version-save"), data, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    version.refresh_from_db()
    assert response.status_code == 200 and version.revision == before + 1, body
    assert "saved-warning" in body and "with 1 error" in body


def test_a_stale_save_from_htmx_is_refused_beside_save_and_saves_nothing(author_client):
    version = draft_with(author_client, factories.document(1))
    pairs = fields_of(author_client.get(editor_url(version)).content.decode())
    services.version_save(
        version=version,
        document=factories.document(2),
        base_revision=version.revision,
        author=author_client.user,
    )
    key = card_key(pairs, "q0")
    data = post_with(pairs, **{f"q-{key}-instructions": "typed in the first tab"})
    response = author_client.post(editor_url(version, "version-save"), data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200  # htmx swaps it in; the page keeps what was typed
    assert not response.has_header("HX-Trigger")
    body = response.content.decode()
    assert "Not saved — this draft changed elsewhere" in body
    version.refresh_from_db()
    assert f'name="overwrite_revision" value="{version.revision}"' in body
    assert 'id="base-revision"' not in body  # the page's revision stays the one it had
    assert list(version.document) == ["q0", "q1"]
    # what JSON cannot hold is refused the same way
    row = next(v for n, v in pairs if n == f"q-{key}-r")
    data = post_with(pairs, **{f"q-{key}-r": [row, row]})  # one option twice: a name used twice
    response = author_client.post(editor_url(version, "version-save"), data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "Nothing was saved" in response.content.decode()


# --- a noul's criteria: one control ----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "meant"),
    [
        ("text/text", ("described", "text", "text")),
        ("absent/json", ("described", "absent", "json")),
        ("object/null", ("described", "object", "null")),
        ("absent", ("absent", "absent", "absent")),
        ("empty", ("empty", "absent", "absent")),
        ("null", ("null", "absent", "absent")),
        ("described", ("described", "json", "text")),  # the form before the one control
        ("text/sideways", ("absent", "absent", "absent")),
        ("whatever", ("absent", "absent", "absent")),
    ],
)
def test_the_noul_control_says_the_mode_and_each_case_s_shape(value, meant):
    from questions import forms

    shapes = {"t": "json", "f": "text"}
    assert forms.noul_fields(value, shapes.__getitem__) == meant


def test_a_noul_has_one_criteria_control_and_an_unusual_pair_is_offered_as_it_is(author_client):
    version = draft_with(author_client, EVERY_SHAPE)
    html = author_client.get(editor_url(version)).content.decode()
    pairs = fields_of(html)
    assert not [n for n, _ in pairs if n.endswith(("-r-t-shape", "-r-f-shape"))]
    controls = {card_key(pairs, q): q for q in ("start", "absent", "nullc", "emptyc", "onlytrue")}
    chosen = {
        controls[n.split("-")[1]]: v
        for n, v in pairs
        if n.endswith("-noul_mode") and n.split("-")[1] in controls
    }
    assert chosen == {
        "start": "object/null",  # none of the usual choices: offered as the document holds it
        "absent": "absent",
        "nullc": "null",
        "emptyc": "empty",
        "onlytrue": "text/absent",
    }
    assert "true what / not for / examples, false null" in html
    # another choice of the control becomes the document
    start = card_key(pairs, "start")
    data = post_with(
        pairs, **{f"q-{start}-noul_mode": "text/text", f"q-{start}-r-f-what": "it keeps still"}
    )
    data[f"q-{start}-r-t-what"] = ["wave please"]
    assert author_client.post(editor_url(version, "version-save"), data).status_code == 302
    version.refresh_from_db()
    assert version.document["start"]["criteria"] == {
        "true": "wave please",
        "false": "it keeps still",
    }
