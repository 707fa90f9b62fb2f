"""The editor's checks as the author types: every error at its row (a duplicate option at its
second occurrence), document-wide counts that count every card, quiet untouched new rows,
over-long ids cut short in every message, and the JSON view's replace."""

from __future__ import annotations

import re

import pytest

from questions import services
from questions.core import check, spec
from tests import factories
from tests.helpers import as_post, draft_with, editor_url, fields_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def author_client(client):
    client.user = factories.author("writer")
    client.force_login(client.user)
    return client


DOC = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money", "tech": "bugs", "other": "anything else"},
    },
    "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["can wait", "now"]},
    "bad": {"type": "choice", "instructions": "x", "criteria": {"only": "one"}},
}


def _page(client, version):
    return as_post(fields_of(client.get(editor_url(version)).content.decode()))


def _key(data, qid):
    return next(k for k in data["q"] if data[f"q-{k}-id"] == [qid])


def _validate(client, version, data, key):
    return client.post(
        editor_url(version, "version-validate"), {**data, "card": key}, HTTP_HX_REQUEST="true"
    ).content.decode()


def _slot(html: str, slot: str) -> str:
    found = re.search(rf'<div id="{slot}" class="slot"[^>]*>(.*?)</div>', html, re.S)
    return found.group(1) if found else ""


def test_a_duplicate_option_is_marked_at_its_second_row(author_client):
    version = draft_with(author_client, DOC)
    data = _page(author_client, version)
    key = _key(data, "desk")
    rows = data[f"q-{key}-r"]
    data[f"q-{key}-r-{rows[2]}-name"] = ["billing"]
    html = _validate(author_client, version, data, key)
    second = _slot(html, f"slot-{key}-row-{rows[2]}")
    assert "option name <code>billing</code> is used twice" in second
    assert "choice <code>desk</code>:" in second  # worded as the other option errors
    assert "used twice" not in _slot(html, f"slot-{key}-row-{rows[0]}")
    assert "used twice" not in _slot(html, f"slot-{key}-card")


def test_the_document_counts_stay_live_for_the_card_checked(author_client):
    version = draft_with(author_client, DOC)
    data = _page(author_client, version)
    html = _validate(author_client, version, data, _key(data, "desk"))
    # the card's own counts and the document's own issues: the page adds up the rest
    assert re.search(r'class="card-status" data-invalid="0" data-lints="\d+"', html)
    assert 'class="document-counts" data-invalid="0" data-lints="0"' in html
    # the other cards, standing in by their ids, bring no issues of their own to this check
    assert "bad" not in _slot(html, "slot-document")


def test_an_untouched_new_row_keeps_its_warnings_until_typed_in(author_client):
    version = draft_with(author_client, DOC)
    data = _page(author_client, version)
    key = _key(data, "urgency")
    data[f"q-{key}-r"] = [*data[f"q-{key}-r"], "fresh1"]
    data[f"q-{key}-r-fresh1-shape"] = ["null"]
    data[f"q-{key}-r-fresh1-name"] = [""]
    quiet = _validate(author_client, version, {**data, f"q-{key}-untouched": ["fresh1"]}, key)
    assert _slot(quiet, f"slot-{key}-row-fresh1") == ""
    loud = _validate(author_client, version, data, key)
    assert "named only by its id" in _slot(loud, f"slot-{key}-row-fresh1")


def test_an_over_long_id_is_cut_short_in_every_message():
    long_id = "q" * 134
    result = check.validate(
        {long_id: {"type": "choice", "criteria": {"a": None, "b": None}}},
        limits=spec.Limits(),
    )
    messages = [i.message for i in result.errors + result.warnings]
    assert messages and all(long_id not in m for m in messages)
    assert any("134 characters" in m for m in messages)


def test_the_json_view_checks_alike_live_and_submitted(author_client):
    version = draft_with(author_client, DOC)
    url = editor_url(version, "version-json")
    text = '{\n  "a": {\n    "type": "noul"\n  }\n  "b": 1\n}'
    live = author_client.post(
        url, {"document": text, "action": "check", "base_revision": version.revision}
    ).content.decode()
    sent = author_client.post(
        url, {"document": text.replace("\n", "\r\n"), "base_revision": version.revision}
    )
    assert sent.status_code == 422
    offsets = [re.findall(r"char \d+", html) for html in (live, sent.content.decode())]
    assert offsets[0] and offsets[0] == offsets[1][: len(offsets[0])]
    assert 'disabled title="The live check says' in live
    assert sent.content.decode().count("This is not JSON") == 1  # said once


def test_the_json_view_lets_a_valid_document_replace(author_client):
    version = draft_with(author_client, DOC)
    url = editor_url(version, "version-json")
    text = '{"a": {"type": "noul", "instructions": "Is it late?"}}'
    live = author_client.post(
        url, {"document": text, "action": "check", "base_revision": version.revision}
    ).content.decode()
    assert "disabled" not in live
    assert (
        author_client.post(url, {"document": text, "base_revision": version.revision}).status_code
        == 302
    )
    version.refresh_from_db()
    assert list(version.document) == ["a"]


def test_readers_see_no_replace(client):
    writer = factories.author("w2")
    qs = factories.question_set(owner=writer, doc=DOC)
    client.force_login(factories.user("reader"))
    page = client.get(f"/sets/{qs.slug}/v1/json/").content.decode()
    assert "Replace the draft" not in page


def test_a_semantic_lint_appears_live_at_the_field_it_names(author_client):
    version = draft_with(author_client, DOC)
    services.sample_state_create(
        question_set=version.question_set,
        name="a ticket",
        state={"ticket": {"text": "help"}},
        author=author_client.user,
    )
    data = _page(author_client, version)
    key = _key(data, "desk")
    before = _validate(author_client, version, data, key)
    assert "asks the model to count" not in before
    data[f"q-{key}-instructions"] = ["How many desks does `ticket.owner` need?"]
    html = _validate(author_client, version, data, key)
    at = _slot(html, f"slot-{key}-instructions")
    assert "“How many” asks the model to count" in at
    assert "<code>ticket.owner</code> is in none of the sample states" in at
    assert re.search(r'class="card-status" data-invalid="0" data-lints="[1-9]', html)
    # a path the set's sample states have is quiet
    data[f"q-{key}-instructions"] = ["Which desk owns `ticket.text`?"]
    assert "sample states" not in _slot(
        _validate(author_client, version, data, key), f"slot-{key}-instructions"
    )


def test_the_editor_page_shows_the_lints_of_every_question(author_client):
    doc = {
        **DOC,
        "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "high"]},
    }
    doc.pop("bad")
    version = draft_with(author_client, doc)
    html = author_client.get(editor_url(version)).content.decode()
    data = _page(author_client, version)
    assert "are bare labels" in _slot(html, f"slot-{_key(data, 'urgency')}-criteria")
