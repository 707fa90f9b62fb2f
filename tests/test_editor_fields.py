"""The most fields an editor post carries (`questions.editor_fields`): each card posts the fields
counted for it, the settings let a request carry the most a page at the limits posts, and the
largest set saves and previews with every card open (Django refused the whole body before)."""

from __future__ import annotations

import pytest
from django.conf import settings

from questions import editor_fields
from tests import factories
from tests.helpers import FormFields, as_post, draft_with, editor_url, fields_of, opened

pytestmark = pytest.mark.django_db

SMALL = {
    "desk": {"type": "choice", "criteria": {"billing": "money", "tech": "bugs", "other": "else"}},
    "level": {"type": "score", "criteria": ["low", "mid", "high", "top"]},
    "urgent": {
        "type": "noul",
        "instructions": "Urgent?",
        "criteria": {"true": "now", "false": {"what": "later"}},
    },
}


@pytest.fixture
def author_client(client):
    user = factories.author("writer")
    client.force_login(user)
    client.user = user
    return client


def card_counts(data: dict[str, list[str]]) -> dict[str, int]:
    """The fields each card posts, by question id."""
    return {
        data[f"q-{key}-id"][0]: 1
        + sum(len(v) for k, v in data.items() if k.startswith(f"q-{key}-"))
        for key in data["q"]
    }


def form_fields(html: str, form_id: str) -> list[tuple[str, str]]:
    parser = FormFields(form_id)
    parser.feed(html)
    return parser.pairs


def test_each_open_card_posts_the_fields_counted_for_it(author_client):
    version = draft_with(author_client, SMALL)
    page = author_client.get(editor_url(version)).content.decode()
    assert card_counts(as_post(fields_of(page))) == {
        "desk": editor_fields.card_fields(3),
        "level": editor_fields.card_fields(4),
        "urgent": editor_fields.noul_card_fields(),
    }
    # the page's own fields beside the cards: the save's (with its overwrite button), the
    # preview's and the try's (with the base revision it posts)
    save = [name for name, _ in fields_of(page) if name != "q" and not name.startswith("q-")]
    assert sorted(save) == ["base_revision", "csrfmiddlewaretoken"]
    assert len(save) + 1 <= editor_fields.PAGE_FIELDS
    assert 0 < len(form_fields(page, "preview-form")) <= editor_fields.PAGE_FIELDS
    assert 0 < len(form_fields(page, "try-form")) + 1 <= editor_fields.PAGE_FIELDS


def test_the_settings_allow_what_a_page_at_the_limits_posts():
    limits = settings.DECISIONS_LIMITS
    assert editor_fields.most_fields(limits) == settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
    largest = limits.max_questions * editor_fields.card_fields(limits.max_options)
    assert largest + editor_fields.PAGE_FIELDS <= settings.DATA_UPLOAD_MAX_NUMBER_FIELDS


@pytest.mark.slow
@pytest.mark.one_database  # what it tests is the request's fields, not the database
def test_the_largest_set_saves_and_previews_with_every_card_open(author_client):
    limits = settings.DECISIONS_LIMITS
    document = factories.document(limits.max_questions, options=limits.max_options)
    version = draft_with(author_client, document)
    data = as_post(fields_of(author_client.get(editor_url(version)).content.decode()))
    for key in data["q"]:  # each card of 255 options is closed until opened
        data = opened(author_client, version, data, key)
    counts = card_counts(data)
    assert set(counts.values()) == {editor_fields.card_fields(limits.max_options)}
    assert len(counts) == limits.max_questions
    posted = sum(len(v) for v in data.values())
    assert posted == limits.max_questions * editor_fields.card_fields(limits.max_options) + 2
    last = data["q"][-1]
    data[f"q-{last}-instructions"] = ["changed at the end"]
    response = author_client.post(editor_url(version, "version-save"), data)
    assert response.status_code == 302
    version.refresh_from_db()
    document["q31"]["instructions"] = "changed at the end"
    assert version.document == document
    cards = {k: v for k, v in data.items() if k == "q" or k.startswith("q-")}
    preview = author_client.post(
        editor_url(version, "version-preview"),
        {**cards, "preview_backend": "recorded", "preview_state_json": "{}", "preview_state": ""},
        headers={"HX-Request": "true"},
    )
    assert preview.status_code == 200
