"""The admin: non-draft versions are read-only; a draft saves through the service."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from questions import services
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    user = get_user_model().objects.create_superuser("admin", password="pw")
    client.force_login(user)
    return user


def test_a_version_that_is_not_a_draft_is_read_only_in_the_admin(client, staff):
    qs = factories.question_set(owner=staff)
    version = services.version_submit(version=factories.draft(qs), author=staff)
    url = reverse("admin:questions_version_change", args=[version.pk])
    page = client.get(url)
    assert page.status_code == 200
    assert b'name="document_text"' not in page.content
    response = client.post(
        url, {"document_text": '{"x": {"type": "noul", "instructions": "Is it so?"}}'}
    )
    assert response.status_code == 403
    version.refresh_from_db()
    assert "x" not in version.document
    delete = client.post(
        reverse("admin:questions_version_delete", args=[version.pk]), {"post": "yes"}
    )
    assert delete.status_code == 403


def test_a_draft_saved_in_the_admin_goes_through_the_service(client, staff):
    qs = factories.question_set(owner=staff)
    version = factories.draft(qs)
    url = reverse("admin:questions_version_change", args=[version.pk])
    response = client.post(
        url,
        {
            "document_text": '{"x": {"type": "noul", "instructions": "Is it so?"}}',
            "base_revision": 1,
        },
    )
    assert response.status_code == 302
    version.refresh_from_db()
    assert (version.document, version.revision) == (
        {"x": {"type": "noul", "instructions": "Is it so?"}},
        2,
    )
    assert [e.kind for e in version.events.all()] == ["created", "edited"]
    bad = client.post(url, {"document_text": "[1]", "base_revision": 2})
    assert bad.status_code == 200 and b"A document is a JSON object" in bad.content


def test_an_admin_save_over_a_newer_revision_is_refused_and_keeps_the_text(client, staff):
    qs = factories.question_set(owner=staff)
    version = factories.draft(qs)
    url = reverse("admin:questions_version_change", args=[version.pk])
    opened = client.get(url).content.decode()
    assert 'name="base_revision" value="1"' in opened
    services.version_save(  # the editor saves while the admin form is open
        version=version,
        document={"editor": {"type": "noul", "instructions": "Is it so?"}},
        base_revision=1,
        author=staff,
    )
    response = client.post(
        url,
        {
            "document_text": '{"admin": {"type": "noul", "instructions": "Is it so?"}}',
            "base_revision": 1,
        },
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "saved elsewhere" in page and "admin" in page
    version.refresh_from_db()
    assert (version.document, version.revision) == (
        {"editor": {"type": "noul", "instructions": "Is it so?"}},
        2,
    )


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("name", "live\u202eevil", "U+202E"),
        ("slug", "Upper-Case", "lower-case letters"),
        ("description", "x" * 4001, "at most"),
    ],
)
def test_the_admin_holds_a_set_to_the_services_rules(client, staff, field, value, words):
    from questions.models import QuestionSet

    fields = {"slug": "fine", "name": "Fine", "description": "", "owner": staff.pk}
    fields[field] = value
    fields |= {f"versions-{k}": v for k, v in (("TOTAL_FORMS", 0), ("INITIAL_FORMS", 0))}
    page = client.post(reverse("admin:questions_questionset_add"), fields)
    assert page.status_code == 200 and words in page.content.decode()
    assert not QuestionSet.objects.exists()
    fields[field] = {"name": "Fine", "slug": "fine", "description": ""}[field]
    done = client.post(reverse("admin:questions_questionset_add"), fields)
    assert done.status_code == 302 and QuestionSet.objects.get().slug == "fine"
