"""Who may do what, on every route of the URL configuration: anonymous, and a viewer, author,
reviewer and admin of the team that owns the world's sets. An allowed cell gets the status its
success answers; a refused one is sent to sign in (anonymous) or answered 403 (the API: 401, a
session is not a token). And a second team: its members, whatever their role there, get 404 on
every route that names the first team's set, run, state, webhook or team (the API: with their
own team's token), and no page of theirs shows anything of the first team."""

from __future__ import annotations

from collections import defaultdict

import pytest
from django.contrib.messages import WARNING, get_messages
from django.db import transaction
from django.test import Client, override_settings
from django.urls import resolve

from questions.dev import standin
from questions.models import Version
from tests.helpers import (
    AU,
    MATRIX,
    OUTSIDERS,
    POST_DATA,
    ROLES,
    A,
    R,
    body,
    make_matrix_world,
    make_other_team,
    route_of,
    routes,
)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.one_database,
    pytest.mark.xdist_group("permissions"),
]


@pytest.fixture(scope="module")
def matrix_world(django_db_setup, django_db_blocker):
    """The world and a user per role, built once for the module in a transaction rolled back
    after it; each cell runs in a savepoint of its own (pytest-django's django_db), so what one
    cell changes, the next never sees."""
    server = standin.serve_in_thread()  # the live backend the runners ask (on loopback)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    live = override_settings(
        TYPESAFE_API_KEY=standin.KEY,
        TYPESAFE_BASE_URL=base,
        LLM_API_KEY=standin.KEY,  # what suggestions draft through
        LLM_BASE_URL=f"{base}/v1",
    )
    with live, django_db_blocker.unblock(), transaction.atomic():
        users: dict = {}
        world = make_matrix_world(users)
        other = make_other_team()
        yield world, users, other
        transaction.set_rollback(True)
    server.shutdown()
    server.server_close()


def signed_in(users, role: str) -> Client:
    client = Client()
    if role != A:
        client.force_login(users[role])
    return client


def test_every_route_has_a_row_in_the_matrix():
    """A route added to the URL configuration without a row fails here (and so enters the
    permission matrix and the form fuzzer together)."""
    covered = {route_of(path) for _, _, path, _, _ in MATRIX}
    assert set(routes()) - covered == set()
    assert covered <= set(routes())


@pytest.mark.slow
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("name", "method", "path", "allowed", "done"), MATRIX, ids=[row[0] for row in MATRIX]
)
def test_permission_matrix(matrix_world, role, name, method, path, allowed, done):
    world, users, _ = matrix_world
    client = signed_in(users, role)
    url = path.format(**world)
    data = POST_DATA.get(name, {})
    for value in data.values():  # an uploaded file another role's cell has read already
        if hasattr(value, "seek"):
            value.seek(0)
    response = client.post(url, data) if method == "post" else client.get(url)
    code = response.status_code
    login_redirect = code == 302 and response.url.startswith("/accounts/login/")
    if role in allowed:
        # done: the status its success answers, and no word of a refusal beside it
        said = [m.message for m in get_messages(response.wsgi_request) if m.level >= WARNING]
        assert (code, said) == (done, []), (role, name, response.content[:300])
        if not name.startswith("sso "):  # no identity provider here: its pages are a 404
            assert b'class="message error"' not in body(response), name
        assert not login_redirect or name == "sign out", (role, name)  # signed out: sign in
    elif name.startswith("api "):
        assert code == 401, (role, code)  # a session is not a token
    elif role == A:
        assert login_redirect, (name, code)
    else:
        assert code == 403, (role, name, code)


@pytest.mark.slow
@pytest.mark.parametrize("number", [1, 2])
def test_a_version_that_is_not_a_draft_changes_through_no_path(matrix_world, number):
    _, users, _ = matrix_world
    client = signed_in(users, AU)
    version = Version.objects.get(question_set__slug="s", number=number)
    before = (version.document_text, version.revision, version.status)
    doc = '{"x": {"type": "noul", "instructions": "Is it so?"}}'
    client.post(f"/sets/s/v{number}/json/", {"document": doc, "base_revision": version.revision})
    client.post(
        f"/sets/s/v{number}/save/",
        {"q": ["k"], "q-k-id": "x", "q-k-type": "noul", "base_revision": version.revision},
    )
    client.post(f"/sets/s/v{number}/submit/")
    client.post(f"/sets/s/v{number}/keep/")
    client.post(f"/sets/s/v{number}/discard/")
    reviewer = signed_in(users, R)
    reviewer.post(f"/sets/s/v{number}/review/", {"action": "request_changes", "note": "x"})
    version.refresh_from_db()
    after = (version.document_text, version.revision)
    assert after == before[:2]
    if number == 1:
        assert version.status == "approved"


def _names_an_object(path: str) -> bool:
    """Whether a matrix path names a set, version, run, state, webhook or team (its route has
    arguments): all of them the first team's."""
    return bool(resolve(path.split("?")[0].format_map(defaultdict(lambda: 1))).kwargs)


def _first_teams_marks(world) -> list[bytes]:
    """What of the first team a page could show: its sets' and team's addresses, its runs'
    addresses, its token's and team's names."""
    runs = [f"/runs/{world[k]}/".encode() for k in ("run", "finished", "attribution")]
    return [
        b"/sets/s/",
        b"/sets/done/",
        b"/teams/default/",
        b"Default team",
        b"default-runtime",
        *runs,
    ]


def _probe(client: Client, method: str, url: str, data: dict, headers: dict):
    with transaction.atomic():  # what a probe changes (its own team's new set), no other sees
        for value in data.values():
            if hasattr(value, "seek"):
                value.seek(0)
        response = (
            client.post(url, data, **headers) if method == "post" else client.get(url, **headers)
        )
        transaction.set_rollback(True)
    return response


@pytest.mark.slow
def test_a_member_of_another_team_learns_nothing_of_this_one(matrix_world, capsys):
    world, _, other = matrix_world
    marks = _first_teams_marks(world)
    probes, leaks = 0, []
    for name, method, path, _, _ in MATRIX:
        url, named = path.format(**world), _names_an_object(path)
        for role in OUTSIDERS:
            client = Client()
            client.force_login(other["members"][role])
            variants = [{}, {"HTTP_HX_REQUEST": "true"}] if method == "get" else [{}]
            if name.startswith("api "):  # their own team's token of the scope the route takes
                token = other["ingest"] if name == "api states" else other["read"]
                variants = [{"HTTP_AUTHORIZATION": f"Bearer {token}"}]
            for headers in variants:
                response = _probe(client, method, url, POST_DATA.get(name, {}), headers)
                probes += 1
                # a page may say the address asked for (the 404 page does): that is no leak
                seen = body(response).replace(url.split("?")[0].encode(), b"")
                code, shown = response.status_code, [m for m in marks if m in seen]
                if shown or code >= 500 or (named and code != 404) or (not named and code == 404):
                    leaks.append((name, role, bool(headers), code, shown))
    with capsys.disabled():
        print(f"\ncross-team probes: {len(leaks)} leaks of {probes} probes", *leaks, sep="\n")
    assert leaks == []
    assert probes > 4 * len(MATRIX)
