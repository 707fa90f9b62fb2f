"""Who may do what, on every view and API endpoint: anonymous, viewer, author, reviewer, staff."""

from __future__ import annotations

import pytest

from questions.models import Version
from tests.helpers import AU, MATRIX, POST_DATA, ROLES, A, R, client_for

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("name", "method", "path", "allowed"), MATRIX, ids=[row[0] for row in MATRIX]
)
def test_permission_matrix(world, role, name, method, path, allowed):
    client = client_for(role)
    url = path.format(**world)
    response = (
        getattr(client, method)(url, POST_DATA.get(name, {}))
        if method == "post"
        else client.get(url)
    )
    code = response.status_code
    login_redirect = code == 302 and response.url.startswith("/accounts/login/")
    if role in allowed:
        assert code not in (401, 403) and not login_redirect, (role, name, code)
    elif name == "api export":
        assert code == 401, (role, code)  # a session is not a token
    elif role == A:
        assert login_redirect, (name, code)
    else:
        assert code == 403, (role, name, code)


@pytest.mark.parametrize("number", [1, 2])
def test_a_version_that_is_not_a_draft_changes_through_no_path(world, number):
    client = client_for(AU)
    version = Version.objects.get(question_set__slug="s", number=number)
    before = (version.document_text, version.revision, version.status)
    doc = '{"x": {"type": "noul", "instructions": "Is it so?"}}'
    client.post(f"/sets/s/v{number}/json/", {"document": doc, "base_revision": version.revision})
    client.post(
        f"/sets/s/v{number}/save/",
        {"q": ["k"], "q-k-id": "x", "q-k-type": "noul", "base_revision": version.revision},
    )
    client.post(f"/sets/s/v{number}/submit/")
    client.post(f"/sets/s/v{number}/discard/")
    reviewer = client_for(R)
    reviewer.post(f"/sets/s/v{number}/review/", {"action": "request_changes", "note": "x"})
    version.refresh_from_db()
    after = (version.document_text, version.revision)
    assert after == before[:2]
    if number == 1:
        assert version.status == "approved"
