"""The export API's cost: a read does not write on every request (the token's last use is noted
at most once a minute), the body is made once per version (no document read after that), and
a client that accepts gzip gets it gzipped with the same ETag meaning."""

import gzip
import hashlib
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from questions import roles, services
from questions.models import APIToken
from tests.helpers import make_world

pytestmark = pytest.mark.django_db


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
