"""Property: whatever junk reaches a form or a query string — random text with NUL and lone
surrogates, numbers that overflow, JSON nested 100,000 deep, the real forms' field names with
wrong values, non-ASCII digits — every endpoint answers every role with a 4xx at worst, never a
500. Each example runs in a transaction that is rolled back, so what one example changes does
not change the next."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from questions import roles, services
from tests import factories
from tests.helpers import MATRIX, POST_DATA, ROLES, A, make_matrix_world, route_of, routes
from tests.strategies import FIELD_NAMES, fields_for, form_fields, junk, urlencode

pytestmark = [pytest.mark.django_db, pytest.mark.one_database]

EXAMPLES = 20

EDITOR = {
    "q": ["k"],
    "card": ["k"],
    "q-k-id": ["x"],
    "q-k-type": ["choice"],
    "q-k-instructions_mode": ["json"],
    "q-k-instructions": ["{}"],
    "q-k-r": ["r1"],
    "q-k-r-r1-name": ["a"],
    "base_revision": ["1"],
}
EDITOR_PATHS = ("/save/", "/validate/", "/card/", "/preview/")

CARD_FIELDS = tuple(f for f in FIELD_NAMES if f.startswith("q-k") or f in ("q", "card", "op"))
#: The fields each POST endpoint reads.
READS = {
    "check": ("document",),
    "new set": ("slug", "name", "description"),
    "save": (*CARD_FIELDS, "base_revision", "overwrite_revision"),
    "validate": CARD_FIELDS,
    "card operation": CARD_FIELDS,
    "json replace": ("document", "base_revision", "action"),
    "preview": ("preview_backend", "preview_state", "preview_state_json", "preview_model"),
    "live preview": ("preview_backend", "preview_state", "preview_state_json", "preview_model"),
    "approve": ("action", "note", "label"),
    "request changes": ("action", "note"),
    "comment": ("action", "note"),
    "move label": ("name", "version", "note"),
    "create token": ("name", "revoke", "team", "expires", "scope", "sets"),
    "member save": ("username", "role", "remove"),
    "new state": ("state", "name", "tags", "expected-q0", "expected-q1"),
    "save state": ("state", "name", "tags", "base_revision", "expected-q0", "expected-q1"),
    "state check": ("state",),
    "start run": ("backend", "concurrency", "threshold", "tag"),
    "add webhook": ("url", "description"),
    "save advice": ("advice-0", "advice-1", "advice-2"),
    "settle dispute": ("question", "answer", "ambiguous"),
    "save label": ("version", "question", "answer", "skipped"),
    "undo label": ("version", "skipped"),
    "suggest plan": ("question", "backend", "candidates", "max_calls", "into"),
    "suggest": ("question", "backend", "candidates", "max_calls", "into"),
    "cancel suggestion": ("into",),
    "use suggestion": ("candidate",),
}
#: The query parameters each GET route reads (the others get junk fields all the same).
PARAMS = {
    "sign-in page": ("next",),
    "sets": ("q",),
    "compare": ("col", "state", "filter", "threshold", "format", "start"),
    "diff": ("a", "b"),
    "editor": ("state",),
    "card": ("type", "q", "q-k-id"),
    "open card": ("card", "id"),
    "review page": ("question", "full"),
    "run page": ("against", "items_from", "show", "q", "question"),
    "advice page": ("run",),
    "label page": ("version", "state", "question", "skipped"),
    "tokens": ("set", "team"),
    "audit page": ("user", "action", "set", "since", "until", "from"),
    "audit csv": ("user", "action", "set", "since", "until"),
    "audit jsonl": ("user", "action", "set", "since", "until"),
    "api export": ("version", "label"),
    "suggest form": ("question", "into"),
    "suggestion page": ("into",),
}

# Both lists come from the matrix, which has a row for every route of the URL configuration
# (tests/test_permissions.py), so a new route is fuzzed as soon as it has its row.
POSTS = [(name, path) for name, method, path, *_ in MATRIX if method == "post"]
POSTS.append(("card operation", "/sets/s/v3/card/"))
GETS = [
    (name, path.split("?")[0], PARAMS.get(name, ()))
    for name, method, path, *_ in MATRIX
    if method == "get"
]


def test_every_route_is_fuzzed():
    fuzzed = {route_of(path) for _, path in POSTS} | {route_of(path) for _, path, _ in GETS}
    assert set(routes()) - fuzzed == set()
    assert set(PARAMS) <= {name for name, _, _ in GETS}


@pytest.fixture
def fuzz_world(settings):
    """The matrix's world, a signed-in client per role that never raises, and an API token; no
    live backend is configured, so nothing leaves the machine."""
    settings.TYPESAFE_API_KEY = ""
    settings.RUNTIME_URL = ""
    settings.RUNTIME_TOKEN = ""
    settings.OPENROUTER_API_KEY = ""
    users: dict = {}
    world = make_matrix_world(users, live=False)
    clients = {}
    for role in ROLES:
        client = Client(raise_request_exception=False)
        if role != A:
            client.force_login(users[role])
        clients[role] = client
    _, raw = services.api_token_create(name="fuzz", user=factories.reviewer("fuzz-tokens"))
    _, ingest = services.api_token_create(
        name="fuzz ingest", user=roles.OPERATOR, scope="ingest", sets=["s"]
    )
    return {**world, "clients": clients, "token": raw, "ingest_token": ingest}


def _body(name: str, path: str, extra: dict[str, list[str]]) -> dict[str, list[str]]:
    fields = {
        k: [v] if isinstance(v, str) else list(v)
        for k, v in POST_DATA.get(name, {}).items()
        if not hasattr(v, "read")  # a file goes in a multipart body, never a fuzzed form's
    }
    if path.endswith(EDITOR_PATHS):
        fields = {**EDITOR, **fields}
    return {**fields, **extra}


def _send(client: Client, method: str, url: str, body: bytes = b"", **headers):
    with transaction.atomic():
        if method == "post":
            response = client.post(
                url, body, content_type="application/x-www-form-urlencoded", **headers
            )
        else:
            response = client.get(url, **headers)
        transaction.set_rollback(True)
    return response


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "path"), POSTS, ids=[n for n, _ in POSTS])
@FUZZ
@given(role=st.sampled_from(ROLES), htmx=st.booleans(), data=st.data())
def test_no_form_post_gives_a_server_error(fuzz_world, name, path, role, htmx, data):
    extra = data.draw(fields_for(READS.get(name, ())))
    url = path.format(**fuzz_world)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    if name == "api states":  # with its token: a form is no body it takes (415), never a 500
        headers["HTTP_AUTHORIZATION"] = f"Bearer {fuzz_world['ingest_token']}"
    body = urlencode(_body(name, url, extra))
    response = _send(fuzz_world["clients"][role], "post", url, body, **headers)
    assert response.status_code < 500, (role, url, body[:300])


@pytest.mark.slow
@pytest.mark.parametrize(("name", "path", "params"), GETS, ids=[n for n, _, _ in GETS])
@FUZZ
@given(role=st.sampled_from(ROLES), data=st.data())
def test_no_query_gives_a_server_error(fuzz_world, name, path, params, role, data):
    extra = data.draw(form_fields)
    chosen = (
        data.draw(st.lists(st.sampled_from(params), max_size=len(params), unique=True))
        if params
        else []
    )
    query = {p: [data.draw(junk)] for p in chosen}
    url = path.format(**fuzz_world) + "?" + urlencode({**extra, **query}).decode()
    headers = {}
    if name == "api export":
        headers["HTTP_AUTHORIZATION"] = f"Bearer {fuzz_world['token']}"
    response = _send(fuzz_world["clients"][role], "get", url, **headers)
    assert response.status_code < 500, (role, url[:300])
