"""What several test modules share: the roles, every endpoint with the roles it allows, the
form data that gets past each endpoint's own checks, a world to run them in, and a signed-in
client per role."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.test import Client

from questions import services
from tests import factories

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
    ("run records", "get", "/runs/{run}/records.jevl", SIGNED_IN),
    ("import records", "post", "/sets/s/records/", {AU}),
    ("cancel run", "post", "/runs/{run}/cancel/", {AU, R}),
    ("rerun failed", "post", "/runs/{run}/rerun-failed/", {AU, R}),
    ("controls page", "get", "/sets/s/controls/", SIGNED_IN),
    ("start control", "post", "/sets/s/controls/start/", {AU, R}),
    ("start drift", "post", "/sets/s/drift/start/", {AU, R}),
    ("compare", "get", "/sets/s/compare/", SIGNED_IN),
    ("advice page", "get", "/sets/s/v3/advice/", SIGNED_IN),
    ("save advice", "post", "/sets/s/v3/advice/", {AU}),
    ("webhooks", "get", "/sets/s/webhooks/", {R}),
    ("add webhook", "post", "/sets/s/webhooks/", {R}),
    ("test webhook", "post", "/sets/s/webhooks/{hook}/test/", {R}),
    ("delete webhook", "post", "/sets/s/webhooks/{hook}/delete/", {R}),
    ("schema", "get", "/schemas/question-set-1.json", set(ROLES)),
    ("api export", "get", "/api/sets/s/export.json?label=production", set()),
]

POST_DATA = {
    "approve": {"action": "approve", "confirm_weak": "yes"},
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
    "start control": {"version": "1", "kind": "shuffle", "count": "2", "backend": "typesafe"},
    "start drift": {"label": "production", "model": "m-new"},
    "save advice": {"advice-0": "0.5"},
    "add webhook": {"url": "https://runtime.example/hooks", "description": "runtime"},
    "state check": {"state": "1"},
}


def make_world() -> dict[str, int]:
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
    state = services.sample_state_create(question_set=qs, name="n", state={"n": 1}, author=writer)
    run = services.batch_create(version=v1, backend="recorded", user=writer, enqueue=False)
    hook, _ = services.webhook_create(
        question_set=qs, url="http://127.0.0.1:9/hooks", user=checker
    )  # nothing is sent: no worker runs in these tests
    return {"state": state.pk, "run": run.pk, "hook": hook.pk}


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


def token_form(client: Client) -> dict[str, str]:
    """What the tokens page's create form carries besides the name: its one-time value (the
    page hands one out each time it is shown; a form sent twice makes no second token)."""
    client.get("/tokens/")
    return {"once": client.session["token_form"]}
