"""Who may do what, on every view and API endpoint: anonymous, viewer, author, reviewer, staff."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from questions import services
from questions.models import Version
from tests import factories

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "viewer", "author", "reviewer", "staff")
A, V, AU, R, S = ROLES

# (name, method, path template, roles allowed). Everyone signed in reads; authors write;
# reviewers review, label and manage tokens; both ask live backends and comment; staff manage
# tokens; the API takes tokens only.
SIGNED_IN = {V, AU, R, S}
MATRIX = [
    ("sets", "get", "/", SIGNED_IN),
    ("check page", "get", "/check/", SIGNED_IN),
    ("check", "post", "/check/", SIGNED_IN),
    ("new set page", "get", "/sets/new/", {AU}),
    ("new set", "post", "/sets/new/", {AU}),
    ("set page", "get", "/sets/s/", SIGNED_IN),
    ("history", "get", "/sets/s/history/", SIGNED_IN),
    ("diff", "get", "/sets/s/diff/", SIGNED_IN),
    ("editor", "get", "/sets/s/v3/", SIGNED_IN),
    ("save", "post", "/sets/s/v3/save/", {AU}),
    ("validate", "post", "/sets/s/v3/validate/", SIGNED_IN),
    ("card", "get", "/sets/s/v3/card/", {AU}),
    ("json view", "get", "/sets/s/v3/json/", SIGNED_IN),
    ("json replace", "post", "/sets/s/v3/json/", {AU}),
    ("preview", "post", "/sets/s/v3/preview/", SIGNED_IN),  # recordings are a read
    ("live preview", "post", "/sets/s/v3/preview/", {AU, R}),
    ("submit", "post", "/sets/s/v3/submit/", {AU}),
    ("discard", "post", "/sets/s/v3/discard/", {AU}),
    ("new draft", "post", "/sets/s/v1/new-draft/", {AU}),
    ("review page", "get", "/sets/s/v2/review/", SIGNED_IN),
    ("approve", "post", "/sets/s/v2/review/", {R}),
    ("request changes", "post", "/sets/s/v2/review/", {R}),
    ("comment", "post", "/sets/s/v2/review/", {AU, R}),
    ("move label", "post", "/sets/s/labels/", {R}),
    ("download export", "get", "/sets/s/v1/export.json", SIGNED_IN),
    ("review queue", "get", "/reviews/", SIGNED_IN),
    ("tokens", "get", "/tokens/", {R, S}),
    ("create token", "post", "/tokens/", {R, S}),
    ("new state page", "get", "/sets/s/states/new/", {AU}),
    ("new state", "post", "/sets/s/states/new/", {AU}),
    ("state page", "get", "/sets/s/states/{state}/", SIGNED_IN),
    ("save state", "post", "/sets/s/states/{state}/", {AU}),
    ("state check", "post", "/sets/s/states/check/", SIGNED_IN),
    ("duplicate state", "post", "/sets/s/states/{state}/duplicate/", {AU}),
    ("delete state", "post", "/sets/s/states/{state}/delete/", {AU}),
    ("state history", "get", "/sets/s/states/{state}/history/", SIGNED_IN),
    ("start run", "post", "/sets/s/v1/runs/", {AU, R}),
    ("run page", "get", "/runs/{run}/", SIGNED_IN),
    ("cancel run", "post", "/runs/{run}/cancel/", {AU, R}),
    ("compare", "get", "/sets/s/compare/", SIGNED_IN),
    ("schema", "get", "/schemas/question-set-1.json", set(ROLES)),
    ("api export", "get", "/api/sets/s/export.json?label=production", set()),
]

POST_DATA = {
    "approve": {"action": "approve"},
    "request changes": {"action": "request_changes", "note": "more words"},
    "comment": {"action": "comment", "note": "seen"},
    "move label": {"name": "staging", "version": "1"},
    "new set": {"name": "Other", "slug": "other"},
    "create token": {"name": "runtime"},
    "new state": {"name": "n2", "state": "1", "base_revision": "0"},
    "save state": {"name": "n", "state": "2", "base_revision": "1"},
    "preview": {"preview_backend": "recorded", "preview_state": "", "preview_state_json": "1"},
    "live preview": {"preview_backend": "typesafe", "preview_state": "", "preview_state_json": "1"},
    "check": {"document": "{}"},
    "start run": {"backend": "recorded"},
    "state check": {"state": "1"},
}


@pytest.fixture
def world():
    """A set with v1 approved under `production`, v2 in review and v3 an open draft."""
    writer = factories.author("writer")
    checker = factories.reviewer("checker")
    qs = factories.question_set("s", owner=writer)
    v1 = services.version_submit(version=factories.draft(qs), author=writer)
    services.version_approve(version=v1, reviewer=checker, label="production")
    v2 = services.version_draft_from(version=v1, author=writer)
    services.version_save(
        version=v2, document=factories.document(2), base_revision=1, author=writer
    )
    services.version_submit(version=v2, author=writer)
    services.version_draft_from(version=v2, author=writer)
    state = services.sample_state_create(question_set=qs, name="n", state=1, author=writer)
    run = services.batch_create(version=v1, backend="recorded", user=writer, enqueue=False)
    return {"state": state.pk, "run": run.pk}


def client_for(role: str) -> Client:
    client = Client()
    if role == A:
        return client
    user = {
        V: lambda: factories.user(f"{role}-user"),
        AU: lambda: factories.author(f"{role}-user"),
        R: lambda: factories.reviewer(f"{role}-user"),
        S: lambda: get_user_model().objects.create_user(f"{role}-user", is_staff=True),
    }[role]()
    client.force_login(user)
    return client


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
    doc = '{"x": {"type": "noul"}}'
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
