"""Sets list, set page, history, diff page, and the version actions."""

import pytest
from django.urls import reverse

from questions import services
from questions.models import QuestionSet, Version
from tests import factories

pytestmark = [pytest.mark.django_db, pytest.mark.both_databases]


@pytest.fixture
def writer(client):
    user = factories.author("writer")
    client.force_login(user)
    return user


def test_sets_list_with_search_and_its_partial(client, writer):
    factories.question_set("gestures", owner=writer)
    factories.question_set("support", owner=writer)
    page = client.get(reverse("set-list"))
    body = page.content.decode()
    assert "gestures" in body and "support" in body and "v1" in body and "draft" in body
    partial = client.get(
        reverse("set-list"), {"q": "gest"}, headers={"HX-Request": "true", "HX-Target": "set-rows"}
    )
    body = partial.content.decode()
    assert "<html" not in body and "gestures" in body and "support" not in body
    empty = client.get(reverse("set-list"), {"q": "zzz"}).content.decode()
    assert "No set matches" in empty


def test_sets_list_query_count_does_not_grow_with_sets(client, writer, django_assert_num_queries):
    for i in range(12):
        factories.question_set(f"s{i}", owner=writer)
    client.get(reverse("set-list"))
    with django_assert_num_queries(5):  # a page of sets and their count, for the pager
        client.get(reverse("set-list"))


def test_create_a_set(client, writer):
    response = client.post(
        reverse("set-create"), {"name": "Routing", "slug": "routing", "description": ""}
    )
    assert response.status_code == 302
    version = Version.objects.get(question_set__slug="routing")
    assert response.url == version.get_absolute_url()
    again = client.post(reverse("set-create"), {"name": "R", "slug": "routing"})
    assert again.status_code == 409 and "exists already" in again.content.decode()


def test_set_page_history_and_the_open_draft(client, writer):
    qs = factories.question_set("g", owner=writer)
    v1 = services.version_submit(version=factories.draft(qs), author=writer)
    v2 = services.version_draft_from(version=v1, author=writer)
    body = client.get(qs.get_absolute_url()).content.decode()
    assert f'href="{v2.get_absolute_url()}">version 2</a>' in body
    history = client.get(reverse("set-history", args=["g"])).content.decode()
    assert "Submitted" in history and "from version 1" in history


def test_new_draft_when_one_is_open_links_to_it(client, writer):
    qs = factories.question_set("g", owner=writer)
    v1 = services.version_submit(version=factories.draft(qs), author=writer)
    response = client.post(reverse("version-new-draft", args=["g", 1]), follow=True)
    assert response.redirect_chain[-1][0] == "/sets/g/v2/"
    response = client.post(reverse("version-new-draft", args=["g", v1.number]), follow=True)
    assert response.redirect_chain[-1][0] == "/sets/g/v2/"
    assert "already has an open draft, version 2" in response.content.decode()
    assert Version.objects.filter(question_set=qs).count() == 2


def test_diff_page(client, writer):
    qs = factories.question_set(
        "g",
        owner=writer,
        doc={"q": {"type": "choice", "criteria": {"tech": "Bugs", "sales": "Buying"}}},
    )
    v1 = services.version_submit(version=factories.draft(qs), author=writer)
    v2 = services.version_draft_from(version=v1, author=writer)
    services.version_save(
        version=v2,
        base_revision=1,
        author=writer,
        document={
            "q": {"type": "choice", "criteria": {"technical": "Bugs", "sales": "Buying things"}},
            "n": {"type": "noul", "instructions": "Is it so?"},
        },
    )
    body = client.get(reverse("version-diff", args=["g"])).content.decode()
    assert "v1 → v2" in body
    assert "renamed" in body and "<del>tech</del><ins>technical</ins>" in body
    assert "<ins> things</ins>" in body
    assert "added" in body
    missing = client.get(reverse("version-diff", args=["g"]), {"a": "7"})
    assert missing.status_code == 404 and "has no version" in missing.content.decode()


def test_discard_and_submit_from_the_page(client, writer):
    qs = factories.question_set("g", owner=writer)
    client.post(reverse("version-submit", args=["g", 1]))
    assert Version.objects.get(question_set=qs, number=1).status == "in_review"
    client.post(reverse("version-new-draft", args=["g", 1]))
    client.post(reverse("version-discard", args=["g", 2]))
    assert list(qs.versions.values_list("number", flat=True)) == [1]


def test_escaping_everywhere_text_is_shown(client, writer):
    evil = "<script>alert(1)</script>"
    qs = factories.question_set(
        "g",
        owner=writer,
        doc={evil: {"type": "choice", "instructions": evil, "criteria": {evil: evil, "b": evil}}},
    )
    QuestionSet.objects.filter(pk=qs.pk).update(name=evil, description=evil)
    v1 = services.version_submit(version=factories.draft(qs), author=writer)
    v2 = services.version_draft_from(version=v1, author=writer)
    services.version_save(
        version=v2,
        base_revision=1,
        author=writer,
        document={"n": {"type": "noul", "criteria": {"true": evil}}},
    )
    services.sample_state_create(question_set=qs, name=evil, state=evil, author=writer, tags=[evil])
    for url in (
        reverse("set-list"),
        qs.get_absolute_url(),
        v1.get_absolute_url(),
        v2.get_absolute_url(),
        reverse("version-diff", args=["g"]),
        reverse("set-history", args=["g"]),
        reverse("version-json", args=["g", 1]),
    ):
        body = client.get(url).content.decode()
        assert evil not in body, url


def test_viewers_cannot_change_anything(client):
    owner = factories.author()
    qs = factories.question_set("g", owner=owner)
    client.force_login(factories.user())
    assert client.get(reverse("set-list")).status_code == 200
    assert client.get(qs.get_absolute_url()).status_code == 200
    for name, args in (
        ("set-create", []),
        ("version-new-draft", ["g", 1]),
        ("version-submit", ["g", 1]),
        ("version-discard", ["g", 1]),
        ("state-create", ["g"]),
    ):
        assert client.post(reverse(name, args=args), {}).status_code == 403, name
    assert factories.draft(qs).status == "draft"
