"""Sample state pages: create, edit with the size shown as typed, history, duplicate, delete."""

import json

import pytest
from django.urls import reverse

from questions import services
from questions.models import SampleState
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(client):
    user = factories.author("writer")
    client.force_login(user)
    doc = {
        "dept": {"type": "choice", "criteria": {"billing": "Pay", "other": "Else"}},
        "urgent": {"type": "noul", "instructions": "Is it so?"},
        "level": {"type": "score", "criteria": ["low", "high"]},
    }
    return factories.question_set("s", owner=user, doc=doc), user


def test_create_with_expected_answers_and_tags(client, setup):
    page = client.get(reverse("state-create", args=["s"])).content.decode()
    assert "expected-dept" in page and "1: high" in page
    response = client.post(
        reverse("state-create", args=["s"]),
        {
            "name": "first",
            "state": '{"text": "hi"}',
            "tags": "a, b",
            "expected-dept": "billing",
            "expected-urgent": "false",
            "expected-level": "1",
            "base_revision": "0",
        },
    )
    assert response.status_code == 302
    sample = SampleState.objects.get(name="first")
    assert sample.state == {"text": "hi"}
    assert sample.expected == {"dept": "billing", "urgent": False, "level": 1}
    assert sample.tags == ["a", "b"]


def test_null_is_a_value_and_blank_or_bad_json_saves_nothing(client, setup):
    url = reverse("state-create", args=["s"])
    assert client.post(url, {"name": "n", "state": "null", "base_revision": "0"}).status_code == 302
    assert SampleState.objects.get(name="n").state is None
    for text in ("", "{oops"):
        response = client.post(url, {"name": "x", "state": text, "base_revision": "0"})
        assert response.status_code == 422
        assert "Nothing was saved" in response.content.decode()
    assert not SampleState.objects.filter(name="x").exists()


def test_state_check_partial_shows_the_size_against_the_limit(client, setup):
    url = reverse("state-check", args=["s"])
    body = client.post(
        url, {"state": json.dumps("x" * 3890)}, headers={"HX-Request": "true"}
    ).content.decode()
    assert "3.8 KiB / 256 KiB" in body and "<html" not in body
    big = client.post(url, {"state": json.dumps("x" * 262_143)}).content.decode()
    assert "at most 262,144" in big and "over" in big
    assert "Not JSON" in client.post(url, {"state": "{"}).content.decode()


@pytest.mark.parametrize("state", ["null", "true", "42"])
def test_state_check_warns_of_a_state_the_providers_wires_refuse(client, setup, state):
    url = reverse("state-check", args=["s"])
    body = client.post(url, {"state": state}, headers={"HX-Request": "true"}).content.decode()
    assert "`typesafe` and `openrouter` wires refuse it" in body
    assert "wires refuse" not in client.post(url, {"state": '{"a": null}'}).content.decode()


def test_edit_keeps_history_and_refuses_a_stale_revision(client, setup):
    qs, user = setup
    sample = services.sample_state_create(question_set=qs, name="s1", state=1, author=user)
    url = reverse("state-edit", args=["s", sample.pk])
    assert client.post(url, {"name": "s1", "state": "2", "base_revision": "1"}).status_code == 302
    stale = client.post(url, {"name": "s1", "state": "3", "base_revision": "1"})
    assert stale.status_code == 409
    assert "saved elsewhere" in stale.content.decode() and ">\n3</textarea>" in (
        stale.content.decode()
    )
    history = client.get(reverse("state-history", args=["s", sample.pk])).content.decode()
    assert "Revision 2" in history and "Revision 1" in history


def test_duplicate_and_delete(client, setup):
    qs, user = setup
    sample = services.sample_state_create(question_set=qs, name="s1", state=[1], author=user)
    client.post(reverse("state-duplicate", args=["s", sample.pk]))
    assert qs.sample_states.filter(name="s1 (copy)").exists()
    client.post(reverse("state-delete", args=["s", sample.pk]))
    assert list(qs.sample_states.values_list("name", flat=True)) == ["s1 (copy)"]


def test_a_level_in_digits_that_are_not_ascii_is_refused_naming_it_never_a_500(client, setup):
    response = client.post(
        reverse("state-create", args=["s"]),
        {"name": "odd", "state": "{}", "expected-level": "²", "base_revision": "0"},
    )
    assert response.status_code == 422
    assert "The expected answer for `level` is a level number" in response.content.decode()
    assert not SampleState.objects.filter(name="odd").exists()
