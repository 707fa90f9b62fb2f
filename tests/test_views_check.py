"""Sign-in, and the document check page (full page and htmx partial)."""

import json

import pytest
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.fixture
def author(django_user_model):
    return django_user_model.objects.create_user("author", password="pw-for-tests")


@pytest.fixture
def signed_in(client, author):
    client.force_login(author)
    return client


@pytest.mark.parametrize("name", ["set-list", "document-check", "set-create"])
def test_pages_need_sign_in(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response.url == f"{reverse('login')}?next={reverse(name)}"


def test_sign_in_page_and_signing_in(client, author):
    page = client.get(reverse("login"))
    assert page.status_code == 200
    assert b"Sign in" in page.content
    response = client.post(reverse("login"), {"username": "author", "password": "pw-for-tests"})
    assert response.status_code == 302
    assert client.get(reverse("set-list")).status_code == 200


def test_a_wrong_password_says_so(client, author):
    response = client.post(reverse("login"), {"username": "author", "password": "nope"})
    assert response.status_code == 200
    assert b"did not match" in response.content


def test_check_page_shows_the_limits_in_force_and_loads_htmx_locally(signed_in):
    response = signed_in.get(reverse("document-check"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "1 – 32" in body and "2 – 255" in body and "2 – 10" in body
    assert "262144 bytes" in body
    assert "/static/django_htmx/htmx" in body
    assert "https://" not in body  # nothing loads from a CDN


def test_validate_full_page(signed_in):
    doc = {"q": {"type": "choice", "criteria": {"a": "first"}}}
    response = signed_in.post(reverse("document-check"), {"document": json.dumps(doc)})
    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" in body
    assert "choice <code>q</code> has 1 option; at least 2 options" in body
    assert "too_few_options" in body


def test_validate_htmx_partial(signed_in):
    doc = {"q": {"type": "noul", "instructions": "Is it late?"}}
    response = signed_in.post(
        reverse("document-check"), {"document": json.dumps(doc)}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" not in body
    assert body.strip().startswith('<div id="validation-result"')
    assert "Valid" in body and "bare document" in body


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "Paste a question set document"), ("{", "This is not JSON"), ("[1]", "JSON object")],
)
def test_validate_bad_input_says_what_is_wrong(signed_in, text, message):
    response = signed_in.post(
        reverse("document-check"), {"document": text}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert message in response.content.decode()


def test_pasted_text_is_escaped(signed_in):
    doc = {"<script>alert(1)</script>": {"type": "noul"}, "b": "x"}
    response = signed_in.post(reverse("document-check"), {"document": json.dumps(doc)})
    body = response.content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;" in body


def test_check_needs_sign_in():
    assert Client().post(reverse("document-check"), {"document": "{}"}).status_code == 302


def test_csrf_is_enforced(author):
    client = Client(enforce_csrf_checks=True)
    client.force_login(author)
    response = client.post(reverse("document-check"), {"document": "{}"})
    assert response.status_code == 403
